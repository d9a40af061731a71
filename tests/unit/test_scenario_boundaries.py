"""Boundary sweep of docs/scenario-reference.md (brief A, item 4): files written from the
reference alone with a value at a limit, just inside and just outside. What the sweep
found wrong, each fixed with its test here."""

from __future__ import annotations

import pytest
from ldpfleet.app.cli import app
from ldpfleet.scenarios.schema import parse_scenario
from typer.testing import CliRunner

from tests.unit.test_scenario_heldout import _refused

STREAM = """\
[scenario]
name = "b"
[fleet]
devices = 4
[stream]
steps = {steps}
eps = 50.0
w = {w}
[source]
kind = "synthetic"
bounds = [0.0, 1.0]
"""


@pytest.mark.parametrize(("w", "steps"), [(4097, 5000), (5000, 10_000), (100_000, 200_000)])
def test_a_window_above_the_batch_limit_loads_without_batch_steps(w, steps):
    """Old: w = 5,000 (the reference allows w <= 100,000) without batch_steps was refused
    as "stream.batch_steps: must be an integer in [1, 4096]", a key the file did not set:
    the default batch was one window, min(w, steps), uncapped. Now min(w, steps, 4096)."""
    loaded = parse_scenario(STREAM.format(w=w, steps=steps))
    assert loaded.stream_config("r").batch_steps == 4096
    assert parse_scenario(STREAM.format(w=4096, steps=5000)).stream_config("r").batch_steps == 4096
    # w = 10 > steps = 5 is refused on load (tests/unit/test_bulk_user_limits.py)


CADR = """\
[scenario]
name = "c"
[graph]
source = "barabasi_albert:n=30,m=2,seed=1"
[cadr]
processes = 1
{cadr}"""


def test_auto_sum_under_the_dp_pipeline_is_refused_with_exit_2_and_no_folder(tmp_path):
    """Old: `ldpfleet run` died with a bare ValueError traceback (exit 1) and left its
    output folder. "auto-sum" is the paper pipeline's θ rule: now a typed refusal naming
    theta on load (exit 2), and no folder is made."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(CADR.format(cadr='theta = "auto-sum"\n'))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(scenario), "-b", "memory", "-o", str(out)])
    assert result.exit_code == 2, result.output
    assert 'theta: "auto-sum"' in result.output and 'pipeline = "paper"' in result.output
    assert not out.exists()


def test_auto_sum_under_the_dp_pipeline_is_refused_on_load():
    message = _refused(CADR.format(cadr='theta = "auto-sum"\n'))
    assert message.startswith("cadr.theta:") and '"auto-sum"' in message, message


@pytest.mark.parametrize(
    ("cadr", "bound"),
    [
        ("theta = 30\n", "D = 29 (devices)"),  # n - 1 of the generator's n = 30
        ("theta = 1000\n", "D = 29 (devices)"),
        ("theta = 6\ndegree_bound = 5\n", "D = 5 (configured)"),
        ('theta = 30\ndegree_bound = "devices"\npipeline = "paper"\n', "D = 29 (devices)"),
    ],
)
def test_a_given_theta_above_the_degree_bound_is_refused_on_load(cadr, bound):
    """Old: loaded, then the run refused it as "theta: must be <= the degree bound"
    (no file, no [cadr]) after connecting the fleet. The reference says theta >= 1 only."""
    message = _refused(CADR.format(cadr=cadr))
    assert message.startswith("cadr.theta:") and bound in message, message
    assert f"got {cadr.split()[2]}" in message, message


@pytest.mark.parametrize(
    "cadr",
    [
        "theta = 29\n",  # at the bound
        "theta = 5\ndegree_bound = 5\n",
        'theta = 1000\ndegree_bound = "graph-max"\n',  # the graph's maximum: the run checks
        'theta = 1000\npipeline = "paper"\n',  # "auto" is then "graph-max"
    ],
)
def test_a_given_theta_within_a_known_bound_loads(cadr):
    parse_scenario(CADR.format(cadr=cadr))


def test_a_credit_window_above_max_in_flight_is_refused_on_load():
    """Old: credit_window = 4096 (the reference's limit) loaded against the default
    max_in_flight = 256 and the run died with a ParameterError traceback."""
    text = STREAM.format(w=5, steps=60) + "[collector]\ncredit_window = 4096\n"
    message = _refused(text)
    assert message.startswith("collector.credit_window:"), message
    assert "max_in_flight (256" in message and "got 4096" in message, message
    parse_scenario(text.replace("4096", "256"))
    parse_scenario(text + "max_in_flight = 4096\n")


def test_a_union_with_an_on_load_rule_still_lists_its_allowed_values():
    """theta's type is wrapped with its on-load rule; a misspelt rule still gets the
    allowed values and a did-you-mean."""
    message = _refused(CADR.format(cadr='theta = "auto_dev"\n'))
    assert 'allowed: "auto-dev", "auto-sum" or a number' in message, message
    assert 'did you mean "auto-dev"' in message, message
