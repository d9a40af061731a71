"""The mechanism registry and contract: built-ins, "package.module:Class", entry points,
names on the wire, and one sentence per kind of bad plugin (scenario load, audit, CLI)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ldpfleet.collector.analytics import mean_estimates
from ldpfleet.collector.audit.battery import build_spec, run_audit
from ldpfleet.protocol import codec, mechanisms
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.mechanism_contract import StreamMechanism
from ldpfleet.protocol.mechanisms import (
    ENTRY_POINT_GROUP,
    STREAM_MECHANISMS,
    check_mechanism_name,
    stream_mechanism,
)
from ldpfleet.protocol.messages import SwReport
from ldpfleet.protocol.stream import StreamConfig, StreamReporter
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PLUGIN = "clipped_laplace:ClippedLaplace"
BAD = "tests.unit.bad_mechanisms"

SCENARIO = """
[scenario]
name = "plugin"
seed = 1
[fleet]
devices = 4
[stream]
steps = 20
eps = 2.0
w = 5
mechanism = "{mechanism}"
[source]
kind = "synthetic"
shape = "sine"
period = 10
bounds = [0.0, 10.0]
"""


@pytest.fixture
def examples_path(monkeypatch):
    monkeypatch.syspath_prepend(str(EXAMPLES))


@pytest.mark.parametrize("name", STREAM_MECHANISMS)
def test_every_builtin_satisfies_the_contract(name):
    mech = stream_mechanism(name, 0.0 if name == "raw" else 0.5)
    assert isinstance(mech, StreamMechanism)
    x = np.linspace(0, 1, 101)
    y = mech.perturb(x, np.random.default_rng(0))
    assert y.shape == x.shape and np.all(mech.in_domain(y))
    assert np.isfinite(mech.estimate_mean(y))


def test_estimate_mean_of_the_builtins_is_the_mean_of_point_estimates():
    # one code path: results' mean estimates are estimate_mean, equal to what they were
    config = StreamConfig(
        run="r", mechanism="sw", eps=1.0, w=2, steps=10, batch_steps=5, lo=0.0, hi=10.0
    )
    y = config.mechanism_object().perturb(np.full(10, 0.3), np.random.default_rng(0))
    sw = config.mechanism_object()
    assert mean_estimates(config, {"d": y})["d"] == pytest.approx(10 * np.mean(sw.estimate(y)))


def test_an_import_path_builds_the_user_class(examples_path):
    mech = stream_mechanism(PLUGIN, 0.4)
    assert type(mech).__name__ == "ClippedLaplace" and mech.eps == 0.4


def test_an_entry_point_name_resolves(monkeypatch, examples_path):
    from importlib.metadata import EntryPoint, EntryPoints

    fake = EntryPoints([EntryPoint("mine", PLUGIN, ENTRY_POINT_GROUP)])
    monkeypatch.setattr(
        mechanisms, "entry_points", lambda group: fake if group == ENTRY_POINT_GROUP else None
    )
    mechanisms._plugin_class.cache_clear()
    try:
        assert type(stream_mechanism("mine", 1.0)).__name__ == "ClippedLaplace"
        with pytest.raises(ParameterError, match=r"entry-point group 'ldpfleet\.mechanisms'"):
            stream_mechanism("other", 1.0)
    finally:
        mechanisms._plugin_class.cache_clear()


def test_an_installed_distribution_registers_a_name_through_its_entry_point(tmp_path):
    """A real entry point, found by importlib.metadata: an installed distribution (its
    .dist-info folder on sys.path) registers "clipped" in ``ldpfleet.mechanisms``; a fresh
    interpreter lists it, builds it by name and runs a scenario that names it."""
    info = tmp_path / "ldpfleet_clipped-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ldpfleet-clipped\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        f"[ldpfleet.mechanisms]\nclipped = {PLUGIN}\nbroken = clipped_laplace:Nope\n"
    )
    code = f"""
import ldpfleet
assert "clipped" in ldpfleet.mechanism_names(), ldpfleet.mechanism_names()
try:  # a broken entry point is named with its distribution and target
    ldpfleet.get_mechanism("broken", 1.0)
except Exception as error:
    assert ("entry point 'broken' of group 'ldpfleet.mechanisms' (distribution "
        "'ldpfleet-clipped') points to 'clipped_laplace:Nope': module 'clipped_laplace' has "
        "no attribute 'Nope'") in str(error), str(error)
else:
    raise AssertionError("the broken entry point was built")
assert type(ldpfleet.get_mechanism("clipped", 1.0)).__name__ == "ClippedLaplace"
text = {SCENARIO.format(mechanism="clipped")!r}
results = ldpfleet.run(ldpfleet.parse_scenario(text), broker="memory", out_dir="out")
assert results["reports_lost"] == 0 and results["devices_complete"] == 4, results
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(EXAMPLES)])}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


@pytest.mark.parametrize("name", ["", "a b", "a:b:c", "x" * 121, "1abc", "a/b", "a:b\n"])
def test_malformed_names_are_refused(name):
    with pytest.raises(ParameterError) as info:
        check_mechanism_name(name)
    assert info.value.field == "mechanism"


