"""Issue 20, knife-edge private medians at small ε: does the θ search's bucket resolution
decide them? (docs/cadr-private.md, "Small ε: bucket resolution, a negative result").

Three modes, run from the repository root:

- ``python scripts/cadr_bucket_resolution.py locate [--graphs A,B] [--eps 0.5]
  [--draws 200]``: per graph of ``app.cadr_grid`` (``ALL_GRAPHS``) the true median ``m``,
  the devices between it and the 1/2 crossing on each side (``n (1/2 - F(m - 1))`` and
  ``n (F(m) - 1/2)``), the θ search's ε_θ, grid size ``K`` and the bucket that holds
  ``m``, the prior's median from the EXACT bucket counts (the resolution alone), the
  noise's standard deviation on the count below ``m`` (the two-sided geometric's
  ``sqrt(2a) / (1 - a)`` per bucket, times ``sqrt(s / m_p)`` for the Pólya shares of all
  ``s`` survivors, times ``sqrt(j (K + 1 - j) / (K + 1))`` after the projection onto
  ``Σ = n``: ``j`` buckets below), and over ``--draws`` noise draws the prior's median
  (the ε <= 0.75 release, docs/cadr-private.md) with the committed rule and with rule A
  (below): share of draws off the true median, its mean MAE excess, the draws per offset;
  with the committed rule also two other readings of the same noisy sums (``denoise``,
  ``iso``: ``_prior_variants``); and the projection's bias: the mass the least-squares
  simplex projection leaves in buckets whose exact count is 0, and the mean and sd of its
  error on the count below m's bucket.
- ``python scripts/cadr_bucket_resolution.py grid --variant old|A [--graphs ...]
  [--eps-list 0.5,0.75,1,2,3,5] [--runs 3]``: the in-process dp pipeline
  (``collector.cadr_reference.private_run``, method ll, seeds 0..runs-1) on every graph,
  one JSON line per run (MAE, histogram L1, EMD, θ, K, the constant true median's MAE).
- ``python scripts/cadr_bucket_resolution.py summarise OLD.jsonl NEW.jsonl``: the
  markdown table of both, per cell, and the cells where NEW is worse than OLD's worst
  seed.

Rule A (chosen before any grid run, from the docstring of ``protocol.cadr_theta_noise.
bucket_count``, whose ``round(n ε_θ / 8)`` keeps the summed noise sds near 0.35 n): the same
rule without the fixed cap 48, up to 256 buckets (the secure sum's dimension), and the
integer part of ``bucket_grid`` a third of the buckets without the fixed cut 16 — more
buckets and every degree up to ``K / 3`` a bucket of its own where ``n ε_θ`` affords them
(ego-Facebook at ε = 0.5: 217 buckets, integers 0..72).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import numpy as np
from ldpfleet.app.cadr_grid import ALL_GRAPHS, grid_graph
from ldpfleet.collector import cadr_reference
from ldpfleet.collector.degree_postprocess import degree_prior, simplex_projection
from ldpfleet.protocol import cadr_theta_noise as tn
from ldpfleet.protocol.cadr_budget import CadrBudget

RULE_A_CAP = 256


def count_a(devices: int, eps: float) -> int:
    """Rule A's bucket count: ``round(n ε / 8)`` within ``[16, RULE_A_CAP]``."""
    return int(min(RULE_A_CAP, max(tn.MIN_BUCKETS, round(devices * eps / 8))))


def grid_a(degree_bound: int, buckets: int) -> list[int]:
    """Rule A's grid: ``bucket_grid`` with the integer part ``min(D - 1, B // 3)``."""
    old = tn.INTEGER_CUT
    tn.INTEGER_CUT = degree_bound  # the cut is then min(D - 1, B // 3)
    try:
        return tn.bucket_grid(degree_bound, buckets)
    finally:
        tn.INTEGER_CUT = old


RULES = {"old": (tn.bucket_count, tn.bucket_grid), "A": (count_a, grid_a)}


def _pava(values: np.ndarray) -> np.ndarray:
    """The non-decreasing least-squares fit of ``values`` (pool adjacent violators)."""
    means: list[float] = []
    sizes: list[int] = []
    for v in values:
        means.append(float(v))
        sizes.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            m2, s2 = means.pop(), sizes.pop()
            m1, s1 = means.pop(), sizes.pop()
            means.append((m1 * s1 + m2 * s2) / (s1 + s2))
            sizes.append(s1 + s2)
    return np.repeat(means, sizes)


