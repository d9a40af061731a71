"""``WindowAccount.window_spent`` of a stream of exactly w steps sums its one window
without numpy's strided view (helper A, 2026-12-07 evening, claim A6: the view's setup was
~4 % of the fleet-stream audit): the same floats as the view's row sum (frozen below), for
every w and allocation tried, and ``to_dict`` unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.protocol.ledger import WindowAccount


def _frozen_window_spent(account: WindowAccount) -> list[float]:
    n = account.last_step + 1
    if n < account.w:
        return [account.total_spent]
    windows = np.lib.stride_tricks.sliding_window_view(account._per_step[:n], account.w)
    return [float(x) for x in windows.sum(axis=1)]


@pytest.mark.parametrize("w", [1, 2, 3, 5, 7, 8, 9, 16, 17, 100, 128, 129, 300])
def test_one_window_sums_as_the_strided_view(w):
    rng = np.random.default_rng(w)
    for trial in range(40):
        eps = float(rng.choice([0.1, 1.0, 2.0, 7.3]))
        account = WindowAccount(eps, w)
        steps = w + int(rng.integers(-1, 3))  # w - 1, w (the fast path), w + 1, w + 2
        for t in range(max(steps, 0)):
            share = eps / w if trial % 2 else float(rng.random()) * eps / w
            account.charge(t, share)
        assert account.window_spent() == _frozen_window_spent(account)
        d = account.to_dict()
        windows = _frozen_window_spent(account)
        assert d["window_spent"] == [round(x, 12) for x in windows]
        assert d["max_window_spent"] == round(max(windows), 12)


def test_the_fast_path_is_taken_and_exact():
    account = WindowAccount(1.0, 5)
    for t in range(5):
        account.charge(t, 0.2)
    # 0.2 five times: the pairwise/serial float sum, not fsum's 1.0
    assert account.window_spent() == [float(np.full(5, 0.2).sum())]
    assert account.window_spent() == _frozen_window_spent(account)