@pytest.mark.parametrize("name", ["mine/lit.py:Rr", "/home/u/mine/lit.py:Rr", "lit.py:Rr"])
def test_a_file_path_is_refused_with_the_name_to_use(name):
    """A user tried "path/lit.py:Cls" (the docs name modules): the sentence listed the
    name's allowed characters; it now says what to write instead."""
    with pytest.raises(ParameterError) as info:
        check_mechanism_name(name)
    assert "a file path is not a mechanism name" in str(info.value)
    assert "on PYTHONPATH and name it 'module:Class' (here 'lit:Rr')" in str(info.value)


def test_the_wire_carries_a_plugin_name_and_refuses_malformed_ones():
    report = SwReport(run="r", sender="d", t0=0, mechanism=PLUGIN, eps0=0.4, w=5, values=[0.5])
    assert codec.decode(codec.encode(report)).mechanism == PLUGIN
    for bad, code in (("a b", "schema"), ("m" * 121, "out_of_range")):
        payload = codec.encode(report).replace(PLUGIN.encode(), bad.encode())
        with pytest.raises(RemoteProtocolError) as info:
            codec.decode(payload)
        assert (info.value.field, info.value.code) == ("mechanism", code)
        assert "mechanism name" in info.value.reason or "length" in info.value.reason


BAD_PLUGINS = [
    ("no_such_module_xyz:Mech", "module 'no_such_module_xyz' not found"),
    (f"{BAD}:Nope", "has no attribute 'Nope'"),
    (f"{BAD}:not_a_class", "is not a class"),
    (f"{BAD}:MissingMethod", "has no method estimate_mean"),
    (
        f"{BAD}:RefusesSmallEps",
        "refused eps = 0.4: eps must be at least 1, got 0.4 (the budget of one report, "
        "stream.eps / stream.w = 2 / 5)",
    ),
    (f"{BAD}:WrongShape", "perturb returned shape (255,) for inputs of shape (256,)"),
    (f"{BAD}:NonFinite", "perturb returned non-finite"),
    (f"{BAD}:RejectsOwnOutputs", "in_domain rejects its own output"),
    (f"{BAD}:ExitsInPerturb", "perturb failed on inputs in [0, 1]: it called sys.exit(0)"),
    (f"{BAD}:GlobalRandom", "perturb is not a function of its inputs and rng"),
    (f"{BAD}:OwnGenerator", "generators seeded alike gave different reports (report 0: "),
    (f"{BAD}:ReturnsList", "perturb returned a list, not a numpy.ndarray"),
    (f"{BAD}:InDomainInts", "in_domain returned dtype int64, not a numpy bool array"),
    (f"{BAD}:InDomainFloats", "in_domain returned dtype float64, not a numpy bool array"),
    (f"{BAD}:InDomainList", "in_domain returned a list, not a numpy bool array"),
    (
        f"{BAD}:NeedsTwoArgs",
        "cannot be built as Cls(eps), the mechanism contract's constructor: "
        "missing a required argument: 'levels'",
    ),
    (f"{BAD}:ReturnsComplex", "perturb returned reports of dtype complex128, not real numbers"),
    (f"{BAD}:MeanString", "estimate_mean returned '0."),
    (f"{BAD}:MeanOneElementArray", "(a numpy.ndarray of shape (1,)), not a real number"),
    (f"{BAD}:MeanOneElementList", "(a list), not a real number"),
    (f"{BAD}:MeanBool", "(a bool), not a real number"),
    (f"{BAD}:StatesDoubleEps", "states eps = 0.8 but was built with eps = 0.4 (relative"),
    (f"{BAD}:StatesEpsText", "states eps = '0.4' (a str), not a real number"),
    (f"{BAD}:ReturnsInt64Scalar", "perturb returned an int64, not a numpy.ndarray"),
    (
        f"{BAD}:OutsideStatedRange",
        "perturb returned reports outside its stated range [output_low, output_high] = "
        "[0, 1] (report ",
    ),
    (
        f"{BAD}:StatesRangeReversed",
        "states output_low = 1.0 and output_high = 0.0: the report range must be two finite "
        "real numbers with output_low <= output_high",
    ),
    (f"{BAD}:StatesRangeText", "states output_low = 0.0 and output_high = '1': the report"),
    (
        f"{BAD}:AddsInPlace",
        "perturb changed its input array in place (input 0 was 0.0, is now ",
    ),
    (
        f"{BAD}:ReturnsMasked",
        "perturb returned a MaskedArray, not a numpy.ndarray (the wire cannot carry a mask:",
    ),
    ("nonesuch", "no installed package registers it"),
]


@pytest.mark.parametrize(("name", "message"), BAD_PLUGINS)
def test_a_bad_plugin_gives_one_sentence_naming_stream_mechanism(name, message):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(SCENARIO.format(mechanism=name))
    text = str(info.value)
    assert text.startswith("stream.mechanism: ") and message in text, text
    assert "\n" not in text and "Traceback" not in text


def test_a_plugin_scenario_loads_and_reconstructions_that_need_sw_refuse_it(examples_path):
    loaded = parse_scenario(SCENARIO.format(mechanism=PLUGIN))
    assert loaded.stream_config("r").mechanism_object().eps == pytest.approx(0.4)
    for method in ("cpr", "sw", "laplace"):
        text = SCENARIO.format(mechanism=PLUGIN).replace(
            'mechanism = "', f'reconstruct = "{method}"\nmechanism = "'
        )
        with pytest.raises(ScenarioError, match=r"stream\.reconstruct"):
            parse_scenario(text)