def isotonic_sums(sums: np.ndarray, n: int) -> np.ndarray:
    """Prior variant "iso" (not the pipeline's): the least-squares projection onto ``Σ =
    n`` WITHOUT clipping (unbiased: the noise has mean 0), then the counts below each
    threshold made non-decreasing within ``[0, n]`` by isotonic regression; the bucket
    sums are their differences (non-negative, summing to ``n``)."""
    s = np.asarray(sums, dtype=float)
    below = np.cumsum(s - (s.sum() - n) / s.size)[:-1]
    fitted = np.clip(_pava(below), 0.0, float(n))
    return np.diff(np.concatenate([[0.0], fitted, [float(n)]]))


def _prior_variants(eps_theta: float, n: int) -> dict:
    """How the prior's median is read from the noisy sums: the pipeline's ("simplex"), the
    opt-in empirical-Bayes denoiser ("denoise", docs/cadr-private.md "Denoising the bucket
    counts") and "iso" (``isotonic_sums``)."""
    parties = tn.noise_parties(n)
    return {
        "simplex": lambda sums, th: _prior_median(sums, th, n),
        "denoise": lambda sums, th: _prior_median(
            sums, th, n, eps_theta=eps_theta, parties=parties
        ),
        "iso": lambda sums, th: _prior_median(isotonic_sums(sums, n), th, n),
    }


