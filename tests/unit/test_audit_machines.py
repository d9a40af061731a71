"""Canaries through the running machines (collector/audit/machine_canaries.py) and the
mutation run (collector/audit/mutants.py, ``ldpfleet audit mutants``).

Error rates. The honest audits run at gamma = 1e-6 FAMILY-WISE (1e-6 / 9 per audit,
Bonferroni over the 9 audits of the test): a correct machine fails the test with
probability <= 1e-6 over the seed (Clopper-Pearson coverage), and for the fixed seed the
outcome is deterministic. The planted bugs are audited at gamma = 0.05 / m for the m
audits of their test: there the test fails only if the audit lacks the power to catch the
bug (deterministic for the fixed seed; measured eps_LB in docs/audit.md, well above the
claim)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import typer
from ldpfleet.app.audit_cli import audit_all, audit_command, audit_mutants, mutants_markdown
from ldpfleet.collector.audit import mutant_plugin
from ldpfleet.collector.audit.battery import BATTERY, run_audit
from ldpfleet.collector.audit.machine_canaries import (
    MACHINE_BATTERY,
    cadr_dsr_release,
    lpea_answer,
    over_asked_stream,
)
from ldpfleet.collector.audit.mutants import (
    ENV_VAR,
    MUTANTS,
    Mutant,
    mutant_named,
    planted,
    run_mutant,
)
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.laplace import LaplaceMechanism
from typer.testing import CliRunner

HONEST_GAMMA = 1e-6 / 15  # false failure 1e-6 over the 5 machine entries x 3 eps (Bonferroni)


def test_machine_entries_are_in_the_battery():
    assert set(MACHINE_BATTERY) <= set(BATTERY)


@pytest.mark.parametrize("entry", list(MACHINE_BATTERY))
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_honest_machines_are_inconclusive_at_their_claims(entry, eps):
    result = run_audit(entry, eps, gamma=HONEST_GAMMA, seed=0)
    assert result.verdict == "inconclusive", result
    assert result.eps_lb <= eps


def test_the_canaries_read_what_the_machines_publish():
    rng = np.random.default_rng(0)
    assert lpea_answer(1.0, False, rng) in (0, 1)
    # kept theta vs 0: the released degrees centre on 4 and 0
    high = np.mean([cadr_dsr_release(1.0, 4, rng) for _ in range(200)])
    low = np.mean([cadr_dsr_release(1.0, 0, rng) for _ in range(200)])
    assert high - low > 2.0  # 200 draws of Laplace(4 / 1): sd of each mean 0.4, gap 4
    # the correct ledger grants step 0 and refuses step 1 (eps asked per step, w = 2)
    values = over_asked_stream(1.0, 0.0, rng)
    assert values.shape == (2,) and values[1] == -1.0 and values[0] != -1.0


@pytest.mark.parametrize(
    ("mutant", "caught_by", "passed_by"),
    [
        ("lpea builds WarnerRR(2 eps)", "lpea-answer", "rr"),
        ("ledger allows 2x the window", "stream-ledger", "stream"),
        ("ledger forgets a window edge", "stream-ledger", "stream"),
        ("ledger checks only a run's first step", "stream-ledger", "stream"),
        ("sw one uniform per batch", "stream-batch", "stream"),
        ("laplace one noise draw per batch", "stream-batch-laplace", "laplace"),
        ("dsr eps off by 2x", "cadr-dsr", None),
    ],
)
def test_machine_canaries_catch_the_bugs_the_function_level_entries_miss(
    mutant, caught_by, passed_by
):
    with planted(mutant_named(mutant)):
        broken = run_audit(caught_by, 1.0, gamma=0.05 / 2, seed=0)
        missed = None if passed_by is None else run_audit(passed_by, 1.0, gamma=0.05 / 2, seed=0)
    assert broken.verdict == "violation" and broken.eps_lb > 1.0, broken
    if missed is not None:  # the old canary calls the class directly: blind to the bug
        assert missed.verdict == "inconclusive", missed


def test_planting_is_in_process_and_undone():
    mutant = mutant_named("laplace eps off by 2x")
    with planted(mutant):
        assert LaplaceMechanism(1.0).scale == 0.5
    assert LaplaceMechanism(1.0).scale == 1.0


def test_at_least_twelve_mutants_with_unique_names_and_reasons_for_the_known_misses():
    names = [m.name for m in MUTANTS]
    assert len(names) >= 36 and len(set(names)) == len(names)
    assert all(m.missed or m.audits for m in MUTANTS)  # each names its audit or its miss
    with pytest.raises(ParameterError) as info:
        mutant_named("no such bug")
    assert info.value.field == "mutant"


def test_mutant_rows_audit_only():
    rows = audit_mutants(("rr eps off by 2x", "laplace noise subtracted (sign)"), tests=False)
    caught, harmless = rows
    assert caught["caught_by"] == "audit" and caught["audits"][0]["verdict"] == "violation"
    assert harmless["caught_by"] == "not run" and harmless["missed"]
    table = mutants_markdown(rows)
    assert table.count("\n") == 3 and "| rr eps off by 2x | rr: " in table


def test_the_plugin_plants_the_mutant_named_in_the_environment(monkeypatch):
    monkeypatch.setenv(ENV_VAR, "laplace eps off by 2x")
    mutant_plugin.pytest_configure(None)
    try:
        assert LaplaceMechanism(1.0).scale == 0.5
    finally:
        mutant_plugin.pytest_unconfigure(None)
    assert LaplaceMechanism(1.0).scale == 1.0


def test_the_test_run_sees_the_mutant_in_a_subprocess(tmp_path):
    (tmp_path / "test_probe.py").write_text(
        "from ldpfleet.protocol.laplace import LaplaceMechanism\n\n\n"
        "def test_scale():\n    assert LaplaceMechanism(1.0).scale == 1.0\n"
    )
    real = mutant_named("laplace eps off by 2x")
    probe = Mutant(real.name, real.description, real.plant, tests=("test_probe.py",))
    row = run_mutant(probe, gamma=0.05, audit=False, root=tmp_path, timeout=120)
    assert row["tests"]["status"] == "failed"
    assert row["tests"]["failed"] == "test_probe.py::test_scale"
    assert row["caught_by"] == "tests only"


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(audit_command)
    return app


def test_command_runs_the_mutants_and_refuses_unknown_ones():
    runner = CliRunner()
    ok = runner.invoke(
        _app(), ["mutants", "--only", "sw eps off by 2x", "--no-tests", "--progress"]
    )
    assert ok.exit_code == 0, ok.output
    (row,) = json.loads(ok.stdout)
    assert row["caught_by"] == "audit" and "audit 1 of 1: sw eps off by 2x" in ok.stderr
    bad = runner.invoke(_app(), ["mutants", "--only", "nope", "--no-tests"])
    assert bad.exit_code == 2


def test_audit_all_reports_progress_before_each_audit():
    seen = []
    rows = audit_all(
        (0.5, 1.0),
        trials=200,
        gamma=0.05,
        seed=0,
        mechanisms=("rr", "lpea-answer"),
        progress=lambda i, m, label: seen.append((i, m, label)),
    )
    assert len(rows) == 4
    assert seen == [
        (1, 4, "rr (eps 0.5)"),
        (2, 4, "rr (eps 1)"),
        (3, 4, "lpea-answer (eps 0.5)"),
        (4, 4, "lpea-answer (eps 1)"),
    ]


def test_worker_processes_give_the_same_rows_in_the_same_order():
    args = {"trials": 200, "gamma": 0.05, "seed": 1, "mechanisms": ("rr", "cadr-dsr", "sw")}
    seen = []
    pooled = audit_all((1.0, 2.0), jobs=2, progress=lambda i, m, label: seen.append((i, m)), **args)
    alone = audit_all((1.0, 2.0), jobs=1, **args)
    assert all(row["cpu_seconds"] >= 0 for row in pooled + alone)

    def without_cpu(rows):
        return [{k: v for k, v in row.items() if k != "cpu_seconds"} for row in rows]

    assert without_cpu(pooled) == without_cpu(alone)
    assert seen == [(i, 6) for i in range(1, 7)]
    with pytest.raises(ParameterError) as info:
        audit_all((1.0,), jobs=0, **args)
    assert info.value.field == "jobs"
