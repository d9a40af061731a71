"""Step 3's multiple moves on calibration streams: how the added harmonics of ``m T`` read on
the detrended stream, on the whitened stream and against their neighbouring bins (issue 19,
helper D, calibration of step 3c; not an evaluation).

For every stream where ``OLD``'s step 3 moved a period ``T`` to a multiple, one line: the
stream, the truth, ``T`` -> ``m T``, the final answer, and the three log p-values.

Run: ``python scripts/D_multiple_moves.py OLD {grid,am,harmonic} [TRIALS]`` (grid: ``bench_cpr``
grid cells, trials 0 .. TRIALS - 1 at seed 0; am: ``D_am_calibration`` streams).
"""

from __future__ import annotations

import sys

import numpy as np
from ldpfleet.app import bench_cpr as b
from ldpfleet.protocol.sw import SquareWave
from scipy import fft as sp_fft
from scipy import special

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from cpr_period_ab import load_old
from D_am_calibration import cells as am_cells
from D_am_calibration import streams as am_streams


def neighbour_extra_logp(xs: np.ndarray, big: int, m: int, limit: int) -> float:
    """Log p that the added harmonics of ``big`` (``j`` not divisible by ``m``, ``j <=
    limit``) stand out from their neighbouring bins over whole cycles: F(2 h, 4 d h)."""
    cycles = xs.size // big
    seg = xs[: cycles * big]
    seg = seg - seg.mean()
    spec = sp_fft.rfft(seg)
    pw = spec.real**2 + spec.imag**2
    js = np.array([j for j in range(1, limit + 1) if j % m])
    centre = cycles * js
    reach = max(1, (cycles - 1) // 2)
    den = sum(pw[centre - d] + pw[np.minimum(centre + d, pw.size - 1)] for d in range(1, reach + 1))
    ratio = (pw[centre].sum() / js.size) / max(den.sum() / (2 * reach * js.size), 1e-300)
    return float(np.log(max(special.fdtrc(2.0 * js.size, 4.0 * reach * js.size, ratio), 1e-300)))


def harmonic_cells():
    """True periods whose energy sits on harmonic ``m`` (2 or 3), harmonic 1 weak."""
    return [
        (period, cycles, eps0, m, weak)
        for period in (61, 121, 200)
        for cycles in (4, 8, 20)
        for eps0 in (1.0, 5.0)
        for m in (2, 3)
        for weak in (0.03, 0.06, 0.1)
    ]


def harmonic_stream(period, cycles, m, weak, rng):
    t = np.arange(period * cycles)
    u = 2 * np.pi * t / period
    clean = 0.5 + 0.3 * np.sin(m * u + 6 * rng.random()) + weak * np.sin(u + 6 * rng.random())
    return np.clip(clean + 0.02 * rng.standard_normal(t.size), 0, 1)


def moves(old, y, truth, tag):
    captured = []
    original = old._fundamental

    def spy(period, harmonics, *rest):
        out = original(period, harmonics, *rest)
        captured.append((period, harmonics, *out))
        return out

    old._fundamental = spy
    try:
        answer = old.detect_period(y).period
    finally:
        old._fundamental = original
    for _, harmonics, base, final in captured:
        if final == base:
            continue
        arr = np.asarray(y, float)
        s = old._Search(arr, old._detrend(arr), 2, arr.size // 3, 0.01)
        m = round(final / base)
        limit = old._limit(m * harmonics, final)
        det = old._extra_logp(s.whole(final, base), m, limit)
        size = (arr.size // final) * final
        white = old._extra_logp(old._harmonic_power(s.xw[:size], s.t[:size], final), m, limit)
        neigh = neighbour_extra_logp(s.xs_at(base), final, m, limit)
        level = np.log(old.ALPHA_SHAPE / 5)
        print(
            f"{tag} truth {truth} {base}->{final} m {m} h {harmonics} answer {answer} "
            f"det {det:.1f} white {white:.1f} neigh {neigh:.1f} level {level:.1f} "
            f"{'OK' if final == truth else 'BAD'}",
            flush=True,
        )


def main(argv):
    old = load_old(argv[0])
    trials = int(argv[2]) if len(argv) > 2 else 2
    if argv[1] == "grid":
        for source, period, cycles, eps0, jitter, drift in b.grid_cells(None, None, None):
            tag = f"{source}/{period}/{cycles}/{eps0}/{jitter}/{drift}"
            for trial in range(trials):
                rng = b.trial_rng(0, "grid", trial, tag)
                cycle = b.grid_template(source, period, rng)
                clean = b.grid_stream(cycle, period * cycles, rng, jitter, drift)
                moves(old, SquareWave(eps0).perturb(clean, rng), period, f"{tag}/{trial}")
    elif argv[1] == "harmonic":
        for period, cycles, eps0, m, weak in harmonic_cells():
            for trial in range(trials):
                rng = np.random.default_rng(
                    [71001 + trial, period, cycles, int(eps0), m, int(1000 * weak)]
                )
                y = SquareWave(eps0).perturb(harmonic_stream(period, cycles, m, weak, rng), rng)
                moves(old, y, period, f"harm/{period}/{cycles}/{eps0}/{m}/{weak}/{trial}")
    else:
        for cell in am_cells():
            for index, y in am_streams(cell, trials):
                moves(old, y, cell[0], f"am/{cell}/{index}")


if __name__ == "__main__":
    main(sys.argv[1:])
