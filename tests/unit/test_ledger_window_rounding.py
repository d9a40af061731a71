"""A uniform ``eps / w`` allocation never shows a window above ``eps`` in the ledger.

Helper G (2026-12-05): the quickstart's ledger.json said ``max_window_spent``
2.0000000000000284 at eps = 2, w = 5 (window sums were differences of one running sum over
the whole stream; ``within_budget`` hid it with its tolerance, a reader did not). Fails on
the code before."""

from __future__ import annotations

import pytest
from ldpfleet.protocol.ledger import WindowAccount


@pytest.mark.parametrize("eps", [0.05, 0.7, 1.0, 2.0, 3.0, 5.0, 10.0])
@pytest.mark.parametrize("w", [1, 3, 5, 7, 13, 200])
def test_uniform_allocation_reports_at_most_eps(eps, w):
    account = WindowAccount(eps, w)
    granted, refusal = account.charge_run(0, eps / w, 2_000)
    assert (granted, refusal) == (2_000, None)
    document = account.to_dict()
    assert document["max_window_spent"] <= eps
    assert max(document["window_spent"]) <= eps


def test_each_window_is_its_own_sum():
    account = WindowAccount(1.0, 3)
    for t, spend in enumerate([0.1, 0.2, 0.3, 0.4, 0.1]):
        account.charge(t, spend)
    assert account.window_spent() == pytest.approx([0.6, 0.9, 0.8])
