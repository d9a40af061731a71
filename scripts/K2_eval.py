"""Helper K2's evaluation of step 11 v2, the permutation gate on quiet short streams
(docs/preregistration/K2-quiet-permutation.md; ``scripts/K_eval.py`` extended: a fresh
default block, the per-cell binomial criterion, the gated streams' CPU). One
``detect_period`` run per stream gives the answer with the gate (``est.period``) and without
it (a withdrawn claim abstains with ``candidate`` the claim and ``permutation_p`` above
``PERMUTATION_ALPHA``); ``permutation_p`` is set on every stream the gate checked. Step 11
v2 FAILED its registration (criterion (d)) and is not in the tree: apply
docs/preregistration/K2-quiet-permutation.diff first (without it both answers agree).

    python scripts/K2_eval.py quiet --out /tmp/K2-quiet.jsonl [--trials 500] [--offset 120000]
    python scripts/K2_eval.py grid --out /tmp/K2-grid.jsonl [--trials 40] [--first 0]
    python scripts/K2_eval.py heldout --out /tmp/K2-held.jsonl [--trials 40] [--first 0]
    python scripts/K2_eval.py summary /tmp/K2-quiet.jsonl /tmp/K2-grid.jsonl /tmp/K2-held.jsonl
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np
from ldpfleet.app.bench_cpr_grid import grid_cells
from ldpfleet.app.cpr_grid_streams import grid_stream, grid_template, source_name, trial_rng
from ldpfleet.app.cpr_period_baselines import autocorrelation_period, folded_variance_period
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave
from scipy import stats

HERE = Path(__file__).resolve().parent
QUIET_FAMILIES = (
    "level_0.05",
    "level_0.1",
    "level_0.3",
    "level_0.9",
    "level_1.0",
    "poisson_spikes",
)
QUIET_N = (45, 60, 90, 120, 150)
QUIET_EPS0 = (3.0, 5.0)
GRID_SHAPES = ((25, 12), (50, 3))  # the grid's shapes with n <= PERMUTATION_STREAM (300)
HELD_SHAPES = ((13, 4), (90, 3))  # helper H's periodic shapes with n <= 300
HELD_EPS0 = (0.3, 1.0, 3.0)


def _h():
    spec = importlib.util.spec_from_file_location("H_heldout_cpr", HERE / "H_heldout_cpr.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


GATED_MS: list[float] = []  # CPU of each stream the gate checked (this process)


def both(reports) -> tuple[int | None, int | None, float]:
    """(answer with the gate, answer without it, CPU ms)."""
    t0 = time.process_time()
    est = detect_period(reports)
    ms = (time.process_time() - t0) * 1e3
    old = est.period
    gated = getattr(est, "permutation_p", None) is not None
    if gated:
        GATED_MS.append(ms)
    if old is None and gated:
        old = est.candidate  # a claim step 11 withdrew
    return est.period, old, ms


def _gated() -> dict:
    """The gate's streams since the last call: how many and their CPU (ms)."""
    ms = list(GATED_MS)
    GATED_MS.clear()
    return {"gated": len(ms), "gated_ms": [round(t, 1) for t in ms]}


def quiet(args, emit) -> None:
    h = _h()
    for name in QUIET_FAMILIES:
        for n in QUIET_N:
            for eps0 in QUIET_EPS0:
                tag = f"{name}/{n}/{eps0}"
                new = old = 0
                ms = []
                for trial in range(args.offset, args.offset + args.trials):
                    rng = h.rng_for("aperiodic", tag, trial)
                    reports = SquareWave(eps0).perturb(h.family(name)(n, rng), rng)
                    a, b, t = both(reports)
                    new += a is not None
                    old += b is not None
                    ms.append(t)
                emit(
                    {
                        "part": "quiet",
                        "family": name,
                        "n": n,
                        "eps0": eps0,
                        "trials": args.trials,
                        "offset": args.offset,
                        "claims_new": new,
                        "claims_old": old,
                        "cpu_ms_median": float(np.median(ms)),
                        **_gated(),
                    }
                )


def _row(part, key, trials, period, hits_new, hits_old, base) -> dict:
    return {
        "part": part,
        **key,
        "period": period,
        "trials": trials,
        "exact_new": hits_new,
        "exact_old": hits_old,
        "folded_variance": base["folded_variance"],
        "autocorrelation": base["autocorrelation"],
        **_gated(),
    }


def grid(args, emit) -> None:
    for source, period, cycles, eps0, jitter, drift in grid_cells(shapes=GRID_SHAPES):
        n = period * cycles
        tag = f"{source_name(source)}/{period}/{cycles}/{eps0}/{jitter}/{drift}"
        hn = ho = 0
        base = {"folded_variance": 0, "autocorrelation": 0}
        for trial in range(args.first, args.first + args.trials):
            rng = trial_rng(0, "grid", trial, tag)
            clean = grid_stream(grid_template(source, period, rng), n, rng, jitter, drift)
            reports = SquareWave(eps0).perturb(clean, rng)
            a, b, _ = both(reports)
            hn += a == period
            ho += b == period
            base["folded_variance"] += folded_variance_period(reports) == period
            base["autocorrelation"] += autocorrelation_period(reports) == period
        key = {"source": source_name(source), "cycles": cycles, "eps0": eps0}
        emit(
            _row(
                "grid", {**key, "jitter": jitter, "drift": drift}, args.trials, period, hn, ho, base
            )
        )


