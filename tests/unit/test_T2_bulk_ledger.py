"""``protocol.bulk.BulkLedger`` against a brute-force w-event ledger (helper T2's
planted-bug hunt, round 2): every granted run keeps every window of ``w`` consecutive
steps within ``eps``, every refused run would not have, and a step is never charged
twice."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.protocol.bulk import BulkLedger
from ldpfleet.protocol.errors import LocalProtocolError


def _fits(spent: dict[int, float], t0: int, count: int, eps0: float, eps: float, w: int) -> bool:
    trial = dict(spent)
    for t in range(t0, t0 + count):
        trial[t] = eps0
    last = t0 + count - 1
    return all(
        sum(trial.get(s, 0.0) for s in range(end - w + 1, end + 1)) <= eps * (1 + 1e-9)
        for end in range(0, last + 1)
    )


def test_a_run_is_granted_iff_every_window_stays_within_eps():
    """Kills B1 (a step charged just before the run forgotten: ``gap >= k``) and B3 (the
    window test loosened by one step's charge), both also caught by
    test_bulk_protocol.py, and any other window miscount: random
    runs of 4 devices (gaps, counts, per-step charges) against a brute-force ledger."""
    rng = np.random.default_rng(20261207)
    eps, w, n = 1.0, 4, 4
    ledger = BulkLedger(n, eps, w)
    spent: list[dict[int, float]] = [{} for _ in range(n)]
    next_t = [0] * n
    outcomes = set()
    for _ in range(300):
        i = int(rng.integers(n))
        t0 = next_t[i] + int(rng.integers(0, 3))
        count = int(rng.integers(1, 4))
        eps0 = float(rng.choice([0.2, 0.25, 0.5]))
        want = _fits(spent[i], t0, count, eps0, eps, w)
        granted = ledger.charge_run(np.array([i]), t0, count, eps0)
        assert bool(granted[0]) == want, (i, t0, count, eps0, spent[i])
        outcomes.add(want)
        if want:
            for t in range(t0, t0 + count):
                spent[i][t] = eps0
            next_t[i] = t0 + count
        assert ledger.max_window_spent() <= eps * (1 + 1e-9)
    assert outcomes == {True, False}  # both grants and refusals were exercised


def test_a_charged_step_cannot_be_charged_again():
    """Kills B2 (``last > t0``): the run starting at the last charged step is refused
    with ``LocalProtocolError``, not charged (and privatised) a second time."""
    ledger = BulkLedger(1, 1.0, 4)
    assert ledger.charge_run(np.array([0]), 0, 2, 0.25)[0]
    with pytest.raises(LocalProtocolError):
        ledger.charge_run(np.array([0]), 1, 1, 0.25)
    assert ledger.charges[0] == 2
