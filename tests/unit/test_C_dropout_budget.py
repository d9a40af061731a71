"""``audit all`` audits ``cadr-theta-count-dropout`` at ONE of its budgets (helper C).

The entry exists for the dropout margin of ``noise_parties`` (ε-independent logic); the
mechanism itself is audited at every budget by ``cadr-theta-count``, and the planted bug
shows most at ε near 2 (docs/audit.md, "cadr-theta-count-dropout"). So ``audit all`` runs
it once, at the listed budget nearest 2 on a log scale (ties: the larger), and the
family-wise γ is divided over the audits that actually run."""

import pytest
from ldpfleet.app.audit_cli import audit_all, audit_tasks
from ldpfleet.collector.audit import battery
from ldpfleet.collector.audit.cadr_count_canary import DROPOUT_AUDIT_EPS

DROPOUT = "cadr-theta-count-dropout"


def test_the_dropout_entry_runs_once_at_the_budget_nearest_two():
    assert DROPOUT_AUDIT_EPS == 2.0
    assert battery.audit_all_budgets(DROPOUT, (0.5, 1.0, 2.0)) == (2.0,)
    assert battery.audit_all_budgets(DROPOUT, (1.0,)) == (1.0,)
    assert battery.audit_all_budgets(DROPOUT, (0.1, 8.0)) == (8.0,)  # ln 4 < ln 20
    assert battery.audit_all_budgets(DROPOUT, (1.0, 4.0)) == (4.0,)  # a tie: the larger
    assert battery.audit_all_budgets(DROPOUT, (0.0, 3.0)) == (3.0,)
    assert battery.audit_all_budgets(DROPOUT, (0.0,)) == (0.0,)  # refused when built


def test_every_other_entry_runs_at_every_budget():
    budgets = (0.5, 1.0, 2.0)
    for name in battery.BATTERY:
        if name != DROPOUT:
            assert battery.audit_all_budgets(name, budgets) == budgets, name


def test_the_default_battery_is_94_audits():
    from ldpfleet.app.audit_cli import _battery

    names = tuple(_battery().BATTERY)
    # degree-clip (helper P) made 29 entries 30, secagg-dropout (helper S) 31,
    # gcdp-partitioned (helper G3) 32
    assert len(names) == 32
    tasks = audit_tasks((0.5, 1.0, 2.0), None)
    assert len(tasks) == 3 * 32 - 2 == 94
    assert [e for m, e in tasks if m == DROPOUT] == [2.0]
    assert [m for m, _ in tasks] == sorted((m for m, _ in tasks), key=names.index)


def test_gamma_is_divided_over_the_audits_that_run():
    rows = audit_all((0.5, 1.0, 2.0), trials=20, gamma=0.05, seed=0, mechanisms=("rr", DROPOUT))
    assert [(r["mechanism"], r["eps_claimed"]) for r in rows] == [
        ("rr", 0.5),
        ("rr", 1.0),
        ("rr", 2.0),
        (DROPOUT, 2.0),
    ]
    assert all(r["gamma"] == pytest.approx(0.05 / 4) for r in rows)
