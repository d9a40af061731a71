"""Issue 19's speed work must not change an answer: the refinement (``_Search.settle``) reads
the fold energies of long awkward periods by a partial DFT with an error bound
(``_fold_energy_bounded``) and computes the exact ``_fold_energy`` only for the neighbours
whose interval reaches the best one's. These tests check the bound against the exact energy
on random folds, that ``settle`` picks the neighbour the plain argmax of the exact energies
picks (ties included), and that ``detect_period`` answers the same with the partial DFT
switched off (``FAST_FOLD_HARMONICS = 0``), on random streams with fixed seeds.

The end-to-end checks are ``scripts/cpr_period_same.py check`` (3,540 streams) and
``scripts/cpr_speed_same.py same`` (the 100 speed streams)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave


def _awkward(low: int, high: int) -> list[int]:
    return [q for q in range(low, high) if not P._smooth(q)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bounded_energy_is_within_its_bound_of_the_exact_energy(seed):
    rng = np.random.default_rng([19, seed])
    n = 10_000
    xs = rng.standard_normal(n) + 3.0 * np.sin(2 * np.pi * np.arange(n) / 997.0)
    used = 0
    for q in _awkward(600, 3300)[seed::23]:
        for harmonics in (1, 2, 4, 8, 16, 32):
            value, tol = P._fold_energy_bounded(xs, q, harmonics)
            exact = P._fold_energy(xs, None, q, harmonics)
            if tol == 0.0:
                assert value == exact  # the exact route itself
                continue
            used += 1
            assert abs(value - exact) <= tol
            # and the bound holds with a wide margin (measured errors ~1e-16 of it... 1e-6)
            assert abs(value - exact) <= 1e-3 * tol
    assert used > 50  # the partial DFT was exercised


def test_partial_dft_matches_rfft_far_inside_the_bound():
    rng = np.random.default_rng(1919)
    for size in _awkward(600, 3300)[::37]:
        y = rng.standard_normal(size) * rng.exponential(1.0, size)
        for count in (1, 4, 5, 32):
            got = P._partial_dft(y, count)
            want = P._rfft(y)[1 : count + 1]
            # measured errors are ~1e-16 sum |y|; the bound assumes at most 1e-12
            assert np.max(np.abs(got - want)) <= 1e-13 * np.sum(np.abs(y))


def _search(x: np.ndarray) -> P._Search:
    arr = P._scale_free(x)
    return P._Search(arr, P._detrend(arr), 3, x.size // 3, P.DEFAULT_ALPHA)


def _plain_settle(search: P._Search, center: int, harmonics: int) -> int:
    span = search.span(center, harmonics)
    qs = range(max(search.min_period, center - span), min(search.max_period, center + span) + 1)
    xs = search.xs_at(center)
    energies = [P._fold_energy(xs, None, q, P.SETTLE_FACTOR * harmonics) for q in qs]
    return qs[int(np.argmax(energies))]


@pytest.mark.parametrize("seed", [0, 1])
def test_settle_picks_the_plain_argmax(seed):
    rng = np.random.default_rng([1919, seed])
    n = 10_000
    clean = np.where(np.arange(n) % 1000 < 50, 1.0, 0.0) + 0.3 * rng.random(n)
    x = SquareWave(5.0).perturb(np.clip(clean, 0, 1), rng)
    search = _search(x)
    for center in (997, 1000, 1993, 2011, 2999, 3001):
        for harmonics in (1, 2, 4, 8):
            assert search.settle(center, harmonics) == _plain_settle(search, center, harmonics)


def test_settle_breaks_exact_ties_as_the_plain_argmax():
    rng = np.random.default_rng(1920)
    search = _search(SquareWave(1.0).perturb(rng.random(10_000), rng))
    for center in (1009, 2003, 3001):
        search.flat[center] = np.zeros(10_000)  # every neighbour's energy is 0: a tie
        settled = search.settle(center, 2)
        assert settled == _plain_settle(search, center, 2) == center - search.span(center, 2)


def _streams():
    rng = np.random.default_rng(190_019)
    n = 10_000
    for period in (640, 997, 1000, 1499, 2003):
        for eps0 in (1.0, 5.0):
            t = np.arange(n)
            clean = 0.5 + 0.4 * np.sin(2 * np.pi * t / period) ** 3
            yield SquareWave(eps0).perturb(clean, rng)
    for _ in range(2):  # aperiodic: white and a random walk
        yield SquareWave(1.0).perturb(rng.random(n), rng)
        walk = np.cumsum(rng.standard_normal(n))
        yield SquareWave(5.0).perturb((walk - walk.min()) / np.ptp(walk), rng)


@pytest.mark.slow
def test_detect_period_identical_with_and_without_the_partial_dft(monkeypatch):
    streams = list(_streams())
    partial_dft, calls = P._partial_dft, []

    def counted(*args):
        folds = args[0]  # one fold, or a batch of folds in one call (helper E)
        calls.append(1 if isinstance(folds, np.ndarray) else len(folds))
        return partial_dft(*args)

    monkeypatch.setattr(P, "_partial_dft", counted)
    padded_dft = P._partial_dft_padded

    def counted_padded(padded, sizes, count):
        calls.append(len(sizes))  # the batches of bound_span (helper D: folds written in place)
        return padded_dft(padded, sizes, count)

    monkeypatch.setattr(P, "_partial_dft_padded", counted_padded)
    fast = [repr(dataclasses.asdict(P.detect_period(x))) for x in streams]
    assert sum(calls) > 100  # the partial DFT did the work (folds, however batched)
    monkeypatch.setattr(P, "FAST_FOLD_HARMONICS", 0)  # every fold by the exact route
    calls.clear()
    plain = [repr(dataclasses.asdict(P.detect_period(x))) for x in streams]
    assert not calls
    assert fast == plain  # every field, floats by their repr (bit for bit)
