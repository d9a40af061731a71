"""Helper R's review (round 3): ``ldpfleet audit --eps`` reads each budget with Python's
``float``, which takes digit-grouping underscores: ``--eps 0_5`` (a typo for 0.5) audits
eps = 5 and ``--eps 1_0`` eps = 10, both inside [1e-12, 50], so nothing is refused. The
CSV sources refuse ``1_000`` as a number (docs/scenarios.md: "no digit-grouping _"); a
claimed budget ten times the intended one should be refused as a bad --eps (exit 2)."""

import pytest
from ldpfleet.app.cli import app
from ldpfleet.collector.audit import battery
from typer.testing import CliRunner


@pytest.fixture
def nothing_runs(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("an audit ran with an --eps read through its underscores")

    monkeypatch.setattr(battery, "audit_spec", refuse)


@pytest.mark.parametrize("typed", ["0_5", "1_0", "2_5"])
def test_a_budget_with_an_underscore_is_refused(typed, nothing_runs):
    result = CliRunner().invoke(app, ["audit", "laplace", f"--eps={typed}", "--quiet"])
    assert result.exit_code == 2, result.output
    assert "--eps" in result.output