@pytest.mark.parametrize("name", ["duchi", "piecewise", "hybrid"])
def test_the_comparison_mechanisms_load_in_a_scenario(name):
    loaded = parse_scenario(SCENARIO.format(mechanism=name))
    assert loaded.stream_config("r").mechanism == name


def test_the_audit_of_the_example_plugin(examples_path):
    assert build_spec(PLUGIN, 1.0).mechanism == PLUGIN
    result = run_audit(PLUGIN, 1.0, trials=4000, seed=2)
    assert result.verdict == "inconclusive" and result.mechanism == PLUGIN
    broken = run_audit(f"{BAD}:DoubleEps", 1.0, trials=4000, seed=2)
    assert broken.verdict == "violation" and broken.eps_lb > 1.0, broken


def test_the_audit_names_an_unknown_mechanism():
    with pytest.raises(ParameterError, match="must be one of rr, laplace"):
        build_spec("gaussian", 1.0)
    with pytest.raises(ParameterError, match="perturb returned shape"):
        build_spec(f"{BAD}:WrongShape", 1.0)


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLES), str(ROOT)])}
    return subprocess.run(
        [sys.executable, "-m", "ldpfleet.app.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=120,
    )


def test_cli_audit_of_a_plugin_and_of_bad_plugins():
    ok = _cli("audit", PLUGIN, "--eps", "1", "--trials", "2000")
    assert ok.returncode == 0, ok.stderr
    out = json.loads(ok.stdout)
    assert out["mechanism"] == PLUGIN and out["verdict"] == "inconclusive"
    violation = _cli("audit", f"{BAD}:DoubleEps", "--eps", "1", "--trials", "4000")
    assert violation.returncode == 1 and json.loads(violation.stdout)["verdict"] == "violation"
    for name in ("no_such_module_xyz:Mech", f"{BAD}:WrongShape", f"{BAD}:MissingMethod"):
        bad = _cli("audit", name, "--eps", "1")
        assert bad.returncode == 2 and "Traceback" not in bad.stderr, bad.stderr
        assert bad.stderr.count("\n") == 1 and "mechanism" in bad.stderr


def test_cli_run_of_a_bad_plugin_scenario_exits_2(tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(SCENARIO.format(mechanism=f"{BAD}:RejectsOwnOutputs"))
    result = _cli("run", str(path), "--broker", "memory", "--out", str(tmp_path / "out"))
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "stream.mechanism" in result.stderr and "in_domain rejects" in result.stderr


def test_cli_run_of_a_plugin_failing_on_the_devices_says_why_and_exits_1(tmp_path):
    """One process (memory broker): the reports of devices whose plugin failed are lost,
    and the closing sentence names the failures (it said only "reports lost from ...")."""
    path = tmp_path / "late.toml"
    path.write_text(SCENARIO.format(mechanism=f"{BAD}:RaisesLater"))
    result = _cli("run", str(path), "--broker", "memory", "--out", str(tmp_path / "out"))
    assert result.returncode == 1 and "Traceback" not in result.stdout + result.stderr
    said = " ".join((result.stdout + result.stderr).split())
    assert "incomplete: 16 reports lost from 4 device(s)" in said, said
    assert "4 device(s) failed (the first, d0000: ParameterError: mechanism:" in said, said
    assert "perturb failed on device d0000: RuntimeError: sensor library" in said, said


@pytest.mark.parametrize("mechanism", [PLUGIN, "duchi", "piecewise", "hybrid"])
def test_the_collector_validates_reports_with_the_mechanisms_in_domain(mechanism, examples_path):
    from ldpfleet.protocol import topics
    from ldpfleet.protocol.events import Rejected
    from ldpfleet.protocol.messages import Hello
    from ldpfleet.protocol.stream import StreamCollector, StreamReporter

    config = StreamConfig(
        run="r", mechanism=mechanism, eps=2.0, w=5, steps=10, batch_steps=5, lo=0.0, hi=1.0
    )
    reporter = StreamReporter(config, "d0", np.random.default_rng(0))
    reporter.start(0.0)
    hello = next(o for o in reporter.pop_outbound() if isinstance(o.message, Hello))
    collector = StreamCollector(config, ["d0"])
    collector.receive(topics.parse(hello.topic), hello.message, 0.0)
    collector.pop_outbound()
    reporter.add_readings(np.full(10, 0.5), 0.0)
    good = reporter.values[:5].tolist()
    report = SwReport(run="r", sender="d0", t0=0, mechanism=mechanism, eps0=0.4, w=5, values=good)
    up = topics.parse(topics.up("r", "d0", "sw_report"))
    collector.receive(up, report, 1.0)
    assert collector.accepted == 1
    values = reporter.values[5:].tolist()
    values[2] = 1e6
    bad = SwReport(
        run="r", sender="d0", seq=1, t0=5, mechanism=mechanism, eps0=0.4, w=5, values=values
    )
    collector.receive(up, bad, 2.0)
    rejected = [e for e in collector.pop_events() if isinstance(e, Rejected)]
    assert [e.field for e in rejected] == ["values[2]"]
    assert f"outside the {mechanism} output domain" in rejected[0].reason
    assert collector.summary()["rejections_by_reason"] == {"out_of_range": 1}
    assert reporter.ledger.account("stream").max_window_spent() == pytest.approx(2.0)


def test_an_optional_density_adds_the_likelihood_ratio_witness(examples_path):
    """Optional methods are used where present: a mechanism that states its density is
    audited with the most powerful test too; one without (the example) is not."""
    assert "likelihood ratio" in build_spec("piecewise", 1.0).witnesses
    assert "likelihood ratio" not in build_spec(PLUGIN, 1.0).witnesses
    ratio = build_spec("piecewise", 1.0).witnesses["likelihood ratio"]
    values = ratio(np.linspace(-3.0, 3.0, 61))
    assert set(np.round(np.unique(values), 9)) <= {-1.0, 0.0, 1.0}  # PM: p/q = e^eps exactly


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("NonFiniteLater", "perturb returned non-finite reports (report 0 is nan)"),
        ("ReturnsListLater", "perturb returned a list, not a numpy.ndarray"),
        ("OutOfDomainLater", "in_domain rejects its own output"),
        ("RaisesLater", "perturb failed on device d0: RuntimeError: sensor library"),
        (
            "OutsideStatedRangeLater",
            "perturb returned reports outside its stated range [output_low, output_high] = "
            "[-30, 31] (report 0 is 1",
        ),
    ],
)
def test_a_plugin_failing_on_a_device_stops_it_with_one_sentence(name, message):
    """A plugin that passes the load-time probe but fails on a device's own stream raises
    ``ParameterError`` naming ``mechanism`` there: no NaN report (the wire cannot carry one,
    and the run hung waiting for it), no report built from a failed call."""
    config = StreamConfig(
        run="r1", mechanism=f"{BAD}:{name}", eps=2.0, w=4, steps=12, batch_steps=4,
        lo=0.0, hi=10.0, retransmit_after=5.0,
    )  # fmt: skip
    reporter = StreamReporter(config, "d0", np.random.default_rng(1))
    reporter.start(0.0)
    with pytest.raises(ParameterError) as info:
        reporter.add_readings(np.linspace(0.0, 10.0, 12), 0.0)
    assert info.value.field == "mechanism" and message in str(info.value), str(info.value)
    assert reporter.privatised == 0