def heldout(args, emit) -> None:
    h = _h()
    for name in h.TEMPLATES:
        for period, cycles in HELD_SHAPES:
            for eps0 in HELD_EPS0:
                tag = f"{name}/{period}/{cycles}/{eps0}"
                hn = ho = 0
                base = {"folded_variance": 0, "autocorrelation": 0}
                for trial in range(args.first, args.first + args.trials):
                    rng = h.rng_for("periodic", tag, trial)
                    clean = h.periodic_stream(h.template(name, period, rng), cycles, rng)
                    reports = SquareWave(eps0).perturb(clean, rng)
                    a, b, _ = both(reports)
                    hn += a == period
                    ho += b == period
                    base["folded_variance"] += folded_variance_period(reports) == period
                    base["autocorrelation"] += autocorrelation_period(reports) == period
                key = {"template": name, "cycles": cycles, "eps0": eps0}
                emit(_row("heldout", key, args.trials, period, hn, ho, base))


def summary(paths) -> None:
    rows = [json.loads(line) for p in paths for line in Path(p).read_text().splitlines()]
    q = [r for r in rows if r["part"] == "quiet"]
    if q:
        k_new = sum(r["claims_new"] for r in q)
        k_old = sum(r["claims_old"] for r in q)
        m = sum(r["trials"] for r in q)
        worst = max(q, key=lambda r: r["claims_new"])
        upper = stats.beta.ppf(0.95, k_new + 1, m - k_new) if k_new < m else 1.0
        # per-cell criterion: a cell fails if P(X >= x | trials, 1 %) < 0.001
        tails = [(stats.binom.sf(r["claims_new"] - 1, r["trials"], 0.01), r) for r in q]
        failing = [r for t, r in tails if t < 0.001]
        smallest, at = min(tails, key=lambda tr: tr[0])
        print(f"quiet: {len(q)} cells, {m} streams; claims without the gate {k_old}", end="")
        print(f" ({k_old / m:.2%}),")
        print(f"  with it {k_new} ({k_new / m:.2%}; one-sided 95 % upper {upper:.3%})")
        w = worst
        print(f"  worst cell with the gate: {w['claims_new']} of {w['trials']}", end="")
        print(f" ({w['family']}, n {w['n']}, eps0 {w['eps0']})")
        over = [r for r in q if r["claims_new"] > 0.01 * r["trials"]]
        over_old = sum(r["claims_old"] > 0.01 * r["trials"] for r in q)
        print(f"  cells above 1 %: {len(over)}; without the gate: {over_old}")
        print(f"  cells failing the binomial test (P(X >= x | 1 %) < 0.001): {len(failing)}")
        print(f"  smallest P(X >= x | 1 %): {smallest:.4f} ({at['family']}, n {at['n']},", end="")
        print(f" eps0 {at['eps0']}: {at['claims_new']} of {at['trials']})")
        print(f"  pooled one-sided 95 % Clopper-Pearson upper bound <= 1 %: {upper <= 0.01}")
        cpu = [r["cpu_ms_median"] for r in q]
        print(f"  median CPU ms per stream, cell medians: {min(cpu):.1f} .. {max(cpu):.1f}")
    gated = [
        (r.get("n") or r["period"] * r["cycles"], t) for r in rows for t in r.get("gated_ms", [])
    ]
    if gated:
        print(f"gated streams: {len(gated)}; CPU ms per gated stream (whole detect_period):")
        for lo, hi in ((0, 100), (101, 200), (201, 300)):
            ts = [t for n, t in gated if lo <= n <= hi]
            if ts:
                print(f"  n {lo}-{hi}: {len(ts)} streams,", end="")
                print(f" median {np.median(ts):.0f}, max {max(ts):.0f}")
    for part in ("grid", "heldout"):
        p = [r for r in rows if r["part"] == part]
        if not p:
            continue
        new = sum(r["exact_new"] for r in p)
        old = sum(r["exact_old"] for r in p)
        m = sum(r["trials"] for r in p)
        flips = [
            r
            for r in p
            if r["exact_old"] >= max(r["folded_variance"], r["autocorrelation"])
            and r["exact_new"] < max(r["folded_variance"], r["autocorrelation"]) - 2
        ]
        print(f"{part}: {len(p)} cells, {m} streams; exact without the gate {old},", end="")
        print(f" with it {new} ({new / max(old, 1):.2%} of it; >= 98 %: {new >= 0.98 * old})")
        print(f"  cells newly > 2 below the better baseline: {len(flips)}")
        for r in flips:
            print("   ", r)
        lost = [r for r in p if r["exact_new"] < r["exact_old"]]
        lost.sort(key=lambda r: r["exact_new"] - r["exact_old"])
        for r in lost[:12]:
            print(f"    lost {r['exact_old'] - r['exact_new']}: {r}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=("quiet", "grid", "heldout", "summary"))
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--out")
    ap.add_argument("--trials", type=int)
    ap.add_argument("--offset", type=int, default=120_000)  # quiet: first trial
    ap.add_argument("--first", type=int, default=0)  # grid, heldout: first trial
    args = ap.parse_args(argv)
    if args.part == "summary":
        summary(args.paths)
        return 0
    if args.trials is None:
        args.trials = 500 if args.part == "quiet" else 40
    with Path(args.out).open("a") as out:

        def emit(row):
            out.write(json.dumps(row) + "\n")
            out.flush()

        {"quiet": quiet, "grid": grid, "heldout": heldout}[args.part](args, emit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
