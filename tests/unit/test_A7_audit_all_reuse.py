"""``audit all`` runs an entry whose audit does not depend on the budget once, and copies
its row to the other budgets (helper A, claim A6: ``app.audit_cli.same_audit_as``).

The entries that claim eps = 0 whatever budget is passed (``ZERO_CLAIM_ENTRIES``:
``secagg``, ``secagg-split``) build the same canary at every budget, so their audits at
one seed, delta, trials and gamma are the same run: the copied rows must be exactly the
rows each audit gives when run alone, sequentially and in worker processes."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.app.audit_cli import _battery, _one_audit, audit_all, same_audit_as
from ldpfleet.collector.audit.core import ZERO_CLAIM_ENTRIES


@pytest.mark.parametrize("entry", ZERO_CLAIM_ENTRIES)
def test_a_zero_claim_entry_draws_the_same_samples_at_every_budget(entry):
    battery = _battery()
    specs = [battery.build_spec(entry, eps) for eps in (0.5, 1.0, 2.0, 7.0)]
    assert {spec.eps for spec in specs} == {0.0}
    assert len({tuple(spec.witnesses) for spec in specs}) == 1
    assert len({spec.trials for spec in specs}) == 1
    for world in ("sample_d", "sample_dprime"):
        drawn = [getattr(spec.canary, world)(np.random.default_rng(5), 3) for spec in specs]
        assert all(np.array_equal(drawn[0], other) for other in drawn[1:])


def test_only_zero_claim_entries_at_the_same_settings_are_shared():
    args = [
        ("secagg", 0.5, 0.0, None, 0.01, 0),
        ("rr", 0.5, 0.0, None, 0.01, 0),
        ("secagg", 1.0, 0.0, None, 0.01, 0),
        ("rr", 1.0, 0.0, None, 0.01, 0),
        ("secagg", 2.0, 0.0, None, 0.01, 1),  # another seed: its own run
        ("secagg-split", 2.0, 0.0, None, 0.01, 0),
    ]
    assert same_audit_as(args) == [0, 1, 0, 3, 4, 5]


def _without_cpu(rows):
    return [{k: v for k, v in row.items() if k != "cpu_seconds"} for row in rows]


@pytest.mark.parametrize("jobs", [1, 2])
def test_the_copied_rows_are_the_rows_of_each_audit_run_alone(jobs):
    eps_list = (0.5, 2.0)
    names = ("secagg-split", "rr")
    seen = []
    rows = audit_all(
        eps_list, trials=20, gamma=0.05, seed=3, mechanisms=names, jobs=jobs,
        progress=lambda i, m, label: seen.append((i, m, label)),
    )  # fmt: skip
    alone = [_one_audit((m, e, 0.0, 20, 0.05 / 4, 3)) for m in names for e in eps_list]
    assert _without_cpu(rows) == _without_cpu(alone)
    assert rows[1]["cpu_seconds"] == 0.0  # the copy of secagg-split at 0.5
    assert [i for i, _, _ in seen] == [1, 2, 3, 4] and {m for _, m, _ in seen} == {4}
    assert sorted(label for _, _, label in seen) == sorted(
        f"{m} (eps {e:g})" for m in names for e in eps_list
    )
