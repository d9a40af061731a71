"""Helper K3's evaluation of K2's step 11 (the permutation gate on quiet short streams),
judged on issue 19's own criteria (docs/preregistration/K3-quiet-gate-issue-criteria.md).
Parts ``quiet``, ``grid``, ``heldout`` are ``scripts/K2_eval.py``'s, unchanged (imported);
the new part ``short`` is the periodic set (b'): quiet short streams with 3-6 cycles.
One ``detect_period`` run per stream gives the answer with the gate and without it (a
withdrawn claim abstains with ``candidate`` the claim and ``permutation_p`` set). Apply
docs/preregistration/K2-quiet-permutation.diff first if step 11 is not in the tree
(without it both answers agree).

    python scripts/K3_eval.py quiet --out /tmp/K3-quiet.jsonl --offset 130000
    python scripts/K3_eval.py grid --out /tmp/K3-grid.jsonl
    python scripts/K3_eval.py heldout --out /tmp/K3-held.jsonl
    python scripts/K3_eval.py short --out /tmp/K3-short.jsonl [--trials 40] [--first 0]
    python scripts/K3_eval.py speed
    python scripts/K3_eval.py summary /tmp/K3-*.jsonl

Set (b'): templates ``pulse`` (the unit tests' generator: 2 samples of each cycle at the
feature, duty 2), ``spikes`` (1 sample), ``square`` (half the cycle), ``sawtooth`` (a ramp
over the cycle), ``two_harmonics`` (sin(2 pi u) + 0.5 sin(4 pi u + phi), phi ~ U(0, 2 pi)
per trial, min-max scaled to [0, 1]); the feature ``s(t)`` in [0, 1] with a random phase
(``rng.integers(T)``) sits on a quiet level ``L``: clean = L + A s(t) for L < 0.5, L - A s(t)
for L >= 0.5, plus N(0, 0.02^2), clipped to [0, 1]; amplitude A = 0.6 for pulse and spikes
(sparse features: most samples at L), 0.15 for square, sawtooth and two harmonics (small
cycles: dense shapes are quiet only when small). Levels 0.05, 0.1, 0.3, 0.9; (T, cycles)
(8, 3), (12, 3), (16, 3), (25, 3), (20, 4), (24, 5), (25, 6) (n 24-150); eps0 1, 3, 5;
SW as the grid privatises (``SquareWave(eps0).perturb``); seeds
``[SEED, crc32(tag), trial]``, SEED = 7_312_093 (fresh), trials 0-39.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import zlib
from pathlib import Path

import numpy as np
from ldpfleet.app.cpr_period_baselines import autocorrelation_period, folded_variance_period
from ldpfleet.protocol.sw import SquareWave

HERE = Path(__file__).resolve().parent
SEED = 7_312_093
SHORT_TEMPLATES = ("pulse", "spikes", "square", "sawtooth", "two_harmonics")
SHORT_AMPLITUDE = {"pulse": 0.6, "spikes": 0.6, "square": 0.15, "sawtooth": 0.15}
SHORT_LEVELS = (0.05, 0.1, 0.3, 0.9)
SHORT_SHAPES = ((8, 3), (12, 3), (16, 3), (25, 3), (20, 4), (24, 5), (25, 6))
SHORT_EPS0 = (1.0, 3.0, 5.0)


def _k2():
    spec = importlib.util.spec_from_file_location("K2_eval", HERE / "K2_eval.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


K2 = _k2()


def feature(name: str, period: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """The cycle's feature s(t) in [0, 1] over n samples, random phase."""
    u = ((np.arange(n) + int(rng.integers(period))) % period) / period
    if name == "pulse":
        return (np.round(u * period) % period < 2).astype(float)
    if name == "spikes":
        return (np.round(u * period) % period < 1).astype(float)
    if name == "square":
        return (u < 0.5).astype(float)
    if name == "sawtooth":
        return u * period / max(period - 1, 1)
    if name == "two_harmonics":
        phi = rng.uniform(0.0, 2.0 * np.pi)
        g = np.sin(2 * np.pi * u) + 0.5 * np.sin(4 * np.pi * u + phi)
        lo, hi = g.min(), g.max()
        return (g - lo) / (hi - lo)
    raise ValueError(name)


def short_clean(name: str, level: float, period: int, n: int, rng) -> np.ndarray:
    s = feature(name, period, n, rng)
    amp = SHORT_AMPLITUDE.get(name, 0.15)
    x = level + amp * s if level < 0.5 else level - amp * s
    return np.clip(x + 0.02 * rng.standard_normal(n), 0.0, 1.0)