def test_in_domain_of_the_wrong_shape_is_named_as_such():
    with pytest.raises(ScenarioError) as info:
        parse_scenario(SCENARIO.format(mechanism=f"{BAD}:InDomainScalar"))
    assert "in_domain returned shape () for reports of shape (256,) (one bool per report)" in str(
        info.value
    ), str(info.value)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("MeanFailsLater", "d0001: ValueError: estimate_mean broke on the collector"),
        ("MeanInfiniteLater", "d0001: returned inf, not a finite number"),
    ],
)
def test_an_estimate_mean_failing_on_the_collector_leaves_the_device_out(name, why, caplog):
    """The collector's means after the run: a plugin's ``estimate_mean`` raising (the run
    ended in a traceback, no results) or answering inf (results.json held Infinity, invalid
    JSON) for one device's reports leaves that device out with one warning naming it."""
    config = StreamConfig(
        run="r1", mechanism=f"{BAD}:{name}", eps=2.0, w=4, steps=12, batch_steps=4,
        lo=0.0, hi=10.0, retransmit_after=5.0,
    )  # fmt: skip
    streams = {"d0000": np.full(256, 0.5), "d0001": np.full(12, 0.5), "d0002": np.array([])}
    with caplog.at_level("WARNING"):
        means = mean_estimates(config, streams)
    assert means == {"d0000": pytest.approx(5.0)}
    assert "estimate_mean failed for 1 device(s)" in caplog.text and why in caplog.text


@pytest.mark.parametrize("name", ["ReturnsInts", "MeanNumpyScalar"])
def test_int_reports_and_numpy_scalar_means_are_real_numbers(name):
    """The contract's types: an int ndarray of reports (converted to float) and a numpy
    floating scalar from ``estimate_mean`` are accepted."""
    mechanism = stream_mechanism(f"{BAD}:{name}", 1.0)
    config = StreamConfig(
        run="r1", mechanism=f"{BAD}:{name}", eps=2.0, w=2, steps=8, batch_steps=4,
        lo=0.0, hi=10.0, retransmit_after=5.0,
    )  # fmt: skip
    reporter = StreamReporter(config, "d0", np.random.default_rng(1))
    reporter.start(0.0)
    reporter.add_readings(np.linspace(0.0, 10.0, 8), 0.0)
    assert reporter.privatised == 8 and reporter.values.dtype == np.float64
    assert mean_estimates(config, {"d0": reporter.values[:8]})["d0"] >= 0.0 or mechanism


def test_the_audit_refuses_reports_outside_in_domain():
    """The audit scores only reports a collector would accept: a plugin that passes the
    load-time probe and then sends reports its own ``in_domain`` rejects gets one sentence
    (it was audited, the refused reports counted as evidence)."""
    with pytest.raises(ParameterError, match="in_domain rejects its own output"):
        run_audit(f"{BAD}:OutOfDomainLater", 1.0, trials=200, seed=0)
    bad = _cli("audit", f"{BAD}:OutOfDomainLater", "--eps", "1", "--trials", "200")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1, bad.stderr
    assert "mechanism: 'tests.unit.bad_mechanisms:OutOfDomainLater' in_domain" in bad.stderr


