"""Issue 19 (helper A): two more ways ``_Search.settle`` avoids folds without changing an
answer. (1) ``borrowed_energy``: a neighbour already folded for an earlier centre gets an
interval from that fold (``sqrt`` of the energy moves by at most the distance of the two
inputs); (2) ``_partial_pays``: up to 64 harmonics of long folds whose length has a large
prime factor by the partial DFT. Checked here: the intervals hold the exact energies,
``settle`` still picks the plain argmax, and ``detect_period`` answers the same with both
switched off. End to end: ``scripts/cpr_period_same.py check``, ``scripts/cpr_speed_same.py
same``, ``scripts/cpr_speed_heldout_same.py``."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave


def _stream(seed: int, eps0: float = 5.0, n: int = 10_000) -> np.ndarray:
    rng = np.random.default_rng([1921, seed])
    t = np.arange(n)
    clean = 0.5 + 0.35 * np.sin(2 * np.pi * t / 1000.0) ** 3 + 0.1 * (t % 1000 < 40)
    return SquareWave(eps0).perturb(np.clip(clean, 0.0, 1.0), rng)


def _search(x: np.ndarray) -> P._Search:
    arr = P._scale_free(x)
    return P._Search(arr, P._detrend(arr), 3, x.size // 3, P.DEFAULT_ALPHA)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_borrowed_interval_holds_the_exact_energy(seed):
    search = _search(_stream(seed))
    checked = 0
    for first, second in ((997, 1000), (1000, 1003), (2990, 3004), (1994, 2001)):
        for harmonics in (1, 4, 16):
            span = search.span(first, harmonics)
            for q in range(first - span, first + span + 1):
                search.bounded_energy(first, q, harmonics)
            for q in range(second - span, second + span + 1):
                borrowed = search.borrowed_energy(second, q, harmonics)
                if borrowed is None:
                    continue
                value, tol = borrowed
                exact = P._fold_energy(search.xs_at(second), None, q, 4 * harmonics)
                assert value - tol <= exact <= value + tol
                checked += 1
    assert checked > 300


def _plain_settle(search: P._Search, center: int, harmonics: int) -> int:
    span = search.span(center, harmonics)
    qs = range(max(search.min_period, center - span), min(search.max_period, center + span) + 1)
    xs = search.xs_at(center)
    energies = [P._fold_energy(xs, None, q, P.SETTLE_FACTOR * harmonics) for q in qs]
    return qs[int(np.argmax(energies))]


@pytest.mark.parametrize("seed", [0, 1])
def test_settle_with_borrowing_picks_the_plain_argmax(seed, monkeypatch):
    search = _search(_stream(seed, eps0=1.0))
    borrowed, calls = search.borrowed_energy, []

    def counted(*args):
        out = borrowed(*args)
        calls.append(out is not None)
        return out

    monkeypatch.setattr(search, "borrowed_energy", counted)
    # centres one or a few samples apart, in the order refine, decide and walk meet them
    for center in (996, 997, 998, 1000, 1001, 2995, 3000, 3002):
        for harmonics in (2, 8, 32):
            assert search.settle(center, harmonics) == _plain_settle(search, center, harmonics)
    assert sum(calls) > 100  # borrowing did the work


def test_wide_partial_dft_is_within_its_bound():
    rng = np.random.default_rng(1922)
    n = 10_000
    xs = rng.standard_normal(n) + 3.0 * np.sin(2 * np.pi * np.arange(n) / 1499.0)
    used = 0
    for q in range(1500, 3300, 11):
        for harmonics in (33, 64, 128):
            value, tol = P._fold_energy_bounded(xs, q, harmonics)
            exact = P._fold_energy(xs, None, q, harmonics)
            if tol == 0.0:
                assert value == exact
                continue
            used += 1
            assert P._largest_prime(q) > P.FAST_FOLD_PRIME and not P._smooth(q)
            assert abs(value - exact) <= 1e-3 * tol
    assert used > 100


def _estimates():
    streams = [_stream(seed, eps0) for seed in (3, 4) for eps0 in (1.0, 5.0)]
    return [repr(dataclasses.asdict(P.detect_period(x))) for x in streams]


def test_detect_period_identical_without_borrowing_and_wide_partial_dft(monkeypatch):
    fast = _estimates()
    monkeypatch.setattr(P._Search, "borrowed_energy", lambda *args: None)
    monkeypatch.setattr(P, "FAST_FOLD_WIDE", 1)  # K's partial DFT only
    assert _estimates() == fast


def test_powers_by_doubling_match_exact_twiddles():
    # _partial_dft's twiddle rows first ** j, j = 1 .. count, against exponentials of the
    # exactly reduced angles: within j ulps-ish, as the cumulative product it replaced
    for size in (997, 2003, 2995):
        steps = np.arange(2 * int(np.sqrt(size)) + 2)
        first = np.exp(steps * (-2j * np.pi / size))
        for count in (1, 2, 5, 32, 64, 128):
            got = P._powers(first, count)
            j = np.arange(1, count + 1)[:, None]
            want = np.exp(((j * steps[None, :]) % size) * (-2j * np.pi / size))
            assert np.max(np.abs(got - want)) <= 4e-16 * (count + 4)


def test_partial_dft_matches_rfft_at_many_harmonics():
    rng = np.random.default_rng(1923)
    for size in (1511, 2003, 2551, 2995, 3019):
        y = rng.standard_normal(size) * rng.exponential(1.0, size)
        for count in (33, 64, 128):
            got = P._partial_dft(y, count)
            want = P._rfft(y)[1 : count + 1]
            # the bound of _fold_energy_bounded assumes at most 1e-12 sum |y|
            assert np.max(np.abs(got - want)) <= 1e-13 * np.sum(np.abs(y))