def _median(degrees: np.ndarray) -> int:
    return int(np.sort(degrees)[(len(degrees) - 1) // 2])


def _prior_median(sums: np.ndarray, thresholds: list[int], n: int, **kw: object) -> int:
    prior = degree_prior(sums, thresholds, n - 1, n, **kw)
    return int(np.searchsorted(np.cumsum(prior), 0.5 - 1e-12))


def _noise_sd(eps_theta: float, n: int, below: int, buckets: int) -> float:
    a = float(tn.share_ratio(eps_theta))
    per_bucket = np.sqrt(2 * a) / (1 - a) * np.sqrt(n / tn.noise_parties(n))
    return float(per_bucket * np.sqrt(below * (buckets - below) / buckets))


def locate(label: str, eps: float, draws: int) -> dict:
    """The figures of ``locate`` mode for one graph (module docstring)."""
    degrees = grid_graph(label).degrees()
    n, m = len(degrees), _median(degrees)
    eps_theta = CadrBudget.for_pipeline(eps, 0.1, "dp", True, n).theta
    out = {
        "graph": label,
        "n": n,
        "median": m,
        "margin_below": round(n * (0.5 - float(np.mean(degrees <= m - 1))), 1),
        "margin_above": round(n * (float(np.mean(degrees <= m)) - 0.5), 1),
        "eps_theta": round(eps_theta, 4),
    }
    mae = lambda r: float(np.mean(np.abs(degrees - r)))  # noqa: E731
    readers = _prior_variants(eps_theta, n)
    for name, (count, grid) in RULES.items():
        th = grid(n - 1, count(n, eps_theta))
        exact = np.bincount(np.searchsorted(th, degrees, side="left"), minlength=len(th) + 1)
        j = int(np.searchsorted(th, m))
        medians: dict[str, list[int]] = {key: [] for key in readers}
        empty_mass, below_error = [], []
        for seed in range(draws):
            noise = tn.noise_sum(
                np.random.default_rng(seed), n, tn.noise_parties(n), eps_theta, len(exact)
            )
            projected = simplex_projection(exact + noise, n)
            empty_mass.append(float(projected[exact == 0].sum()))
            below_error.append(float(projected[:j].sum() - exact[:j].sum()))
            for key, read in readers.items():
                if name == "old" or key == "simplex":
                    medians[key].append(read(exact + noise, th))
        out[name] = {
            "thresholds": len(th),
            "bucket": [th[j - 1] + 1 if j > 0 else 0, th[j] if j < len(th) else n - 1],
            "exact_prior_median": _prior_median(exact, th, n),
            "noise_sd_below_median": round(_noise_sd(eps_theta, n, j, len(th) + 1), 1),
            "empty_buckets": int(np.sum(exact == 0)),
            "mass_in_empty_buckets": round(float(np.mean(empty_mass)), 1),
            "count_below_error_mean_sd": [
                round(float(np.mean(below_error)), 1),
                round(float(np.std(below_error)), 1),
            ],
        }
        for key, ms in medians.items():
            if not ms:
                continue
            offs, counts = np.unique(np.array(ms) - m, return_counts=True)
            out[name][key] = {
                "off": round(float(np.mean(np.array(ms) != m)), 3),
                "excess": round(float(np.mean([mae(r) for r in ms])) - mae(m), 4),
                "offsets": dict(zip(offs.tolist(), counts.tolist(), strict=True)),
            }
    return out


def grid_runs(variant: str, graphs: list[str], eps_list: list[float], runs: int) -> None:
    """The ``grid`` mode: one JSON line per run on stdout."""
    cadr_reference.bucket_count, cadr_reference.bucket_grid = RULES[variant]
    for label in graphs:
        graph = grid_graph(label)
        for eps in eps_list:
            for seed in range(runs):
                r = cadr_reference.private_run(
                    graph, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp"
                )
                row = {
                    "variant": variant,
                    "graph": label,
                    "n": graph.n,
                    "eps": eps,
                    "seed": seed,
                    "mae": r.mae,
                    "l1": r.histogram_l1,
                    "emd": r.histogram_emd,
                    "theta": r.theta,
                    "k": len(r.theta_search["thresholds"]),
                    "median": r.baselines["constant_median_oracle"]["mae"],
                }
                print(json.dumps(row), flush=True)


def summarise(old_path: str, new_path: str) -> None:
    """The ``summarise`` mode: per (graph, ε) the means of both files and the deltas."""
    rows: dict[tuple, list[dict]] = {}
    variants = []
    for path in (old_path, new_path):
        with open(path, encoding="utf-8") as fh:
            runs = [json.loads(line) for line in fh if line.strip()]
        variants.append(runs[0]["variant"])
        for r in runs:
            rows.setdefault((r["graph"], r["eps"], r["variant"]), []).append(r)
    old_v, new_v = variants
    print(
        "| graph | ε | thresholds old / new | MAE oracle | MAE old (min–max) "
        "| MAE new (min–max) | Δ MAE | L1 old / new | EMD old / new | new worse than old's worst |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    worse = 0
    order = list(ALL_GRAPHS)
    for g, e in sorted({k[:2] for k in rows}, key=lambda k: (order.index(k[0]), k[1])):
        o, w = rows.get((g, e, old_v)), rows.get((g, e, new_v))
        if not o or not w:
            continue
        mo, mn = [r["mae"] for r in o], [r["mae"] for r in w]
        flag = np.mean(mn) > max(mo) + 1e-9
        worse += int(flag)
        print(
            f"| {g} | {e:g} | {o[0]['k']} / {w[0]['k']} | {o[0]['median']:.3f} "
            f"| {np.mean(mo):.3f} ({min(mo):.3f}–{max(mo):.3f}) "
            f"| {np.mean(mn):.3f} ({min(mn):.3f}–{max(mn):.3f}) | {np.mean(mn) - np.mean(mo):+.3f} "
            f"| {np.mean([r['l1'] for r in o]):.3f} / {np.mean([r['l1'] for r in w]):.3f} "
            f"| {np.mean([r['emd'] for r in o]):.2f} / {np.mean([r['emd'] for r in w]):.2f} "
            f"| {'**yes**' if flag else ''} |"
        )
    print(f"\n{worse} cell(s) where {new_v}'s mean MAE is above {old_v}'s worst seed")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python scripts/cadr_bucket_resolution.py")
    sub = ap.add_subparsers(dest="mode", required=True)
    lo = sub.add_parser("locate")
    lo.add_argument("--graphs", default=",".join(ALL_GRAPHS))
    lo.add_argument("--eps", type=float, default=0.5)
    lo.add_argument("--draws", type=int, default=200)
    gr = sub.add_parser("grid")
    gr.add_argument("--variant", choices=sorted(RULES), default="old")
    gr.add_argument("--graphs", default=",".join(ALL_GRAPHS))
    gr.add_argument("--eps-list", default="0.5,0.75,1,2,3,5")
    gr.add_argument("--runs", type=int, default=3)
    su = sub.add_parser("summarise")
    su.add_argument("old")
    su.add_argument("new")
    args = ap.parse_args(argv)
    if args.mode == "locate":
        for label in args.graphs.split(","):
            print(json.dumps(locate(label, args.eps, args.draws)), flush=True)
    elif args.mode == "grid":
        eps_list = [float(e) for e in args.eps_list.split(",")]
        grid_runs(args.variant, args.graphs.split(","), eps_list, args.runs)
    else:
        summarise(args.old, args.new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