def short(args, emit) -> None:
    for name in SHORT_TEMPLATES:
        for level in SHORT_LEVELS:
            for period, cycles in SHORT_SHAPES:
                n = period * cycles
                for eps0 in SHORT_EPS0:
                    tag = f"{name}/{level}/{period}/{cycles}/{eps0}"
                    hn = ho = 0
                    base = {"folded_variance": 0, "autocorrelation": 0}
                    for trial in range(args.first, args.first + args.trials):
                        rng = np.random.default_rng([SEED, zlib.crc32(tag.encode()), trial])
                        reports = SquareWave(eps0).perturb(
                            short_clean(name, level, period, n, rng), rng
                        )
                        a, b, _ = K2.both(reports)
                        hn += a == period
                        ho += b == period
                        base["folded_variance"] += folded_variance_period(reports) == period
                        base["autocorrelation"] += autocorrelation_period(reports) == period
                    key = {"template": name, "level": level, "cycles": cycles, "eps0": eps0}
                    emit(K2._row("short", key, args.trials, period, hn, ho, base))


def summary(paths) -> None:
    K2.summary(paths)
    rows = [json.loads(line) for p in paths for line in Path(p).read_text().splitlines()]
    p = [r for r in rows if r["part"] == "short"]
    if not p:
        return
    best = [max(r["folded_variance"], r["autocorrelation"]) for r in p]
    new = sum(r["exact_new"] for r in p)
    old = sum(r["exact_old"] for r in p)
    fv = sum(r["folded_variance"] for r in p)
    ac = sum(r["autocorrelation"] for r in p)
    m = sum(r["trials"] for r in p)
    flips = [r for r, b in zip(p, best, strict=True) if r["exact_old"] >= b > r["exact_new"] + 2]
    below_old = sum(r["exact_old"] < b for r, b in zip(p, best, strict=True))
    below_new = sum(r["exact_new"] < b for r, b in zip(p, best, strict=True))
    print(f"short (b'): {len(p)} cells, {m} streams; exact without the gate {old}, with it {new};")
    print(f"  folded variance {fv}, autocorrelation {ac}; better baseline per cell summed", end="")
    print(f" {sum(best)}")
    print(f"  cells below the better baseline: without the gate {below_old}, with it {below_new}")
    print("  FAIL cells (ours >= better baseline without the gate, > 2 below it with):", end="")
    print(f" {len(flips)}")
    for r in flips:
        print("   ", r)
    print(f"  PASS (b'): {not flips}")
    gated = sum(r["gated"] for r in p)
    lost = [r for r in p if r["exact_new"] < r["exact_old"]]
    print(f"  streams the gate checked: {gated}; cells losing exact answers: {len(lost)}")
    for key in ("template", "eps0", "cycles", "level"):
        parts = {}
        for r, b in zip(p, best, strict=True):
            t = parts.setdefault(r[key], [0, 0, 0, 0, 0])
            t[0] += r["exact_old"]
            t[1] += r["exact_new"]
            t[2] += r["folded_variance"]
            t[3] += r["autocorrelation"]
            t[4] += b
        print(f"  by {key} (old / new / fv / ac / better): ", end="")
        print("; ".join(f"{k}: {'/'.join(map(str, v))}" for k, v in parts.items()))
    lost.sort(key=lambda r: r["exact_new"] - r["exact_old"])
    for r in lost[:15]:
        print(f"    lost {r['exact_old'] - r['exact_new']}: {r}")


def speed() -> None:
    """(c): CPU of ``detect_period`` at 10,000 reports (warm, median of 5), where the gate is
    skipped by length: a quiet aperiodic stream (level 0.1, eps0 5: quiet_ratio ~0.03), a
    sine T = 37 at eps0 1, and a quiet pulse train T = 37 at eps0 5."""
    import time

    from ldpfleet.collector.period import detect_period

    t = np.arange(10_000)
    for name, eps0, clean in (
        ("level_0.1", 5.0, lambda rng: np.clip(0.1 + 0.03 * rng.standard_normal(t.size), 0, 1)),
        ("sine_37", 1.0, lambda rng: 0.5 + 0.4 * np.sin(2 * np.pi * t / 37)),
        ("pulse_37", 5.0, lambda rng: (t % 37 < 2).astype(float)),
    ):
        rng = np.random.default_rng([SEED, 99, zlib.crc32(name.encode())])
        x = SquareWave(eps0).perturb(clean(rng), rng)
        detect_period(x)  # warm
        ms = []
        for _ in range(5):
            t0 = time.process_time()
            est = detect_period(x)
            ms.append((time.process_time() - t0) * 1e3)
        gated = getattr(est, "permutation_p", None) is not None
        print(f"speed {name} eps0 {eps0}: median {np.median(ms):.1f} ms", end="")
        print(f" (max {max(ms):.1f}),", end="")
        print(f" period {est.period}, gate ran: {gated}")


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "speed":
        speed()
        return 0
    if argv and argv[0] == "summary":
        summary(argv[1:])
        return 0
    if argv and argv[0] == "short":
        import argparse

        ap = argparse.ArgumentParser()
        ap.add_argument("part")
        ap.add_argument("--out", required=True)
        ap.add_argument("--trials", type=int, default=40)
        ap.add_argument("--first", type=int, default=0)
        args = ap.parse_args(argv)
        with Path(args.out).open("a") as out:

            def emit(row):
                out.write(json.dumps(row) + "\n")
                out.flush()

            short(args, emit)
        return 0
    return K2.main(argv)


if __name__ == "__main__":
    sys.exit(main())