def test_an_estimate_mean_of_the_wrong_type_on_the_collector_leaves_the_device_out(caplog):
    config = StreamConfig(
        run="r1", mechanism=f"{BAD}:MeanNumpyScalar", eps=2.0, w=4, steps=12, batch_steps=4,
        lo=0.0, hi=10.0, retransmit_after=5.0,
    )  # fmt: skip
    means = mean_estimates(config, {"d0": np.full(12, 0.5)})
    assert means == {"d0": pytest.approx(5.0)}
    from ldpfleet.protocol.mechanism_contract import mean_problem

    assert mean_problem("0.5") == "returned '0.5' (a str), not a real number (int or float)"
    assert mean_problem(np.float64("nan")) == "returned nan, not a finite number"
    assert mean_problem(np.int64(3)) is None and mean_problem(1 + 0j) is not None
    assert mean_problem(10**400).endswith("not a finite number")  # float() overflows


@pytest.mark.parametrize("eps", [0.0, -1.0, float("nan"), float("inf"), 51.0])
def test_a_budget_outside_the_contract_is_refused_before_a_plugin_sees_it(eps):
    """``ldpfleet audit pkg.mod:Cls --eps nan`` answered with the plugin's own failure
    ("estimate_mean returned nan"), and eps = 51 (beyond the wire's 50) was audited."""
    with pytest.raises(ParameterError) as info:
        build_spec(f"{BAD}:NanOnBadEps", eps)
    assert info.value.field == "eps" and "must be" in str(info.value), str(info.value)
    with pytest.raises(ParameterError, match="eps: must be in"):
        stream_mechanism("duchi", 0.0)
    assert stream_mechanism("raw", 0.0).eps == 0.0


@pytest.mark.parametrize("seed", [0, 1])
def test_the_example_stays_private_under_the_likelihood_ratio_witness(examples_path, seed):
    """examples/clipped_laplace.py drew ``x + rng.laplace``: with its density stated, the
    audit's likelihood-ratio witness separated input 0 from 1 through the low bits of the
    floating-point sum (eps_lb 1.96 and 2.19 at a claimed eps = 1, seeds 0 and 1); sampled
    on a grid (``laplace_on_grid``) it is exactly eps-LDP and the audit finds nothing."""
    name = "tests.unit.density_mechanisms:ClippedLaplaceWithDensity"
    assert "likelihood ratio" in build_spec(name, 1.0).witnesses
    result = run_audit(name, 1.0, seed=seed)
    assert result.verdict == "inconclusive" and result.eps_lb <= 1.0, result


def _collector_rejections(plugin: str, values: list[float]) -> tuple[object, list]:
    """One device's hello then one report of ``values`` under the mechanism ``plugin`` (of
    tests/unit/bad_mechanisms.py), received by a ``StreamCollector``: the collector and its
    ``Rejected`` events."""
    from ldpfleet.protocol import topics
    from ldpfleet.protocol.events import Rejected
    from ldpfleet.protocol.messages import Hello
    from ldpfleet.protocol.stream import StreamCollector

    mechanism = f"{BAD}:{plugin}"
    config = StreamConfig(
        run="r", mechanism=mechanism, eps=2.0, w=5, steps=10, batch_steps=5, lo=0.0, hi=1.0
    )
    reporter = StreamReporter(config, "d0", np.random.default_rng(0))
    reporter.start(0.0)
    hello = next(o for o in reporter.pop_outbound() if isinstance(o.message, Hello))
    collector = StreamCollector(config, ["d0"])
    collector.receive(topics.parse(hello.topic), hello.message, 0.0)
    report = SwReport(run="r", sender="d0", t0=0, mechanism=mechanism, eps0=0.4, w=5, values=values)
    collector.receive(topics.parse(topics.up("r", "d0", "sw_report")), report, 1.0)
    return collector, [e for e in collector.pop_events() if isinstance(e, Rejected)]


def test_an_in_domain_failing_on_the_collector_refuses_the_report_in_one_sentence():
    """The collector reads ``in_domain`` as the load-time check does: a plugin raising on a
    report's values gets that report refused (``values``), not a traceback of the run."""
    collector, rejected = _collector_rejections("InDomainFailsLater", [0.5] * 5)
    assert collector.accepted == 0 and [e.field for e in rejected] == ["values"]
    assert "in_domain failed: in_domain broke on the collector" in rejected[0].reason


def test_the_collector_refuses_a_report_outside_the_stated_range():
    """A plugin stating ``output_low``/``output_high`` and an ``in_domain`` that accepts any
    finite value: a report outside the stated range (a hostile or newer device) is refused
    as ``out_of_range``, naming the value and the range, and never aggregated (before the
    fix only ``in_domain`` was asked, so the collector accepted 1e4)."""
    collector, rejected = _collector_rejections("PermissiveStatedRange", [0.5, 0.5, 1e4, 0.5, 0.5])
    assert collector.accepted == 0 and [e.field for e in rejected] == ["values[2]"]
    assert "10000.0 is outside the" in rejected[0].reason, rejected[0].reason
    assert "output domain [-30, 31]" in rejected[0].reason, rejected[0].reason
    assert collector.summary()["rejections_by_reason"] == {"out_of_range": 1}


