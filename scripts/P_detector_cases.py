"""Reproducers of helper P's user trial (2026-12-06): answers of ``detect_period`` a user
would not expect, on streams nobody tuned to. Reports only; the detector is not changed.

    python scripts/P_detector_cases.py step     # a single level step claimed as a period
    python scripts/P_detector_cases.py offset   # a stream at offset >= ~1e12: "constant"
    python scripts/P_detector_cases.py edge     # periods near the top of the range, off by 1
    python scripts/P_detector_cases.py outlier  # one sample 30x the range: no period
    python scripts/P_detector_cases.py wrap     # a replay's phase jump: twice the period
    python scripts/P_detector_cases.py fraction # a period of 24.3 samples: 73, 97, 170, 243
    python scripts/P_detector_cases.py alpha    # false claims on white SW streams by alpha
    python scripts/P_detector_cases.py smooth   # a ramp or a bump claimed at eps0 >= 20

Each prints one line per case: the setting, then the answers.
"""

from __future__ import annotations

import sys

import numpy as np

from ldpfleet import SquareWave, detect_period


def step() -> None:
    """SW reports of a stream that is 0.2 for ``cut`` steps, then 0.8 (no period at all),
    20 seeds per cell. At eps0 <= 5 no claim; at 8-12 one claim at (600, 200); at 20 and
    50 (allowed: eps0 <= 50) nearly every seed claims n/4, n/3 or the cut."""
    for eps0 in (5.0, 8.0, 12.0, 20.0, 50.0):
        sw = SquareWave(eps0)
        for n, cut in ((600, 300), (600, 200), (500, 250), (900, 300)):
            claims = []
            for seed in range(20):
                rng = np.random.default_rng(900 + seed)
                x = np.r_[np.full(cut, 0.2), np.full(n - cut, 0.8)]
                estimate = detect_period(sw.perturb(x, rng))
                if estimate.period is not None:
                    claims.append(estimate.period)
            print(f"step eps0={eps0:g} n={n} cut={cut}: {len(claims)}/20 claims {claims}")
    x = np.r_[np.zeros(300), np.ones(300)]
    e = detect_period(x)
    print(f"noise-free 0/1 step, n=600: period={e.period} p={e.p_value:.2g}")


def offset() -> None:
    """The same SW stream (T = 37, eps0 = 3) plus a constant: 37 up to 1e11, None from 3e11
    with candidate None (treated as constant: period.py's std(detrended) <= 1e-12 *
    max|x|), though float64 still holds the signal to ~1e-4 at 1e12."""
    rng = np.random.default_rng(91817)
    y = SquareWave(3.0).perturb(np.tile(rng.random(37), 15), rng)
    for off in (0.0, 1e9, 1e11, 3e11, 1e12, 1e13):
        e = detect_period(y + off)
        kept = np.corrcoef(y, (y + off) - off)[0, 1]
        print(
            f"offset {off:g}: period={e.period} candidate={e.candidate} "
            f"(corr of the signal kept in float64: {kept:.6f})"
        )


def edge() -> None:
    """SW(4) reports of 0.5 + 0.4 sin(2 pi t / T), n = 600 (searched (3, 200)), 10 seeds:
    the answers near the top of the range."""
    sw = SquareWave(4.0)
    for period in (190, 195, 198, 199, 200):
        answers = []
        for seed in range(10):
            rng = np.random.default_rng(31000 + seed)
            x = 0.5 + 0.4 * np.sin(2 * np.pi * np.arange(600) / period)
            answers.append(detect_period(sw.perturb(x, rng)).period)
        print(f"edge T={period} n=600: {answers}")


def outlier() -> None:
    """One sample moved by ``mag`` in a noise-free periodic stream (T = 23, n = 460) and in
    its SW(4) reports: 23 up to mag 10, None from 30 (a glitch hides the period)."""
    rng = np.random.default_rng(4242)
    clean = np.resize(rng.random(23), 460)
    reports = SquareWave(4.0).perturb(clean, rng)
    for mag in (3, 10, 30, 100):
        a, b = clean.copy(), reports.copy()
        a[100] += mag
        b[100] += mag
        print(f"outlier +{mag}: noise-free {detect_period(a).period}, SW {detect_period(b).period}")


