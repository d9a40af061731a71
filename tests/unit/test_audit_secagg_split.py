"""The SecAgg+ split-graph canary (collector/audit/secagg_split_canary.py), the battery's
``secagg-split`` entry: the real server on a 6-device ring cut in two by two announced
dropouts must abort every session (never release a sum over a disconnected survivor set),
and the planted bug that disables its split check is caught by the audit.

Statistics. The honest server's view is the constant row (-1, -1, -1) in both worlds, so
its audit cannot certify eps_LB > 0 at any gamma: the honest test's false-failure
probability is exactly 0 (not merely ~1e-6). The mutant's part sums are (1, 0) vs (0, 1)
in EVERY session (deterministic, not a tail event): with n evaluation runs per world the
bound is ln(alpha_lo / beta_hi), alpha_lo = (gamma/2)^(1/n), beta_hi = 1 - alpha_lo,
positive iff n > ln(gamma/2) / ln(1/2) — 25 runs at gamma = 1e-6, used below with 30 + 30,
so the mutant is caught with probability 1 (any failure is a bug, not chance).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import typer
from ldpfleet.app.audit_cli import audit_command, audit_mutants
from ldpfleet.collector.audit.battery import BATTERY, build_spec, run_audit
from ldpfleet.collector.audit.mutants import (
    mutant_named,
    planted,
    secagg_unmasks_a_split_graph,
)
from ldpfleet.collector.audit.secagg_split_canary import (
    ABORTED,
    CANARY_POSITIONS,
    DROP_POSITIONS,
    SPLIT_COLUMNS,
    ring_order,
    split_ring_session,
)
from ldpfleet.collector.audit.stats import runs_to_certify
from ldpfleet.protocol.secagg import graph as graphs
from typer.testing import CliRunner

MUTANT = "secagg unmasks a split survivors' graph"


@pytest.mark.parametrize("seed", range(8))
def test_every_honest_session_aborts_at_the_masked_close_on_a_split_ring(seed):
    """The real server refuses to unmask: no sum, no part sum, no unmask request."""
    rng = np.random.default_rng(seed)
    for one_at in CANARY_POSITIONS:
        session = split_ring_session(one_at, rng)
        server = session.server
        parts = graphs.components(server.neighbours, server.u2 - _dropped_labels(session))
        assert len(parts) == 2 and sorted(map(len, parts)) == [2, 2]
        assert session.aborted is not None and session.aborted.startswith(
            "masked stage: cannot unmask: the survivors' graph splits into 2 parts"
        )
        assert session.released is None and not session.revealed
        assert list(session.row()) == [ABORTED] * len(SPLIT_COLUMNS)


def _dropped_labels(session) -> set[int]:
    return {session.ring[p] for p in DROP_POSITIONS}


def test_the_canary_places_the_inputs_and_dropouts_by_ring_position():
    session = split_ring_session(0, np.random.default_rng(1))
    server, ring = session.server, session.ring
    assert sorted(ring) == sorted(server.device_of)
    for i, label in enumerate(ring):  # consecutive positions are neighbours: a cycle
        assert ring[(i + 1) % len(ring)] in server.neighbours[label]
    devices = [server.device_of[label] for label in ring]
    assert session.dropping == {devices[p] for p in DROP_POSITIONS}
    assert [session.inputs[d] for d in devices] == [1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    # each arc alone is unmaskable: every secret keeps t live holders (only the split
    # check stops the session)
    assert server.threshold == 2


def test_ring_order_refuses_what_is_not_one_cycle():
    two_triangles = {1: {2, 3}, 2: {1, 3}, 3: {1, 2}, 4: {5, 6}, 5: {4, 6}, 6: {4, 5}}
    with pytest.raises(ValueError, match="single cycle"):
        ring_order({k: frozenset(v) for k, v in two_triangles.items()})


def test_with_the_split_check_disabled_the_server_reveals_each_part(monkeypatch):
    """The planted bug, session by session: a sum is released over two parts, and the
    server's own arithmetic on what it received gives each part's sum."""
    secagg_unmasks_a_split_graph(monkeypatch)
    rng = np.random.default_rng(2)
    for one_at, expected in ((0, [1.0, 1.0, 0.0]), (3, [1.0, 0.0, 1.0])):
        session = split_ring_session(one_at, rng)
        assert session.aborted is None
        assert len(graphs.components(session.server.neighbours, session.survivors)) == 2
        assert list(session.row()) == expected


def test_the_entry_is_in_the_battery_right_after_secagg_and_claims_zero():
    names = list(BATTERY)
    assert names[names.index("secagg") + 1] == "secagg-split"
    for eps in (0.0, 0.5, 2.0):
        assert build_spec("secagg-split", eps).eps == 0.0


def test_honest_entry_is_inconclusive_and_never_certifies_anything():
    result = run_audit("secagg-split", 1.0, trials=60, gamma=1e-6, seed=0)
    assert result.verdict == "inconclusive"
    assert result.eps_lb <= 0.0


def test_the_planted_bug_is_a_violation(monkeypatch):
    """Fails on a server without the split check (the mutant): with 30 + 30 runs per world
    at gamma = 1e-6 (25 evaluation runs certify eps_LB > 0 for a deterministic leak)."""
    assert runs_to_certify(0.0, gamma=1e-6) <= 30
    secagg_unmasks_a_split_graph(monkeypatch)
    result = run_audit("secagg-split", 1.0, trials=60, gamma=1e-6, seed=0)
    assert result.verdict == "violation", result.to_dict()
    assert result.eps_lb > 0.0
    assert result.witness in ("part sum at position 0", "part 0 minus part 3")


def test_the_mutation_run_catches_it_by_the_audit():
    """``ldpfleet audit mutants --only "<the mutant>" --no-tests``: caught by the audit."""
    (row,) = audit_mutants((MUTANT,), tests=False, gamma=0.05)
    assert row["caught_by"] == "audit", row
    assert row["audits"][0]["entry"] == "secagg-split"
    mutant = mutant_named(MUTANT)
    assert mutant.tests == ("tests/unit/test_secagg_user_partial_sums.py",)
    with planted(mutant):  # and restored after the block
        assert split_ring_session(0, np.random.default_rng(3)).aborted is None
    assert split_ring_session(0, np.random.default_rng(3)).aborted is not None


def test_audit_all_only_the_entry_reads_like_every_row():
    app = typer.Typer()
    app.command()(audit_command)
    result = CliRunner().invoke(
        app,
        ["all", "--only", "secagg-split", "--eps", "1", "--trials", "40", "--markdown", "--quiet"],
    )
    assert result.exit_code == 0, result.output
    (row,) = [line for line in result.output.splitlines() if line.startswith("| secagg-split")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert len(cells) == 9 and cells[2:4] == ["0", "0"] and cells[-1] == "inconclusive"
    assert cells[5] == "20 + 20"
    json_run = CliRunner().invoke(app, ["secagg-split", "--trials", "40", "--quiet"])
    assert json_run.exit_code == 0, json_run.output
    assert json.loads(json_run.stdout)["eps_claimed"] == 0.0
