"""A refusal gives a program what its sentence gives a person (claim R6): ``err.field``,
``err.limit`` (the rule broken) and ``err.value`` (the value refused), here for a sample of
the app and collector modules converted on 2026-12-05 (helper C2), at least one per module,
across the kinds of check: a range, a type, a choice, a shape or an element of an array.

Each case is a real refusal through the module's public function or constructor (the
``cli`` module has no public helper: its option parsers are called directly)."""

from __future__ import annotations

import asyncio
import math
from pathlib import Path

import numpy as np
import pytest
from ldpfleet.app import (
    audit_cli,
    audit_fleet,
    bench,
    bench_commands,
    bench_cpr,
    bench_gcdp,
    bench_gcdp_scaling,
    bench_secagg,
    cadr_sweep,
    certs,
    cli,
)
from ldpfleet.collector import (
    baselines,
    gcdp_stage,
    kde,
    metrics,
    projection,
    secure_sum,
    sw_em,
)
from ldpfleet.collector.audit import (
    battery,
    core,
    graph_canaries,
    mutants,
    selection,
    stats,
)
from ldpfleet.collector.gcdp import (
    cache,
    correlation,
    evaluation,
    fleet_calibration,
    gaussian,
    graph,
    private_calibration,
    release,
    sensitivity,
    validate,
)
from ldpfleet.protocol.cadr_budget import THETA_EPS_MIN
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.sw import SquareWave

from tests.conftest import ROOT


def _refusal(call) -> ParameterError:
    with pytest.raises(ParameterError) as err:
        call()
    return err.value


def _same(actual: object, expected: object) -> bool:
    """Equal, NaN equal to NaN (a refused non-finite element is the value)."""
    if isinstance(expected, float) and math.isnan(expected):
        return isinstance(actual, float) and math.isnan(actual)
    return actual == expected