def wrap() -> None:
    """A 1,800-step replay of a 2,000-row file of period 36 (2,000 is not a multiple of 36),
    started at row ``start`` as ``stride = 0`` spreads 6 devices, wraps at step 2,000 -
    start: a phase jump of 20 samples. SW(2.5) reports, 5 seeds per start. In the run of
    /tmp/P-user/odd.toml the devices starting at 666, 1,000 and 1,333 claimed 71 (about
    2 x 36) at confidence 1."""
    rows = 0.5 + 0.25 * np.sin(2 * np.pi * np.arange(2000) / 36)
    rows += np.random.default_rng(31337).normal(0, 0.015, 2000)
    for start in (0, 333, 666, 1000, 1333, 1666):
        answers = []
        for seed in range(5):
            rng = np.random.default_rng(700 + seed)
            x = np.take(rows, np.arange(start, start + 1800), mode="wrap")
            answers.append(detect_period(SquareWave(2.5).perturb(x, rng)).period)
        print(f"wrap start {start}: {answers}")


def fraction() -> None:
    """Sines of a non-integer period P (a cycle not aligned with the sampling), n = 1,200,
    6 seeds (random phase), noise-free and SW(2) reports. The answer is an integer k x P
    that lies near an integer (24.5 -> 49, 24.25 -> 97, 24.3 -> 73 / 97 / 170 / 243 by
    seed), not the nearest integer; 24.05 and 150.5 give 24 and 150 or 151."""
    t = np.arange(1200)
    for period in (24.5, 24.25, 24.3, 24.1, 24.05, 30.5, 50.5, 60.2, 99.5, 150.5):
        answers = {}
        for eps0 in (None, 2.0):
            found = []
            for seed in range(6):
                rng = np.random.default_rng(500 + seed)
                x = 0.5 + 0.4 * np.sin(2 * np.pi * t / period + rng.random() * 6)
                y = x if eps0 is None else SquareWave(eps0).perturb(x, rng)
                found.append(detect_period(y).period)
            answers["noise-free" if eps0 is None else f"SW({eps0:g})"] = found
        print(f"fraction P={period}: {answers}")


def alpha() -> None:
    """False claims on aperiodic streams (SW(2) reports of i.i.d. uniform values), 300
    streams per cell: ``alpha`` bounds the rate, which is far below it (n = 300: 0, 0, 8
    and 15 claims at alpha 0.01, 0.05, 0.2, 0.5; n = 2,000: 2, 5, 11, 19)."""
    sw = SquareWave(2.0)
    for n in (300, 2000):
        for level in (0.01, 0.05, 0.2, 0.5):
            claims = 0
            for seed in range(300):
                rng = np.random.default_rng(880000 + seed)
                claims += (
                    detect_period(sw.perturb(rng.random(n), rng), alpha=level).period is not None
                )
            print(f"alpha n={n} alpha={level}: {claims}/300 claims")


def smooth() -> None:
    """SW reports of aperiodic smooth streams (n = 600), 10 seeds: none claimed at eps0 =
    5; at 20, 5 of 10 ramps (69, 79) and 5 of 10 bumps (187); at 50 all 10 of each. At
    eps0 >= ~15 SW's half-width b is one cell of its 2^-20 grid and the input is rounded
    to the grid (protocol/sw.py), so the reports carry the rounding error of a ramp, a
    deterministic sawtooth, beside noise of the same size: structure, but not the
    stream's cycle. Decays and three levels gave no claim (random walks neither, in the trial)."""
    t = np.arange(600) / 600
    shapes = {
        "ramp": 0.1 + 0.8 * t,
        "bump": 0.1 + 0.8 * np.exp(-(((t - 0.4) / 0.1) ** 2)),
        "decay": 0.1 + 0.8 * np.exp(-5 * t),
        "3 levels": np.select([t < 0.3, t < 0.75], [0.2, 0.7], 0.4),
    }
    for eps0 in (5.0, 20.0, 50.0):
        sw = SquareWave(eps0)
        for name, x in shapes.items():
            claims = []
            for seed in range(10):
                period = detect_period(sw.perturb(x, np.random.default_rng(4400 + seed))).period
                if period is not None:
                    claims.append(period)
            print(f"smooth eps0={eps0:g} {name}: {len(claims)}/10 claims {claims}")


CASES = {
    "step": step,
    "offset": offset,
    "edge": edge,
    "outlier": outlier,
    "wrap": wrap,
    "fraction": fraction,
    "alpha": alpha,
    "smooth": smooth,
}

if __name__ == "__main__":
    for name in sys.argv[1:] or list(CASES):
        CASES[name]()