def test_cli_run_of_a_plugin_whose_reports_leave_its_domain_ends_naming_it(tmp_path):
    """A plugin passing the load-time probe whose later reports its own ``in_domain``
    rejects: the collector rejected each batch, the devices retransmitted it, and ``ldpfleet
    run`` waited for the stage timeout (600 s; killed at 100 s). The device now checks
    in_domain before sending: it stops with one sentence, the run ends with exit 1."""
    path = tmp_path / "ood.toml"
    path.write_text(SCENARIO.format(mechanism=f"{BAD}:OutOfDomainLater"))
    result = _cli("run", str(path), "--broker", "memory", "--out", str(tmp_path / "out"))
    said = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 1 and "Traceback" not in said, said
    assert "in_domain rejects its own output" in said, said


def test_cli_audit_of_a_plugin_that_prints_keeps_stdout_json():
    """A plugin's print() went to stdout before the audit's JSON (unparseable)."""
    out = _cli("audit", f"{BAD}:Prints", "--eps", "1", "--trials", "200")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["mechanism"] == f"{BAD}:Prints"
    assert "building Prints at eps = 1.0" in out.stderr


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("DensityRaises", "failed: NotImplementedError: density not written yet"),
        ("DensityScalar", "must answer one finite value >= 0 per report, got shape ()"),
    ],
)
def test_a_bad_density_gives_one_sentence_not_a_traceback(name, message):
    """The optional ``density`` feeds the audit's likelihood-ratio witness: one raising
    ended ``ldpfleet audit`` with a traceback and exit status 1 (read as a violation)."""
    with pytest.raises(ParameterError) as info:
        run_audit(f"{BAD}:{name}", 1.0, trials=200, seed=0)
    assert info.value.field == "mechanism" and message in str(info.value), str(info.value)


def test_an_entry_point_named_like_a_builtin_is_shadowed_and_a_warning_says_so(monkeypatch, caplog):
    """An installed entry point ``sw`` was silently shadowed by the built-in ``sw``: now one
    warning (once per name) names the distribution, the target and the import path to use."""
    from importlib.metadata import EntryPoint, EntryPoints

    class _Dist:
        name = "sw-plugins"

    entry = EntryPoint("sw", "sw_plugins.mech : Better", ENTRY_POINT_GROUP)
    entry = entry._for(_Dist())  # as importlib.metadata binds an installed one
    fake = EntryPoints([entry])
    monkeypatch.setattr(
        mechanisms, "entry_points", lambda group: fake if group == ENTRY_POINT_GROUP else None
    )
    mechanisms._warn_if_shadowed.cache_clear()
    try:
        with caplog.at_level("WARNING", logger="ldpfleet.protocol.mechanisms"):
            assert mechanisms.mechanism_factory("sw") is mechanisms.BUILTIN_MECHANISMS["sw"]
            mechanisms.mechanism_factory("sw")
            mechanisms.mechanism_factory("laplace")  # no entry point of that name: silent
        [record] = caplog.records
        message = record.getMessage()
        assert "mechanism 'sw' is the built-in" in message
        assert "'sw-plugins' -> 'sw_plugins.mech:Better'" in message
        assert "mechanism = 'sw_plugins.mech:Better'" in message
    finally:
        mechanisms._warn_if_shadowed.cache_clear()


def _bind_entry_points(monkeypatch, *entries: tuple[str, str]) -> None:
    """Installed entry points of a fake distribution 'fleetmech' in ``ldpfleet.mechanisms``."""
    from importlib.metadata import EntryPoint, EntryPoints

    class _Dist:
        name = "fleetmech"

    fake = EntryPoints(
        [EntryPoint(name, value, ENTRY_POINT_GROUP)._for(_Dist()) for name, value in entries]
    )
    monkeypatch.setattr(
        mechanisms, "entry_points", lambda group: fake if group == ENTRY_POINT_GROUP else None
    )
    mechanisms._plugin_class.cache_clear()
    monkeypatch.setattr(mechanisms, "_checked", set())


@pytest.mark.parametrize(
    ("target", "missing"),
    [
        (f"{BAD}:BitFlp", f"module '{BAD}' has no attribute 'BitFlp'"),
        ("fleetmech_gone.bits:BitFlip", "module 'fleetmech_gone' not found"),
        (f"{BAD}:not_a_class", ", which is not a class (got a function)"),
    ],
)
def test_the_audit_of_a_broken_entry_point_names_it_its_target_and_the_missing_part(
    monkeypatch, target, missing
):
    """An installed entry point whose target does not import: the audit said "must be one of
    rr, laplace, ..." as if the name were unknown; now the entry point's own failure."""
    _bind_entry_points(monkeypatch, ("bitflip", target))
    try:
        assert mechanisms.is_entry_point("bitflip") and not mechanisms.is_entry_point("other")
        with pytest.raises(ParameterError) as info:
            build_spec("bitflip", 1.0)
        text = str(info.value)
        assert "entry point 'bitflip' of group 'ldpfleet.mechanisms'" in text, text
        assert f"(distribution 'fleetmech') points to '{target}'" in text, text
        assert missing in text and "must be one of" not in text, text
        with pytest.raises(ParameterError, match="must be one of rr, laplace"):
            build_spec("other", 1.0)  # not registered: still the list of names
    finally:
        mechanisms._plugin_class.cache_clear()


