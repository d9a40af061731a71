"""The SecAgg self-mask canary under dropouts (collector/audit/secagg_dropout_canary.py),
the battery's ``secagg-dropout`` entry: a device whose masked input reaches the real
server only after the masked stage closed is declared dropped, the survivors reveal its
mask key, and its input stays hidden by its self mask alone; the planted bugs that break
that are caught by the audit.

Statistics. Honest, the worlds' views are identically distributed (the late y_u and y_u
minus its pairwise masks are uniform mod 2^32 in both, the other columns constant), so
the audit certifies eps_LB > 0 with probability at most gamma: at gamma = 1e-6 the honest
test's false-failure rate is <= 1e-6, and with a fixed seed the outcome is fixed. The
caught mutants' witness column is encode(x_u), 1 in D and 0 in D', in EVERY trial (a
deterministic separation, not a tail event): with n evaluation runs per world the bound
is positive iff n > ln(gamma/2) / ln(1/2), 22 at gamma = 1e-6
(``stats.runs_to_certify(0, gamma=1e-6)``); the tests use 30 + 30.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import typer
from ldpfleet.app.audit_cli import audit_command, audit_mutants
from ldpfleet.collector.audit.battery import BATTERY, build_spec, run_audit
from ldpfleet.collector.audit.core import ZERO_CLAIM_ENTRIES
from ldpfleet.collector.audit.mutants import (
    mutant_named,
    planted,
    secagg_reveals_both_shares,
    secagg_skips_self_mask,
    secagg_sums_a_late_masked_input,
)
from ldpfleet.collector.audit.secagg_dropout_canary import (
    ABORTED,
    COLUMNS,
    MODULUS,
    SCENARIOS,
    DropoutSession,
    dropout_columns,
    dropout_row,
)
from ldpfleet.collector.audit.stats import runs_to_certify
from ldpfleet.protocol.secagg import client as client_module
from typer.testing import CliRunner

ENTRY = "secagg-dropout"
SKIPS = "secagg device skips its self mask"
BOTH = "secagg devices reveal both shares of a dropped device"
LATE = "secagg server sums a late masked input"
TRIALS = 60  # 30 + 30 runs per world (22 evaluation runs certify a deterministic leak)


def _recording_seeds(monkeypatch) -> dict[str, bytes]:
    """Wrap the real client's masked input to record each device's self-mask seed b_u."""
    seeds: dict[str, bytes] = {}
    real = client_module.SecAggClient._masked_input

    def recording(self):
        seeds[self.device] = self._seed
        return real(self)

    monkeypatch.setattr(client_module.SecAggClient, "_masked_input", recording)
    return seeds


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
@pytest.mark.parametrize("x", [1.0, 0.0])
def test_the_late_device_is_declared_dropped_and_only_its_self_mask_hides_it(
    scenario, x, monkeypatch
):
    """The real server closes the masked stage without the late device, counts its masked
    input late, asks for its mask key only and sums the survivors (0); the server's own
    arithmetic on what it received gives y_u minus the pairwise masks = x_u + PRG(b_u)."""
    seeds = _recording_seeds(monkeypatch)
    session = DropoutSession(scenario, x, np.random.default_rng(7)).run()
    server, u = session.server, session.late
    dropped = {u} | {server.label_of[d] for d in session.dropping}
    assert session.aborted is None and session.released == 0.0
    assert server.late == 1 and u in server.u2 and u not in server.u3
    assert server.u2 - server.u3 == dropped
    assert {node for node, kind in session.revealed if kind == "s"} == dropped
    assert (u, "b") not in session.revealed  # b_u is never revealed
    late_y, minus_pairwise, minus_all, released = session.row()
    seed = seeds[session.late_device]
    expected = (int(x) + int(client_module.self_mask(seed, 1, 32)[0])) % MODULUS
    assert minus_pairwise == expected and late_y != expected
    assert (minus_all, released) == (ABORTED, 0.0)


def test_the_before_dropout_and_the_ring_are_what_the_docstring_says():
    full5 = DropoutSession(SCENARIOS[1], 1.0, np.random.default_rng(3)).run()
    assert full5.server.threshold == 3 and len(full5.server.u3) == 3
    assert full5.dropping and full5.late_device not in full5.dropping
    assert full5.server.summary()["device_aborts"].keys() == full5.dropping
    ring6 = DropoutSession(SCENARIOS[2], 1.0, np.random.default_rng(3)).run()
    assert ring6.server.graph_kind == "harary" and ring6.server.threshold == 2
    assert len(ring6.server.neighbours[ring6.late]) == 2
    assert set(ring6.revealed[(ring6.late, "s")]) == ring6.server.neighbours[ring6.late]
    assert [session.inputs[session.late_device] for session in (full5, ring6)] == [1.0, 1.0]
    assert sum(full5.inputs.values()) == sum(ring6.inputs.values()) == 1.0


def test_a_row_has_four_columns_per_scenario():
    row = dropout_row(1.0, np.random.default_rng(0))
    assert row.shape == (len(dropout_columns()),) == (4 * len(SCENARIOS),)
    assert dropout_columns()[:4] == [f"full3: {c}" for c in COLUMNS]
    per_scenario = row.reshape(len(SCENARIOS), 4)
    assert np.all((per_scenario[:, :2] >= 0) & (per_scenario[:, :2] < MODULUS))
    assert list(per_scenario[:, 2]) == [ABORTED] * 3 and list(per_scenario[:, 3]) == [0.0] * 3


def test_a_device_without_self_mask_is_read_in_the_clear(monkeypatch):
    secagg_skips_self_mask(monkeypatch)
    for x in (1.0, 0.0):
        per_scenario = dropout_row(x, np.random.default_rng(1)).reshape(len(SCENARIOS), 4)
        assert list(per_scenario[:, 1]) == [x] * 3  # y_u minus its pairwise masks
        assert list(per_scenario[:, 3]) == [ABORTED] * 3  # the survivors' sum is corrupt


def test_devices_revealing_both_shares_give_the_server_x(monkeypatch):
    """The honest server rejects every such response (and aborts): it has read them."""
    secagg_reveals_both_shares(monkeypatch)
    for x in (1.0, 0.0):
        per_scenario = dropout_row(x, np.random.default_rng(1)).reshape(len(SCENARIOS), 4)
        assert list(per_scenario[:, 2]) == [x] * 3
        assert list(per_scenario[:, 3]) == [ABORTED] * 3


def test_a_server_summing_the_late_input_cannot_rebuild_its_self_mask(monkeypatch):
    """The third mutant is accepted by the server (the late device joins U3) but no
    survivor reveals its b-share: the session aborts, nothing about x_u is learnt."""
    secagg_sums_a_late_masked_input(monkeypatch)
    session = DropoutSession(SCENARIOS[0], 1.0, np.random.default_rng(1)).run()
    assert session.late in session.server.u3 and session.server.late == 0
    assert session.aborted == "unmask stage: shares: need 2 shares to reconstruct, got 0"
    assert session.row()[2:] == [ABORTED, ABORTED]


def test_the_entry_is_in_the_battery_after_secagg_split_and_claims_zero():
    names = list(BATTERY)
    assert names[names.index("secagg-split") + 1] == ENTRY
    assert ENTRY in ZERO_CLAIM_ENTRIES
    for eps in (0.0, 0.5, 2.0):
        assert build_spec(ENTRY, eps).eps == 0.0


def test_honest_entry_is_inconclusive():
    """False failure <= gamma = 1e-6 (module docstring)."""
    result = run_audit(ENTRY, 1.0, trials=TRIALS, gamma=1e-6, seed=0)
    assert result.verdict == "inconclusive", result.to_dict()
    assert result.eps_lb <= 0.0


@pytest.mark.parametrize(
    ("name", "witness"),
    [(SKIPS, "late y - pairwise"), (BOTH, "late y - all masks")],
)
def test_each_planted_leak_is_a_violation(name, witness):
    assert runs_to_certify(0.0, gamma=1e-6) <= TRIALS // 2
    with planted(mutant_named(name)):
        result = run_audit(ENTRY, 1.0, trials=TRIALS, gamma=1e-6, seed=0)
    assert result.verdict == "violation", result.to_dict()
    assert result.eps_lb > 0.0 and result.witness.endswith(witness)


def test_the_late_input_mutant_is_a_documented_miss():
    mutant = mutant_named(LATE)
    assert mutant.missed and mutant.audits == ((ENTRY, 0.0),)
    with planted(mutant):
        result = run_audit(ENTRY, 1.0, trials=TRIALS, gamma=1e-6, seed=0)
    assert result.verdict == "inconclusive", result.to_dict()


def test_the_mutation_run_catches_the_self_mask_bug_by_the_audit():
    """``ldpfleet audit mutants --only "<the mutant>" --no-tests``: caught by the audit."""
    (row,) = audit_mutants((SKIPS,), tests=False, gamma=0.05)
    assert row["caught_by"] == "audit", row
    assert row["audits"][0]["entry"] == ENTRY


def test_audit_all_only_the_entry_reads_like_every_row():
    app = typer.Typer()
    app.command()(audit_command)
    result = CliRunner().invoke(
        app, ["all", "--only", ENTRY, "--eps", "1", "--trials", "40", "--markdown", "--quiet"]
    )
    assert result.exit_code == 0, result.output
    (row,) = [line for line in result.output.splitlines() if line.startswith(f"| {ENTRY} ")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert len(cells) == 9 and cells[2:4] == ["0", "0"] and cells[-1] == "inconclusive"
    assert cells[5] == "20 + 20"
    json_run = CliRunner().invoke(app, [ENTRY, "--eps", "0", "--trials", "40", "--quiet"])
    assert json_run.exit_code == 0, json_run.output
    assert json.loads(json_run.stdout)["eps_claimed"] == 0.0
