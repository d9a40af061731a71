"""Re-read captured dp runs (``scripts/cadr_small_capture.py``): the limit and the guard.

    python scripts/cadr_small_guard.py limit RUNS.pkl EXACT.pkl   # the oracle table
    python scripts/cadr_small_guard.py guard RUNS.pkl [...]       # ours vs the guard

Per run (the same DSR releases, θ and θ-search counts the pipeline had):

- ``ours``: the pipeline's release, ``post_process(y, θ, ε_dsr, degree_prior(counts))``
  (checked equal to the run's MAE);
- ``oracle``: the same posterior-median release with the TRUE degree distribution as the
  prior (``post_process(y, θ, ε_dsr, true)``): no post-processing of these releases that
  reads the θ search's counts can know more about the degree distribution;
- ``oracle_exact`` (``limit`` only): the same with the run where θ is the exact-count θ;
- ``raw``: the DSR values rounded and clipped to ``[0, θ]``; ``median``: every node at the
  TRUE median (a non-private oracle); ``zero``: every node 0;
- ``guard``: ``post_process(..., theta_noise=ThetaNoise(ε_θ, parties, K))`` (the θ
  search's public noise law): where ``n < √K σ`` the DSR values' own deconvolution's
  posterior medians (``collector.degree_postprocess``, "The small-fleet guard").

Scores are per-node MAE; per (graph, ε) cell the mean over the seeds. Issue 20, helper B,
2026-12-05; docs/cadr-private.md "Small graphs: the limit and the guard".
"""

from __future__ import annotations

import pickle
import sys
from collections import defaultdict

import numpy as np
from ldpfleet.collector import degree_postprocess as dpp


def _mae(d, v) -> float:
    return float(np.mean(np.abs(np.asarray(d, float) - np.asarray(v, float))))


def _prior(r) -> np.ndarray:
    s = r["search"]
    return dpp.degree_prior(s["bucket_sums"], s["thresholds"], r["bound"], len(r["degrees"]))


def _true_prior(r) -> np.ndarray:
    counts = np.bincount(np.minimum(r["degrees"], r["bound"]), minlength=r["bound"] + 1)
    return counts / counts.sum()


def readings(r, guard: bool = True) -> dict:
    """Every reading's MAE for one captured run."""
    d, y, t, e = r["degrees"], r["released"], r["theta"], r["eps_dsr"]
    median = int(np.floor(np.median(d)))
    out = {
        "ours": _mae(d, dpp.post_process(y, t, e, _prior(r)).estimates),
        "oracle": _mae(d, dpp.post_process(y, t, e, _true_prior(r)).estimates),
        "raw": _mae(d, np.clip(np.round(y), 0, t)),
        "median": _mae(d, median),
        "zero": _mae(d, 0),
    }
    assert abs(out["ours"] - r["mae"]) < 1e-9, (out["ours"], r["mae"])
    if guard:
        s = r["search"]
        noise = dpp.ThetaNoise(s["eps"], s["noise_parties"], len(s["bucket_sums"]))
        post = dpp.post_process(y, t, e, _prior(r), theta_noise=noise)
        out["guard"] = _mae(d, post.estimates)
        out["guarded"] = not post.prior_trusted
    return out


def _cells(rows, guard=True) -> dict:
    cells = defaultdict(list)
    for r in rows:
        cells[(r["graph"], r["n"], r["eps"])].append({**readings(r, guard), "theta": r["theta"]})
    return cells


def _mean(runs, key) -> float:
    return float(np.mean([x[key] for x in runs]))


def limit(rows, exact_rows) -> None:
    """The oracle table (markdown): per (graph, ε) the means over the seeds of every
    reading, θ per seed and θ on the exact counts."""
    exact = _cells(exact_rows, guard=False)
    head = ["graph", "n", "ε", "ours", "guard", "oracle", "oracle, exact θ", "raw clipped"]
    head += ["constant median", "all zero", "θ (exact)"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    above = {"ours": 0, "oracle": 0, "oracle_exact": 0}
    cells = _cells(rows)
    for key, runs in cells.items():
        ex = exact[key]
        m = {k: _mean(runs, k) for k in ("ours", "guard", "oracle", "raw", "median", "zero")}
        m["oracle_exact"] = _mean(ex, "oracle")
        for k in above:
            above[k] += m[k] > m["median"] + 1e-9
        thetas = "/".join(str(x["theta"]) for x in runs)
        print(
            f"| {key[0]} | {key[1]} | {key[2]:g} | {m['ours']:.3f} | {m['guard']:.3f} | "
            f"{m['oracle']:.3f} | "
            f"{m['oracle_exact']:.3f} | {m['raw']:.3f} | {m['median']:.3f} | {m['zero']:.3f} | "
            f"{thetas} ({ex[0]['theta']}) |"
        )
    print(f"\ncells above the constant median (of {len(cells)}): {above}")


def guard_table(rows) -> None:
    """Ours against the guard per cell (markdown) and the aggregate figures."""
    cells = _cells(rows)
    print("| graph | n | ε | ours | guard | constant median | all zero |")
    print("|---|---|---|---|---|---|---|")
    tot = defaultdict(float)
    worse_than_zero = []
    for key, runs in cells.items():
        m = {k: _mean(runs, k) for k in ("ours", "guard", "median", "zero")}
        print(
            f"| {key[0]} | {key[1]} | {key[2]:g} | {m['ours']:.3f} | {m['guard']:.3f} | "
            f"{m['median']:.3f} | {m['zero']:.3f} |"
        )
        for k in ("ours", "guard"):
            tot[f"{k}_sum"] += m[k]
            tot[f"{k}_excess"] += max(0.0, m[k] - m["median"])
            tot[f"{k}_above_zero"] += m[k] > m["zero"] + 1e-9
        tot["guarded_runs"] += sum(x["guarded"] for x in runs)
        tot["guard_better"] += m["guard"] < m["ours"] - 1e-9
        tot["guard_worse"] += m["guard"] > m["ours"] + 1e-9
        if m["ours"] <= m["zero"] + 1e-9 < m["guard"]:
            worse_than_zero.append(key)
    print(f"\ncells {len(cells)}: " + ", ".join(f"{k} {v:.3f}" for k, v in tot.items()))
    print(f"cells where ours <= all zero but guard above: {worse_than_zero}")


def main() -> None:
    mode = sys.argv[1]
    load = []
    for path in sys.argv[2:]:
        with open(path, "rb") as fh:
            load.append(pickle.load(fh))
    if mode == "limit":
        limit(load[0], load[1])
    elif mode == "guard":
        guard_table([r for rows in load for r in rows])
    else:
        raise SystemExit(f"mode: {mode!r} is not limit or guard")


if __name__ == "__main__":
    main()
