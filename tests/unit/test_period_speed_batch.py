"""Issue 19 (helper E): three more ways ``detect_period`` saves CPU without changing an
answer. (1) ``_Search.bound_span``: the partial DFTs of a refinement span in one call
(``_fold_energies_bounded``, ``_partial_dft`` of a list), on a broader route
(``_batch_pays``); the intervals keep ``_fold_energy_bounded``'s tolerance. (2)
``_whittle_sums_flat``: the Whittle fit's first IRLS step from the one weight ``1 / start^2``
(bit for bit). (3) ``_full_column``: the screening's full-sum F tails only where the F ratio
exceeds 1 (the lazy screening's result bit for bit). Checked here piece by piece and end to
end with each switched off. The end-to-end checks on the reference sets are
``scripts/cpr_period_same.py check``, ``scripts/cpr_speed_same.py same`` and
``scripts/cpr_speed_heldout_same.py``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave


def test_batched_partial_dft_matches_rfft_far_inside_the_bound():
    rng = np.random.default_rng(1931)
    for low in (600, 997, 1990, 2990):
        folds = [rng.standard_normal(q) * rng.exponential(1.0, q) for q in range(low, low + 9)]
        for count in (1, 4, 5, 32, 128):
            got = P._partial_dft(folds, count)
            assert got.shape == (len(folds), count)
            for row, y in zip(got, folds, strict=True):
                want = P._rfft(y)[1 : count + 1]
                # the bound of _fold_energy_bounded assumes at most 1e-12 sum |y|
                assert np.max(np.abs(row - want)) <= 1e-13 * np.sum(np.abs(y))


@pytest.mark.parametrize("seed", [0, 1])
def test_batched_energies_hold_the_exact_energy(seed):
    rng = np.random.default_rng([1932, seed])
    n = 10_000
    xs = rng.standard_normal(n) + 3.0 * np.sin(2 * np.pi * np.arange(n) / 997.0)
    checked = 0
    for count in (1, 4, 8, 16, 32, 64, 128):
        qs = [q for q in range(590 + seed, 3300, 13) if P._batch_pays(q, P._limit(count, q))]
        for q, (value, tol) in zip(qs, P._fold_energies_bounded(xs, qs, count), strict=True):
            exact = P._fold_energy(xs, None, q, count)
            assert tol > 0.0
            assert abs(value - exact) <= 1e-3 * tol  # measured: ~1e-6 of it
            checked += 1
    assert checked > 500


def test_batch_route_is_off_with_the_partial_dft():
    # FAST_FOLD_HARMONICS = 0 switches every partial DFT off, batched or not
    assert any(P._batch_pays(q, 8) for q in range(600, 700))
    old = P.FAST_FOLD_HARMONICS
    try:
        P.FAST_FOLD_HARMONICS = 0
        assert not any(P._batch_pays(q, h) for q in range(3, 4000, 7) for h in (1, 4, 32))
    finally:
        P.FAST_FOLD_HARMONICS = old


@pytest.mark.parametrize("cols", [1, 2, 7, 300, 4999])
def test_flat_first_step_is_the_plain_step_bit_for_bit(cols):
    rng = np.random.default_rng([1933, cols])
    omega = np.sort(rng.uniform(1e-3, np.pi, cols))
    g = np.asfortranarray(P._shapes(omega))
    g /= g.mean(axis=1, keepdims=True)
    g = np.asfortranarray(g)
    p = rng.exponential(1.0, cols) * (1.0 + 1.0 / omega)
    for start in (float(np.median(p)) / np.log(2.0) + 1e-300, 3.7e-5, 1.0):
        rows = g.shape[0]
        work = [np.empty(g.shape, order="F") for _ in range(3)]
        plain = P._whittle_sums(np.full(rows, start), np.zeros(rows), g, p, work)
        work = [np.empty(g.shape, order="F") for _ in range(3)]
        flat = P._whittle_sums_flat(start, g, p, work)
        for a, b in zip(plain, flat, strict=True):
            assert np.array_equal(a, b)


def test_full_tail_floor_holds():
    # an F ratio <= 1 has a tail above FULL_TAIL_FLOOR for every shape >= 1 and dfd >= 1
    # (the tail at ratio 1 is the smallest of them: fdtrc falls with the ratio)
    shapes = np.concatenate((np.arange(1.0, 300.0, 0.5), np.geomspace(300.0, 1e7, 200)))
    for dfd in np.concatenate((np.arange(1.0, 300.0, 3.0), np.geomspace(300.0, 1e7, 60))):
        tails = np.exp(P._log_sf(shapes, shapes, float(dfd)))
        assert tails.min() > P.FULL_TAIL_FLOOR


def test_full_column_keeps_the_lazy_screening():
    rng = np.random.default_rng(1934)
    for x in (rng.standard_normal(10_000), np.sin(np.arange(10_000) / 37.0 * 2 * np.pi)):
        xw = x + rng.standard_normal(x.size)
        stats = P._screen_sums(xw, np.arange(3, x.size // 3 + 1))
        dfd = (x.size // 2) / 3.0 - 3.0
        lazy, exact = P._screen_lazy(stats, dfd)
        full = P._screen_logp(stats, dfd)
        assert exact is not None
        assert np.array_equal(lazy[exact], full[exact])
        assert full[~exact].min(axis=1).min() > full[exact].min(axis=1).max()


def _streams():
    rng = np.random.default_rng(193_019)
    n = 10_000
    t = np.arange(n)
    for period in (37, 640, 1000, 1499):
        for eps0 in (1.0, 5.0):
            clean = 0.5 + 0.4 * np.sin(2 * np.pi * t / period) ** 3
            yield SquareWave(eps0).perturb(clean, rng)
    walk = np.cumsum(rng.standard_normal(n))
    yield SquareWave(5.0).perturb((walk - walk.min()) / np.ptp(walk), rng)
    yield SquareWave(1.0).perturb(rng.random(3_000), rng)


def _estimates(streams):
    return [repr(dataclasses.asdict(P.detect_period(x))) for x in streams]


@pytest.mark.slow
def test_detect_period_identical_with_each_change_switched_off(monkeypatch):
    streams = list(_streams())
    fast = _estimates(streams)
    monkeypatch.setattr(P._Search, "bound_span", lambda *args: None)  # one fold at a time
    assert _estimates(streams) == fast
    monkeypatch.setattr(
        P,
        "_whittle_sums_flat",
        lambda start, g, p, work, rows_p=None: P._whittle_sums(
            np.full(g.shape[0], start), np.zeros(g.shape[0]), g, p, work
        ),
    )
    assert _estimates(streams) == fast
    monkeypatch.setattr(
        P, "_full_column", lambda total, shape, dfd, cut: P._log_sf(total, shape, dfd)
    )  # every full tail evaluated
    assert _estimates(streams) == fast