def test_a_stated_eps_is_the_built_one_within_a_relative_1e_6():
    """A plugin stating ``self.eps = 2 eps`` was audited and labelled at a budget it was not
    built with; a rounding far below 1e-6 relative is accepted."""
    with pytest.raises(ParameterError, match=r"states eps = 2\.0 but was built with eps = 1\.0"):
        stream_mechanism(f"{BAD}:StatesDoubleEps", 1.0)
    with pytest.raises(ParameterError, match=r"states eps = 2\.0 but was built"):
        build_spec(f"{BAD}:StatesDoubleEps", 1.0)
    assert stream_mechanism(f"{BAD}:StatesEpsRounded", 1.0).eps == pytest.approx(1.0)
    for name in STREAM_MECHANISMS:  # every built-in states the eps it was built with
        if name != "raw":
            assert stream_mechanism(name, 0.7).eps == pytest.approx(0.7, rel=1e-6)


def test_a_negative_density_is_named_with_its_value_and_report():
    """A density < 0 said only "must answer one finite value >= 0 per report, got shape
    (n,) for n reports" (the right shape): now the value, the report index and its y."""
    with pytest.raises(ParameterError) as info:
        run_audit(f"{BAD}:NegativeDensity", 1.0, trials=200, seed=0)
    text = str(info.value)
    assert "density(y, " in text and ") answered -" in text and " for report " in text, text
    assert "(y = " in text and "it must be a finite value >= 0" in text, text
    assert "got shape" not in text, text


def test_a_nan_variance_is_named_with_its_value_and_input():
    from ldpfleet.app.bench_mechanisms import _variances

    mech = stream_mechanism(f"{BAD}:NanVariance", 1.0)
    x = np.linspace(0.0, 1.0, 11)
    with pytest.raises(ParameterError) as info:
        _variances(mech.variance, x, f"{BAD}:NanVariance")
    text = str(info.value)
    assert "variance answered nan for input 6 (x = 0.6000000000000001)" in text, text
    assert "(5 of 11 inputs are not)" in text, text


@pytest.mark.parametrize(
    ("word", "said"),
    [("int64", "an int64"), ("str", "a str"), ("ndarray", "an ndarray"), ("list", "a list")],
)
def test_type_names_take_their_article(word, said):
    from ldpfleet.protocol.mechanism_contract import a_or_an

    assert a_or_an(word) == said


def test_an_estimate_mean_failure_given_a_warnings_list_is_recorded_there(caplog):
    """The collector passes a list: the sentence goes to results.json ``warnings`` (it was
    only a log line, lost in a separate collector's log) and is logged at INFO only."""
    config = StreamConfig(
        run="r1", mechanism=f"{BAD}:MeanFailsLater", eps=2.0, w=4, steps=12, batch_steps=4,
        lo=0.0, hi=10.0, retransmit_after=5.0,
    )  # fmt: skip
    streams = {f"d{i:04d}": np.full(12, 0.5) for i in range(5)}
    warnings: list[str] = []
    with caplog.at_level("INFO", logger="ldpfleet.collector.analytics"):
        assert mean_estimates(config, streams, warnings) == {}
    [sentence] = warnings
    assert sentence.startswith(f"mechanism '{BAD}:MeanFailsLater' estimate_mean failed for 5")
    assert "; and 2 more); their mean_estimate is null" in sentence, sentence
    assert [r.levelname for r in caplog.records] == ["INFO"]


def test_cli_run_of_a_plugin_whose_estimate_mean_fails_warns_in_results_and_console(tmp_path):
    """Memory transport, the CLI: the collector's estimate_mean failure is a ``warning:``
    line on the console and an entry of results.json ``warnings``."""
    path = tmp_path / "mean.toml"
    path.write_text(SCENARIO.format(mechanism=f"{BAD}:MeanFailsLater"))
    out = tmp_path / "out"
    result = _cli("run", str(path), "--broker", "memory", "--out", str(out))
    assert result.returncode == 0, result.stderr
    said = " ".join(result.stderr.split())  # the console is stderr
    assert f"warning: mechanism '{BAD}:MeanFailsLater' estimate_mean failed for 4" in said, said
    assert said.count("estimate_mean failed") == 1, said  # not also a log line
    results = json.loads((out / "results.json").read_text())
    assert any("estimate_mean failed for 4 device(s)" in w for w in results["warnings"])
    assert all(d["mean_estimate"] is None for d in results["per_device"].values())


def test_device_failures_are_one_counted_warning_and_each_one_with_verbose(tmp_path):
    """A plugin failing on every device logged one warning per device (a screenful for a
    large fleet): now one line with the count and the first; ``--verbose`` shows each."""
    path = tmp_path / "late.toml"
    path.write_text(SCENARIO.format(mechanism=f"{BAD}:RaisesLater"))
    quiet = _cli("run", str(path), "--broker", "memory", "--out", str(tmp_path / "q"))
    said = " ".join(quiet.stderr.split())
    assert quiet.returncode == 1 and "4 devices failed; the first, d0000: " in said, said
    assert "device d0001 failed" not in said and "device d0000 failed" not in said, said
    assert "failed (the first, d0000: ParameterError" in said, said  # closing sentence
    assert "the other 3 with --verbose" in said, said
    verbose = _cli("-v", "run", str(path), "--broker", "memory", "--out", str(tmp_path / "v"))
    said = " ".join((verbose.stdout + verbose.stderr).split())
    assert all(f"device d000{i} failed: ParameterError" in said for i in range(4)), said


