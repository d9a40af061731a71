"""Helper L's evaluation of step 12, the level-shift check (docs/preregistration/
L-level-shift.md). One ``detect_period`` run per stream gives the answer with step 12
(``est.period``) and without it (``_shift_checked`` wrapped: the estimate it received).

    python scripts/L_eval.py null --out /tmp/L-null.jsonl [--trials 50]
    python scripts/L_eval.py grid --out /tmp/L-grid.jsonl [--trials 2] [--first 300]
    python scripts/L_eval.py heldout --out /tmp/L-held.jsonl [--trials 4] [--first 300]
    python scripts/L_eval.py speed
    python scripts/L_eval.py summary /tmp/L-null.jsonl /tmp/L-grid.jsonl /tmp/L-held.jsonl

Null seeds ``[SEED, family, n, variant, trial]``, SEED 7311 (v1; v2: ``--seed 7331``;
exploration used 7301, 7302); grid streams the
grid's own ``trial_rng`` at trials ``first ..`` (300 on: the grid's bench uses 0-39);
held-out helper H's ``rng_for`` at trials ``first ..`` (H used 0-39)."""

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
from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave
from scipy import stats

HERE = Path(__file__).resolve().parent
NULL_SEED = 7311
NULL_N = (50, 150, 300, 1000, 3000)
_CHECKED = P._shift_checked
_SEEN: list = []


def _recording(arr, estimate, *args):
    _SEEN.append(estimate.period)
    return _CHECKED(arr, estimate, *args)


P._shift_checked = _recording


def both(reports) -> tuple[int | None, int | None]:
    """(answer with step 12, answer without it)."""
    _SEEN.clear()
    est = P.detect_period(reports)
    return est.period, _SEEN[-1]


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def null(args, emit) -> None:
    m = _load("L_level_shift")
    families = (*m.FAMILIES, "mid")
    for fi, family in enumerate(families):
        for n in NULL_N:
            for vi, (kind, level) in enumerate(m.VARIANTS):
                new = old = 0
                for trial in range(args.trials):
                    rng = np.random.default_rng([args.seed, fi, n, vi, trial])
                    if family == "mid":  # helper U4's stream: a step at the middle
                        h = rng.uniform(0.1, 1.0)
                        x = np.r_[np.zeros(n // 2), np.full(n - n // 2, h)]
                        x = x + rng.normal(0, level, n) if kind == "raw" and level else x
                        if kind == "sw":
                            x = SquareWave(level).perturb(x, rng)
                    else:
                        x = m.stream(family, n, kind, level, rng)
                    a, b = both(x)
                    new += a is not None
                    old += b is not None
                emit(
                    {
                        "part": "null",
                        "family": family,
                        "n": n,
                        "kind": kind,
                        "level": level,
                        "trials": args.trials,
                        "claims_new": new,
                        "claims_old": old,
                    }
                )


def _row(part, key, trials, period, hn, ho, base) -> dict:
    return {
        "part": part,
        **key,
        "period": period,
        "trials": trials,
        "exact_new": hn,
        "exact_old": ho,
        **base,
    }


def grid(args, emit) -> None:
    for source, period, cycles, eps0, jitter, drift in grid_cells():
        n = period * cycles
        tag = f"{source_name(source)}/{period}/{cycles}/{eps0}/{jitter}/{drift}"
        hn = ho = 0
        base = {"folded_variance": 0, "autocorrelation": 0}
        for trial in range(args.first, args.first + args.trials):
            rng = trial_rng(0, "grid", trial, tag)
            clean = grid_stream(grid_template(source, period, rng), n, rng, jitter, drift)
            reports = SquareWave(eps0).perturb(clean, rng)
            a, b = both(reports)
            hn += a == period
            ho += b == period
            base["folded_variance"] += folded_variance_period(reports) == period
            base["autocorrelation"] += autocorrelation_period(reports) == period
        key = {
            "source": source_name(source),
            "cycles": cycles,
            "eps0": eps0,
            "jitter": jitter,
            "drift": drift,
        }
        emit(_row("grid", key, args.trials, period, hn, ho, base))


def heldout(args, emit) -> None:
    h = _load("H_heldout_cpr")
    for name in h.TEMPLATES:
        for period, cycles in h.PERIODIC_SHAPES:
            for eps0 in h.PERIODIC_EPS0:
                tag = f"{name}/{period}/{cycles}/{eps0}"
                hn = ho = 0
                for trial in range(args.first, args.first + args.trials):
                    rng = h.rng_for("periodic", tag, trial)
                    clean = h.periodic_stream(h.template(name, period, rng), cycles, rng)
                    reports = SquareWave(eps0).perturb(clean, rng)
                    a, b = both(reports)
                    hn += a == period
                    ho += b == period
                key = {"template": name, "cycles": cycles, "eps0": eps0}
                emit(_row("heldout", key, args.trials, period, hn, ho, {}))


def speed() -> None:
    k3 = _load("K3_eval")
    k3.speed()


def summary(paths) -> None:
    rows = [json.loads(line) for p in paths for line in Path(p).read_text().splitlines()]
    q = [r for r in rows if r["part"] == "null"]
    if q:
        bad = [r for r in q if stats.binom.sf(r["claims_new"] - 1, r["trials"], 0.01) < 0.001]
        print(
            f"null: {len(q)} cells, claims {sum(r['claims_old'] for r in q)} -> "
            f"{sum(r['claims_new'] for r in q)} of {sum(r['trials'] for r in q)}; "
            f"cells failing the binomial rule: {len(bad)}"
        )
        for r in bad:
            print("  FAIL", r)
    for part in ("grid", "heldout"):
        p = [r for r in rows if r["part"] == part]
        if not p:
            continue
        old = sum(r["exact_old"] for r in p)
        new = sum(r["exact_new"] for r in p)
        changed = [r for r in p if r["exact_new"] != r["exact_old"]]
        print(
            f"{part}: {len(p)} cells, exact {old} -> {new} of {sum(r['trials'] for r in p)}"
            f" ({new / max(old, 1):.4f} of without); cells changed {len(changed)}"
        )
        if part == "grid":
            newly = [
                r
                for r in p
                if r["exact_new"] < max(r["folded_variance"], r["autocorrelation"]) - 2
                and not r["exact_old"] < max(r["folded_variance"], r["autocorrelation"]) - 2
            ]
            print(f"  cells newly more than 2 below the better baseline: {len(newly)}")
        for r in changed:
            print("  changed", r)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("part", choices=("null", "grid", "heldout", "speed", "summary"))
    ap.add_argument("paths", nargs="*")
    ap.add_argument("--out")
    ap.add_argument("--trials", type=int)
    ap.add_argument("--first", type=int, default=300)
    ap.add_argument("--seed", type=int, default=NULL_SEED, help="null streams' seed")
    args = ap.parse_args(argv)
    if args.part == "summary":
        summary(args.paths)
        return 0
    if args.part == "speed":
        speed()
        return 0
    if args.trials is None:
        args.trials = {"null": 50, "grid": 2, "heldout": 4}[args.part]
    out = open(args.out, "a") if args.out else sys.stdout  # noqa: SIM115 - kept open to the end

    def emit(row):
        out.write(json.dumps(row) + "\n")
        out.flush()

    t0 = time.time()
    {"null": null, "grid": grid, "heldout": heldout}[args.part](args, emit)
    print(f"{args.part} done in {time.time() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
