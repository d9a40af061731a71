"""Review (helper G): ``ldpfleet run``'s table for a CADR run under today's small-fleet
rule said ``theta  4 (auto-dev, 0 secure sums)``, as if the configured search had chosen
θ = 4; results.json says ``theta_chosen_by = "small-fleet"`` (θ = ⌈√D⌉, no θ search).
The row now names the rule. Fails on the old code."""

from __future__ import annotations

from ldpfleet.app import cli
from typer.testing import CliRunner

from tests.cadr_fixtures import TINY_SCENARIO


def test_the_run_table_names_the_small_fleet_rule(tmp_path):
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(TINY_SCENARIO.format(method=""))
    result = CliRunner().invoke(
        cli.app, ["run", str(scenario), "-o", str(tmp_path / "out")], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "│ theta " in line)
    assert "4 (small-fleet rule: ⌈√D⌉, no θ search; configured auto-dev)" in row, row


def test_a_searched_theta_keeps_its_row():
    results = {"theta": 7, "theta_rule": "auto-dev", "theta_rounds": 1}
    assert cli._theta_line({**results, "theta_chosen_by": "search"}) == "7 (auto-dev, 1 secure sum)"
    assert cli._theta_line(results) == "7 (auto-dev, 1 secure sum)"  # results before the rule
