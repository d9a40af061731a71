"""Scenario files a held-out user wrote: values the validator let through (an infinite
timeout, a CPR period range no stream can satisfy, a section a CADR-LDP run ignores), and
messages that named the wrong thing (a whole list for its bad item, a boolean option listed
without its booleans, a UTF-8 byte-order mark read as a syntax error)."""

from __future__ import annotations

import json

import pytest
from ldpfleet.scenarios.schema import ScenarioError, load_scenario, parse_scenario

STREAM = """\
[scenario]
name = "p"
seed = 1
[fleet]
devices = 4
[stream]
steps = 40
eps = 2.0
w = 5
batch_steps = 5
[source]
kind = "synthetic"
bounds = [0.0, 1.0]
period = 12
"""

CADR = """\
[scenario]
name = "c"
[graph]
source = "erdos_renyi:n=10,p=0.5"
[cadr]
processes = 1
"""


def _refused(text: str) -> str:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("section", "key", "base"),
    [
        ("scenario", "run_timeout", STREAM),
        ("collector", "stage_timeout", STREAM),
        ("collector", "idle_timeout", STREAM),
        ("collector", "finish_grace", STREAM),
        ("secure_sum", "stage_timeout", STREAM),
        ("cadr", "stage_timeout", CADR),
    ],
    ids=lambda v: v if len(v) < 20 else ("cadr" if "[cadr]" in v else "stream"),
)
@pytest.mark.parametrize("value", ["inf", "+inf"])
def test_an_infinite_number_is_refused(section, key, base, value):
    """``run_timeout = inf`` was accepted and results.json then held ``Infinity``, which is
    not JSON (``json.loads(..., parse_constant=...)``, jq and browsers refuse it)."""
    if f"[{section}]" in base:
        text = base.replace(f"[{section}]\n", f"[{section}]\n{key} = {value}\n", 1)
    else:
        text = base + f"[{section}]\n{key} = {value}\n"
    message = _refused(text)
    assert f"{section}.{key}" in message and "got inf" in message, message


def test_a_finite_timeout_still_loads():
    loaded = parse_scenario(STREAM.replace("seed = 1\n", "seed = 1\nrun_timeout = 1e6\n"))
    assert loaded.run_timeout() == 1e6
    json.dumps(loaded.spec.scenario.run_timeout, allow_nan=False)


def test_a_min_period_no_stream_can_show_three_times_is_refused():
    """``[cpr] min_period = 20`` on a 40-step stream: every stream abstained (period
    accuracy 0 %) and nothing said why."""
    text = STREAM.replace("batch_steps = 5\n", 'batch_steps = 5\nreconstruct = "cpr"\n')
    message = _refused(text + "[cpr]\nmin_period = 14\n")
    assert "cpr.min_period" in message and "13" in message and "14" in message, message
    parse_scenario(text + "[cpr]\nmin_period = 13\n")  # the limit itself loads


@pytest.mark.parametrize("section", ["faults", "gcdp", "cpr"])
def test_a_cadr_scenario_refuses_the_stream_sections_it_ignores(section):
    """``[faults] crash_fraction = 0.5`` in a CADR-LDP scenario ran without a single crash."""
    body = {
        "faults": "crash_fraction = 0.5\n",
        "gcdp": 'eps_rel = 1.0\ncalibration_path = "x.csv"\n',
        "cpr": "min_period = 3\n",
    }[section]
    message = _refused(CADR + f"[{section}]\n{body}")
    assert message.startswith(f"{section}:") and f"remove [{section}]" in message, message


def test_a_bad_item_of_a_list_is_shown_not_the_whole_list():
    message = _refused(STREAM.replace("bounds = [0.0, 1.0]", 'bounds = ["a", 1.0]'))
    assert "source.bounds[0]" in message and "got 'a' (a str)" in message, message


def test_a_boolean_option_lists_its_booleans():
    message = _refused(STREAM + '[broker]\nauth = "yes"\n')
    assert "broker.auth" in message and 'true, false, "auto"' in message, message


def test_a_utf8_byte_order_mark_is_read(tmp_path):
    """Windows editors save UTF-8 with a byte-order mark: it was "not valid TOML: Invalid
    statement (at line 1, column 1)"."""
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + STREAM.encode())
    assert load_scenario(path).spec.fleet.devices == 4


def test_a_missing_calibration_file_is_not_blamed_on_source_path():
    """``calibration_path = "nope.csv"`` said "... file not found: nope.csv (source.path of
    the fleet)", as if the fleet's own data file were missing."""
    from tests.conftest import ROOT

    path = ROOT / "scenarios" / "occupancy-release.toml"
    text = path.read_text().replace(
        'calibration_path = "data/uci-occupancy/datatraining.txt"', 'calibration_path = "nope.csv"'
    )
    assert "nope.csv" in text
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, path)
    message = str(caught.value)
    assert "gcdp.calibration_path" in message and "nope.csv" in message, message
    assert "source.path" not in message, message


def test_columns_without_column_bounds_says_they_are_required(tmp_path):
    """``columns`` without ``column_bounds`` said "need one [lo, hi] per column (2), got
    None"."""
    (tmp_path / "s.csv").write_text("a,b\n1,2\n3,4\n")
    text = STREAM.replace('kind = "synthetic"\nbounds = [0.0, 1.0]\nperiod = 12\n', "")
    text += 'kind = "csv"\npath = "s.csv"\ncolumns = ["a", "b"]\n'
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text, tmp_path / "x.toml")
    message = str(caught.value)
    assert "source.column_bounds" in message and "None" not in message, message
    assert "required with source.columns" in message, message


def test_a_tiny_eps_says_which_budget_the_mechanism_failed_at():
    """``eps = 1e-20`` (inside the documented (0, 50]) said only "stream.mechanism: 'sw'
    estimate_mean returned nan, not a finite number" after two numpy RuntimeWarnings: the
    message now names stream.eps, the per-report budget and the floor (EPS_MIN), and
    nothing is printed."""
    import warnings

    with warnings.catch_warnings(record=True) as caught_warnings:
        warnings.simplefilter("always")
        message = _refused(STREAM.replace("eps = 2.0", "eps = 1e-20"))
    assert message.startswith("stream.eps:"), message
    assert "stream.eps / stream.w = 1e-20 / 5" in message and "1e-12" in message, message
    assert not [w for w in caught_warnings if issubclass(w.category, RuntimeWarning)]
