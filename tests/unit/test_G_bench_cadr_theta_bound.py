"""``bench cadr --theta T`` above the run's degree bound D is refused on every transport,
naming the options (helper G's user trial, 2026-12-06): the in-process reference ran it
(``--theta 200`` on a 100-node star, D = 99: MAE 2.94 against all zeros' 1.98, no word) and
a fleet transport refused it as "theta: must be <= ..." naming no option."""

from __future__ import annotations

import json

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

STAR = ["bench", "cadr", "--runs", "1"]


@pytest.fixture
def star(tmp_path):
    path = tmp_path / "star.txt"
    path.write_text("".join(f"0 {k}\n" for k in range(1, 100)))  # n = 100, D = 99
    return str(path)


@pytest.mark.parametrize("transport", ["reference", "memory"])
def test_theta_above_the_bound_is_refused_naming_the_options(star, transport) -> None:
    result = CliRunner().invoke(
        app, [*STAR, "--graph", star, "--theta", "200", "--transport", transport]
    )
    assert result.exit_code == 2, (result.exit_code, result.output)
    text = " ".join(result.stderr.split())
    assert text == (
        "error: --theta must be <= the degree bound D = 99 (devices), got 200: "
        "lower --theta or raise --degree-bound"
    )


def test_the_bound_of_the_run_decides(star) -> None:
    """θ = D runs; a raised --degree-bound lets θ above the old D run; under --pipeline
    paper D is the graph's maximum; --non-private (no devices, no D) keeps any θ."""
    runner = CliRunner()
    ok = runner.invoke(app, [*STAR, "--graph", star, "--theta", "99"])
    assert ok.exit_code == 0 and json.loads(ok.stdout)["theta"] == [99]
    raised = runner.invoke(app, [*STAR, "--graph", star, "--theta", "120", "--degree-bound", "150"])
    assert raised.exit_code == 0 and json.loads(raised.stdout)["degree_bound"] == 150
    paper = runner.invoke(app, [*STAR, "--graph", star, "--theta", "120", "--pipeline", "paper"])
    assert paper.exit_code == 2 and "D = 99 (graph-max), got 120" in paper.stderr
    flat = runner.invoke(
        app, [*STAR, "--graph", star, "--theta", "120", "--non-private", "--method", "ll"]
    )
    assert flat.exit_code == 0 and json.loads(flat.stdout)["mode"] == "non-private"


def test_the_fleet_size_refusal_names_the_options(tmp_path) -> None:
    """A θ search over more devices than one secure-sum session takes printed "error:
    devices: ... give an integer theta" on a fleet transport (no option named)."""
    path = tmp_path / "path.txt"
    path.write_text("".join(f"{k} {k + 1}\n" for k in range(10_000)))  # 10,001 devices
    result = CliRunner().invoke(app, [*STAR, "--graph", str(path), "--transport", "memory"])
    assert result.exit_code == 2, (result.exit_code, result.output)
    text = " ".join(result.stderr.split())
    assert text.startswith("error: --graph: the fleet's θ search is one secure sum"), text
    assert "this graph has 10,001: give an integer --theta" in text, text


FLEET_ONLY = {"broker", "ledger_exact", "max_kept_degree", "messages", "processes"}


@pytest.mark.parametrize("graph", ["tiny", "searched"])
def test_reference_and_fleet_print_the_same_figure_keys(tmp_path, graph) -> None:
    """A small-fleet run (no θ search) had no ``theta_search`` in process (the fleet: null);
    the fleet had no ``histogram_l1`` (the reference: = distribution_l1)."""
    path = tmp_path / "g.txt"
    n = 10 if graph == "tiny" else 60
    path.write_text("".join(f"{k} {(k + 1) % n}\n{k} {(k + 3) % n}\n" for k in range(n)))
    keys = {}
    for transport in ("reference", "memory"):
        out = CliRunner().invoke(app, [*STAR, "--graph", str(path), "--transport", transport])
        assert out.exit_code == 0, out.output
        keys[transport] = json.loads(out.stdout)
    ref, fleet = keys["reference"], keys["memory"]
    assert set(fleet) - set(ref) - {"stage_seconds"} == FLEET_ONLY
    assert set(ref) - set(fleet) == set()
    assert fleet["histogram_l1"] == fleet["distribution_l1"]
    searched = graph == "searched"
    assert (ref["theta_search"] is not None) == (fleet["theta_search"] is not None) == searched