CASES = {
    # app
    "audit_cli range": (
        lambda: audit_cli.check_jobs(0),
        ("jobs", f"an integer in 1 .. {audit_cli.JOBS_MAX}", 0),
    ),
    "audit_fleet range": (
        lambda: audit_fleet.fleet_scenario(1.0, 0, Path("unused.csv"), seed=0),
        ("trials", "an integer >= 1", 0),
    ),
    "bench rule": (
        lambda: asyncio.run(bench.bench_fleet(4, 10, broker="memory", partitions=2)),
        ("partitions", "1 with the memory broker", 2),
    ),
    "bench_cpr range": (
        lambda: bench_cpr.check_bench_args(trials=0),
        ("trials", "an integer >= 1", 0),
    ),
    "bench_cpr choice-type": (
        lambda: bench_cpr.load_grid_template(""),
        ("grid_template", "FILE[:COLUMN]", ""),
    ),
    "bench_gcdp choice": (
        lambda: bench_gcdp.bench_gcdp(dataset="nope"),
        ("dataset", f"one of {', '.join(bench_gcdp.DATASETS)}", "nope"),
    ),
    "bench_gcdp_scaling list": (
        lambda: bench_gcdp_scaling.bench_gcdp_scaling(ms=[1, 10]),
        ("ms", "distinct integers >= 2", [1, 10]),
    ),
    "bench_secagg range": (
        lambda: bench_secagg.check_options(
            3, 1, dropout=1.5, dropout_stage="after_keys", stage_timeout=5.0, seed=0
        ),
        ("dropout", "in [0, 1)", 1.5),
    ),
    "cadr_sweep choice": (
        lambda: cadr_sweep.parse_methods("ll,zz"),
        # the sweep's methods: the projections and the default method clip (helper W)
        ("methods", f"one of {', '.join(cadr_sweep.SWEEP_METHODS)}", "zz"),
    ),
    "cli text format": (
        lambda: cli._grid_shapes(["12"]),
        ("grid_shape", "PERIOD,CYCLES", "12"),
    ),
    # collector/audit
    "battery type": (
        lambda: battery.check_mechanism(123),
        ("mechanism", "a battery entry name, 'package.module:Class' or an entry-point name", 123),
    ),
    "cadr_count_canary range": (
        lambda: battery.build_spec("cadr-theta-count", THETA_EPS_MIN / 2),
        ("eps", f">= {THETA_EPS_MIN} (the θ search's budget ε_θ)", THETA_EPS_MIN / 2),
    ),
    "audit core empty": (
        lambda: core.audit_samples(([0.0], [1.0]), ([0.0], [1.0]), {}, eps=1.0),
        ("witnesses", "at least one witness", {}),
    ),
    "graph_canaries choice": (
        lambda: graph_canaries.construction("ring"),
        ("kind", "one of 'star', 'star-edge', 'er', 'connected'", "ring"),
    ),
    "mutants choice": (
        lambda: mutants.mutant_named("no-such-mutant"),
        ("mutant", f"one of {', '.join(m.name for m in mutants.MUTANTS)}", "no-such-mutant"),
    ),
    "selection element": (
        lambda: selection.select_test([0.5, math.nan], [0.5], gamma=0.05),
        ("scores_d", "finite witness values (value: the first non-finite one)", math.nan),
    ),
    "stats range": (
        lambda: stats.check_trials(1),
        ("trials", f"an integer in [2, {stats.MAX_TRIALS:,}] (runs per world)", 1),
    ),
    # collector
    "baselines shape": (
        lambda: baselines.sw_filter(np.zeros((2, 3)), SquareWave(1.0)),
        ("y", "a 1-d array (value: its shape)", (2, 3)),
    ),
    "baselines element": (
        lambda: baselines.sw_filter(np.array([0.5, 40.0]), SquareWave(1.0)),
        ("y", "reports in the mechanism's output domain (value: the first outside)", 40.0),
    ),
    "kde range": (
        lambda: kde.weighted_quantile(np.array([1.0, 2.0]), 1.5),
        ("q", "in [0, 1]", 1.5),
    ),
    "metrics shape": (
        lambda: metrics.cosine_distance(np.zeros((2, 2)), np.ones(4)),
        ("reconstruction", "a non-empty 1-d series (value: its shape)", (2, 2)),
    ),
    "projection shapes": (
        lambda: projection.degree_distribution_mae(np.array([1, 2]), np.array([1])),
        ("deg", "equal-length 1-d arrays (value: the two shapes)", ((2,), (1,))),
    ),
    "secure_sum type": (
        lambda: asyncio.run(secure_sum.secure_sum(None, "run", "s", "abc", 1, None)),
        ("devices", "an iterable of device ids, not one string", "abc"),
    ),
    "sw_em shape": (
        lambda: sw_em.em(np.ones(2), np.ones(3)),
        ("M", "a non-empty 2-D array (value: its shape)", (3,)),
    ),
    "sw_em element": (
        lambda: sw_em.em(np.array([1.0, -2.0]), np.ones((2, 2))),
        ("counts[0, 1]", "finite and >= 0", -2.0),
    ),
    # collector/gcdp
    "cache length": (
        lambda: cache.summary_distance([0.0, 1.0], [0.0, 1.0, 2.0]),
        ("summary", "the reference's 2 entries (value: the count)", 3),
    ),
    "correlation shape": (
        lambda: correlation.lagged_correlations(np.zeros(5), 1),
        ("data", "a 2-D array (time x nodes) (value: its shape)", (5,)),
    ),
    "evaluation range": (
        lambda: evaluation.temporal_smooth(np.zeros((3, 2)), -1),
        ("lag", "an integer >= 0", -1),
    ),
    "fleet_calibration choice": (
        lambda: fleet_calibration.calibrate_fleet(
            np.full((4, 2), 0.5), window=2, eps_rel=1.0, method="nope"
        ),
        ("method", f"one of {fleet_calibration.FLEET_METHODS}", "nope"),
    ),
    "gaussian range": (
        lambda: gaussian.discrete_gaussian(np.random.default_rng(0), 0, 3),
        ("sigma2", "in [1, 2**40]", 0),
    ),
    "graph symmetry": (
        lambda: graph.build_calibration_graph(np.array([[0.0, 0.5], [0.2, 0.0]])),
        ("scores", "symmetric (value: the first (i, j) with s[i, j] != s[j, i])", (0, 1)),
    ),
    "private_calibration repeat": (
        lambda: private_calibration.PrivateCalibration(
            1.0, 1.0, 1.0, 1.0, n_nodes=3, d=2, tau_grid=[0.1, 0.2, 0.1]
        ),
        ("tau_grid", "no repeated threshold (value: the first repeat)", 0.1),
    ),
    "release element": (
        lambda: release.project([[0.5, 0.5]], [0.0, 0.0], [1.0, -1.0]),
        ("high[1]", ">= low[1] = 0.0", -1.0),
    ),
    "sensitivity choice": (
        lambda: sensitivity.window_masking_deltas(np.zeros((4, 2)), 2, unit="room"),
        ("unit", f"one of {', '.join(sensitivity.MASK_UNITS)}", "room"),
    ),
    "validate element": (
        lambda: validate.finite_vector([1.0, math.inf], "x"),
        ("x[1]", "finite", math.inf),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_refusal_names_its_field_limit_and_value(name):
    call, (field, limit, value) = CASES[name]
    err = _refusal(call)
    assert (err.field, err.limit) == (field, limit)
    assert _same(err.value, value), err.value


def test_bench_commands_refusal_carries_limit_and_value(monkeypatch):
    """Through the command function: its ``_refuse`` (the exit-2 printer) gets the error."""

    def keep(error):
        raise error

    monkeypatch.setattr(bench_commands, "_refuse", keep)
    err = _refusal(lambda: bench_commands.bench_gcdp_scaling_command(ms="10,x"))
    assert (err.field, err.limit, err.value) == ("ms", "a comma list of integers", "10,x")


def test_bench_cpr_template_refusal_gives_the_one_value(tmp_path):
    """A constant column: ``.value`` is the one value, not the file."""
    path = tmp_path / "flat.csv"
    path.write_text("3\n3\n3\n")
    err = _refusal(lambda: bench_cpr.load_grid_template(str(path)))
    assert err.field == "grid_template"
    assert err.limit == "values not all equal (value: the one value)" and err.value == 3.0


def test_certs_refusal_names_the_range(tmp_path):
    err = _refusal(lambda: certs.write_test_certificates(tmp_path, days=0))
    assert (err.field, err.limit, err.value) == ("days", f"1 .. {certs.MAX_DAYS:,}", 0)


def test_cli_renamed_option_keeps_limit_and_value():
    """``bench secagg`` renames the field to the option; the limit and value survive."""

    def refuse():
        with cli._secagg_options():
            bench_secagg.check_options(
                1, 1, dropout=0.0, dropout_stage="after_keys", stage_timeout=5.0, seed=0
            )

    err = _refusal(refuse)
    limit = f"2..{bench_secagg.MAX_PARTICIPANTS} devices"
    assert (err.field, err.limit, err.value) == ("--devices", limit, 1)


def test_gcdp_stage_label_refusal_gives_the_label(tmp_path):
    """A label column holding 2: ``.value`` is the first label that is not 0/1."""
    from ldpfleet.scenarios.plans import gcdp_stage_config
    from ldpfleet.scenarios.schema import load_scenario

    shipped = ROOT / "data" / "uci-occupancy"
    lines = (shipped / "datatraining.txt").read_text().splitlines()
    rows = enumerate(lines[1:])
    body = [line.rsplit(",", 1)[0] + f",{2 * ((i // 200) % 2)}" for i, line in rows]
    calibration = tmp_path / "calibration.csv"
    calibration.write_text("\n".join([lines[0], *body]) + "\n")
    text = (ROOT / "scenarios" / "occupancy-release.toml").read_text()
    text = text.replace('"data/uci-occupancy/datatraining.txt"', repr(str(calibration)))
    text = text.replace('"data/uci-occupancy/datatest.txt"', repr(str(shipped / "datatest.txt")))
    scenario = tmp_path / "s.toml"
    scenario.write_text(text)
    config = gcdp_stage_config(load_scenario(scenario))
    err = _refusal(lambda: gcdp_stage.load_calibration(config))
    assert err.field == "gcdp.utility_column"
    assert (err.limit, err.value) == ("0/1 labels (value: the first other)", 2.0)