def test_device_failure_summary_counts():
    from ldpfleet.devices.fleet import device_failure_summary

    assert device_failure_summary({}) is None
    assert device_failure_summary({"d1": "E: x"}) == "device d1 failed: E: x"
    two = device_failure_summary({"d2": "E: y", "d1": "E: x"})
    assert two is not None and two.startswith("2 devices failed; the first, d1: E: x")


def _package_section() -> dict[str, str]:
    """The files of docs/mechanisms.md "Ship your mechanism as a package", by their path
    (the line before each block names it)."""
    text = (ROOT / "docs" / "mechanisms.md").read_text()
    section = text.split("## Ship your mechanism as a package\n", 1)[1].split("\n## ", 1)[0]
    import re

    blocks = re.findall(r"^`([^`\n]+)`:\n\n```\w+\n(.*?)^```", section, flags=re.S | re.M)
    return dict(blocks)


def test_the_package_of_the_docs_installs_audits_and_runs(tmp_path):
    """The section's pyproject.toml, module and scenario, copied as they are: installed as a
    distribution (its entry points from the pyproject, as pip writes them), a fresh
    interpreter audits both names (honest: inconclusive) and runs the scenario by name."""
    import tomllib

    files = _package_section()
    pyproject = tomllib.loads(files["my-ldp-mechanisms/pyproject.toml"])
    package = tmp_path / "my_ldp_mechanisms"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "mechanisms.py").write_text(
        files["my-ldp-mechanisms/my_ldp_mechanisms/mechanisms.py"]
    )
    (tmp_path / "bitflip.toml").write_text(files["bitflip.toml"])
    info = tmp_path / "my_ldp_mechanisms-0.1.0.dist-info"
    info.mkdir()
    name = pyproject["project"]["name"]
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n")
    entries = pyproject["project"]["entry-points"][ENTRY_POINT_GROUP]
    lines = "".join(f"{k} = {v}\n" for k, v in entries.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{lines}")
    code = """
import ldpfleet
assert {"bitflip", "bitflip-half"} <= set(ldpfleet.mechanism_names())
for name in ("bitflip", "bitflip-half"):  # gamma 1e-6: an honest one fails w.p. <= 1e-6
    audit = ldpfleet.run_audit(name, 1.0, trials=2000, seed=0, gamma=1e-6)
    assert audit.verdict == "inconclusive", (name, audit)
scenario = ldpfleet.parse_scenario(open("bitflip.toml").read())
results = ldpfleet.run(scenario, broker="memory", out_dir="out")
assert results["reports_lost"] == 0 and results["devices_complete"] == 20, results
print("ok")
"""
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]


def test_a_module_in_the_current_directory_but_not_importable_gets_a_hint(tmp_path, monkeypatch):
    """``ldpfleet audit mymech:Cls`` beside ``mymech.py`` said only "module 'mymech' not
    found": a console script does not import from the current directory. Now it says so."""
    (tmp_path / "mymech_not_on_path.py").write_text("class Cls: ...\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", ".", str(tmp_path))])
    with pytest.raises(ParameterError) as info:
        stream_mechanism("mymech_not_on_path:Cls", 1.0)
    text = str(info.value)
    assert "module 'mymech_not_on_path' not found" in text, text
    assert "mymech_not_on_path.py is in the current directory" in text, text
    assert "PYTHONPATH=." in text, text
    with pytest.raises(ParameterError) as elsewhere:
        stream_mechanism("no_such_module_xyz:Cls", 1.0)
    assert "current directory" not in str(elsewhere.value)


def test_a_separate_collector_prints_the_results_warnings(capsys, tmp_path):
    """``ldpfleet collector`` (docs/separate-processes.md) printed its one line and kept the
    estimate_mean warning to results.json (its log line is INFO now)."""
    from ldpfleet.app.cli import _collector_summary

    results = {
        "devices_complete": 6, "devices": 6, "reports_lost": 0, "reports_rejected": 0,
        "warnings": ["mechanism 'm:C' estimate_mean failed for 6 device(s) (d0000: E: x)"],
    }  # fmt: skip
    _collector_summary(results, tmp_path)
    said = " ".join(capsys.readouterr().err.split())
    assert "collector: 6/6 devices complete" in said, said
    assert "warning: mechanism 'm:C' estimate_mean failed for 6 device(s)" in said, said


def test_an_unknown_name_lists_the_registered_entry_points(monkeypatch):
    """A mistyped entry-point name ("bitflp") said only that nothing registers it: now the
    names installed packages do register, in a scenario and in the audit."""
    _bind_entry_points(monkeypatch, ("bitflip", PLUGIN), ("bitflip-half", PLUGIN))
    try:
        with pytest.raises(ParameterError) as info:
            stream_mechanism("bitflp", 1.0)
        assert "(registered: bitflip, bitflip-half)" in str(info.value), str(info.value)
        with pytest.raises(ParameterError) as audit:
            build_spec("bitflp", 1.0)
        assert "entry point (registered: bitflip, bitflip-half), got 'bitflp'" in str(audit.value)
    finally:
        mechanisms._plugin_class.cache_clear()
