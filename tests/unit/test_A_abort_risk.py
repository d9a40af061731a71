"""The SecAgg+ abort-risk arithmetic a scenario's warning names (protocol.secagg.graph).

``session_abort_bound`` is ``abort_probability_bound`` plus ``split_probability_bound``
(when the devices leave before their masked input) in floating point: checked against the
exact integer arithmetic on a grid. ``safer_degree`` and ``safer_dropping`` are searches
(doubling, bisection): checked against a linear scan. ``split_probability_bound`` now
divides two exact integers once instead of multiplying 2r Fractions: pinned against the
old product, value for value.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.secagg.graph import (
    ABORT_RISK_LIMIT,
    abort_probability_bound,
    default_degree,
    default_threshold,
    safer_degree,
    safer_dropping,
    session_abort_bound,
    split_probability_bound,
)

GRID = [
    (n, k, d)
    for n in (6, 7, 20, 21, 100, 200, 1000)
    for k in sorted({2, 3, 4, 5, default_degree(n), n - 1} & set(range(2, n)))
    for d in sorted({0, 1, 2, n // 10, n // 4, n // 2} & set(range(n + 1)))
]


def _old_split(devices: int, degree: int, dropping: int) -> float:
    """``split_probability_bound`` as it was (2026-12-06, 734d44c): a product of Fractions."""
    r = degree // 2
    if degree >= devices - 1 or r == 0 or 2 * r > dropping:
        return 0.0
    pairs = devices * (devices - 2 * r - 1) // 2
    if pairs <= 0:
        return 0.0
    hit = Fraction(1)
    for i in range(2 * r):
        hit *= Fraction(dropping - i, devices - i)
    return float(min(Fraction(1), pairs * hit))


@pytest.mark.parametrize(("n", "k", "d"), GRID)
def test_split_bound_unchanged(n: int, k: int, d: int) -> None:
    assert split_probability_bound(n, k, d) == _old_split(n, k, d)


@pytest.mark.parametrize(("n", "k", "d"), GRID)
def test_the_float_bound_is_the_exact_one(n: int, k: int, d: int) -> None:
    t = default_threshold(k + 1)
    holders = abort_probability_bound(n, k, t, d)
    exact = min(1.0, holders + split_probability_bound(n, k, d))
    # rounding of log-gamma terms: measured at most 2e-12 relative on this grid
    assert session_abort_bound(n, k, t, d) == pytest.approx(exact, rel=1e-9, abs=1e-300)
    after = session_abort_bound(n, k, t, d, before_masked=False)
    assert after == pytest.approx(holders, rel=1e-9, abs=1e-300)


def test_known_figures() -> None:
    # docs/secagg.md: 200 devices, K = 11 (t = 7), 20 dropping: 5.9 %; the default 17: 0.085 %
    assert session_abort_bound(200, 11, 7, 20) == pytest.approx(0.0591, abs=5e-5)
    assert session_abort_bound(200, 17, 10, 20) == pytest.approx(0.00085, abs=5e-6)
    # scenarios/secure-sum.toml: 100 devices, the default K = 15, t = 9, 10 dropping
    assert session_abort_bound(100, 15, 9, 10) == pytest.approx(2.65e-4, rel=1e-2)
    assert session_abort_bound(100, 15, 9, 10) < ABORT_RISK_LIMIT == 1e-3
    # a ring cut by 2 dropouts: 170 of the 190 pairs
    assert session_abort_bound(20, 2, 2, 2) == 1.0  # + the holder rule's part: capped
    assert session_abort_bound(20, 19, default_threshold(20), 9) == 0.0  # full: 11 left, t = 11
    assert session_abort_bound(20, 19, default_threshold(20), 10) == 1.0  # 10 left: certain


def _scan_degree(n: int, k: int, d: int, limit: float, before: bool) -> int | None:
    for larger in range(k + 1, n - 1):
        if larger % 2 == 1:
            t = default_threshold(larger + 1)
            if session_abort_bound(n, larger, t, d, before_masked=before) <= limit:
                return larger
    return None


@pytest.mark.parametrize(
    ("n", "k", "d", "limit"),
    [(200, 11, 20, 1e-3), (200, 11, 20, 1e-2), (100, 3, 10, 1e-3), (1000, 21, 100, 1e-3),
     (1000, 21, 300, 1e-3), (1000, 21, 500, 1e-3), (20, 2, 2, 1e-3), (21, 4, 3, 1e-6),
     (12, 9, 1, 1e-3), (300, 4, 60, 1e-4)],
)  # fmt: skip
@pytest.mark.parametrize("before", [True, False])
def test_safer_degree_is_the_smallest(n: int, k: int, d: int, limit: float, before) -> None:
    assert safer_degree(n, k, d, limit, before_masked=before) == _scan_degree(
        n, k, d, limit, before
    )


@pytest.mark.parametrize(
    ("n", "k", "d"), [(200, 11, 20), (100, 3, 30), (1000, 21, 500), (20, 2, 2), (50, 7, 0)]
)
def test_safer_dropping_is_the_most(n: int, k: int, d: int) -> None:
    t = default_threshold(k + 1)
    scan = max(j for j in range(d + 1) if session_abort_bound(n, k, t, j) <= ABORT_RISK_LIMIT)
    assert safer_dropping(n, k, t, d, ABORT_RISK_LIMIT) == scan


def test_the_largest_fleet() -> None:
    # exact integers took 2.8-3.4 s for the bound alone at degree 3,001; here each call sums
    # at most a few thousand log-gamma terms
    n, d = 10_000, 5000
    assert session_abort_bound(n, 3001, default_threshold(3002), d) == 1.0
    assert safer_degree(n, 27, d, ABORT_RISK_LIMIT) is None  # half leave: only the full graph
    t = default_threshold(28)
    most = safer_dropping(n, 27, t, d, ABORT_RISK_LIMIT)
    assert session_abort_bound(n, 27, t, most) <= ABORT_RISK_LIMIT
    assert session_abort_bound(n, 27, t, most + 1) > ABORT_RISK_LIMIT


@pytest.mark.parametrize(
    ("args", "field"),
    [((1, 1, 1, 0), "devices"), ((10, 0, 1, 0), "degree"), ((10, 3, 0, 0), "threshold"),
     ((10, 3, 2, -1), "dropping"), ((10, 10, 2, 0), "degree"), ((10, 3, 2, 11), "dropping"),
     ((10.0, 3, 2, 1), "devices")],
)  # fmt: skip
def test_refusals_name_the_argument(args, field: str) -> None:
    with pytest.raises(ParameterError) as refused:
        session_abort_bound(*args)
    assert refused.value.field == field
