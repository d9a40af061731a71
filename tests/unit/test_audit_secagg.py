"""The secure-aggregation server's view as an audited mechanism
(collector/audit/secagg_view.py): claim eps = 0, the correct machines are inconclusive, a
client that skips its pairwise masks is caught."""

from __future__ import annotations

import json

import numpy as np
import typer
from ldpfleet.app.audit_cli import audit_command
from ldpfleet.collector.audit.battery import build_spec, run_audit
from ldpfleet.collector.audit.mutants import secagg_skips_pairwise
from ldpfleet.collector.audit.secagg_view import (
    ABORTED,
    MODULUS,
    SECAGG_CLIENTS,
    secagg_session,
    secagg_witnesses,
    view_columns,
)
from typer.testing import CliRunner


def client0_skips_pairwise_masks(mp) -> None:
    """Planted bug: device dev00 sends encode(x) + PRG(b) only (the mutation run's own
    mutant, planted with pytest's monkeypatch)."""
    secagg_skips_pairwise(mp)


def test_view_row_is_consistent():
    n = SECAGG_CLIENTS
    row = secagg_session(np.array([1.0, 0.0, 0.0]), np.random.default_rng(0))
    assert row.shape == (len(view_columns()),) == (2 * n + 1,)
    assert np.all((row[: 2 * n] >= 0) & (row[: 2 * n] < MODULUS))
    assert row[-1] == 1.0  # the sum
    # the unmasked values still carry the pairwise masks, which cancel in their sum
    assert int(row[n : 2 * n].sum()) % MODULUS == 1


def test_bugged_client_is_read_in_the_clear(monkeypatch):
    client0_skips_pairwise_masks(monkeypatch)
    row = secagg_session(np.array([1.0, 0.0, 0.0]), np.random.default_rng(0))
    assert row[SECAGG_CLIENTS] == 1.0  # y_0 - PRG(b_0) = encode(x_0)
    assert row[-1] == ABORTED  # the total is corrupt: the server refuses it


def test_witnesses_on_hand_made_rows():
    w = secagg_witnesses(3)
    y = np.array([[5.0, 7.0, 1.0, 10.0, 3.0, 9.0, 1.0]])
    assert w["masked 0"](y)[0] == 5.0 and w["masked 1"](y)[0] == 7.0
    assert w["masked 0 - masked 1"](y)[0] == MODULUS - 2
    assert w["unmasked 0"](y)[0] == 10.0 and w["unmasked 1"](y)[0] == 3.0
    assert w["unmasked 0 - unmasked 1"](y)[0] == 7.0 and w["sum"](y)[0] == 1.0


def test_claim_is_zero_whatever_eps_is_passed():
    for eps in (0.0, 0.5, 2.0):
        assert build_spec("secagg", eps).eps == 0.0


def test_correct_protocol_is_inconclusive_and_the_planted_bug_is_caught(monkeypatch):
    correct = run_audit("secagg", 0.0, trials=600, gamma=0.05, seed=0)
    assert correct.verdict == "inconclusive" and correct.eps_claimed == 0.0, correct
    client0_skips_pairwise_masks(monkeypatch)
    broken = run_audit("secagg", 0.0, trials=200, gamma=0.05, seed=0)
    assert broken.verdict == "violation" and broken.eps_lb > 2.0, broken
    assert broken.witness.startswith("unmasked")


def test_command_runs_secagg_at_eps_0():
    app = typer.Typer()
    app.command()(audit_command)
    result = CliRunner().invoke(app, ["secagg", "--eps", "0", "--trials", "200"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["eps_claimed"] == 0.0
