"""Diagnostic on helper H's captures (not a fresh evaluation; issue 20): the tail-sum
cut's removed mass vs the true devices above the cut, and j* vs the top truly occupied
bucket (docs/cadr-private.md, "Released histogram: a tail-sum cut (2026-12-05, helper H)").

    python scripts/H_hist_diag.py /tmp/H/hfresh-1.pkl /tmp/H/hfresh-2.pkl /tmp/H/large-1.pkl ...

Summed figures weight each run by 1/2 (a cell is the mean of two seeds).
"""

from __future__ import annotations

import pickle
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, "scripts")
import H_hist_eval as h
from ldpfleet.collector import degree_postprocess as dpp


def _cut(r: dict) -> tuple[np.ndarray, np.ndarray, int, int]:
    """The boot counts, the true bucket counts, j* and the top truly occupied bucket."""
    s, d = r["search"], np.asarray(r["degrees"])
    n, y = len(d), np.asarray(s["bucket_sums"], float)
    sd = h.noise_sd(s["eps"], n, s["noise_parties"])
    x = h.bootstrap_counts(y, n, s["eps"], s["noise_parties"])
    k = y.size
    tails = np.cumsum(y[::-1])[::-1]
    sig = np.flatnonzero(tails >= dpp.MODE_Z * sd * np.sqrt(k - np.arange(k)))
    top = int(sig[-1]) if sig.size else k - 1
    edges = np.array([-1, *s["thresholds"], r["bound"]])
    true = np.histogram(d, bins=edges + 0.5)[0]
    return x, true, top, int(np.flatnonzero(true)[-1])


def main() -> None:
    rows = []
    for path in sys.argv[1:]:
        with open(path, "rb") as fh:
            rows += pickle.load(fh)
    tot = defaultdict(float)
    per = defaultdict(lambda: defaultdict(float))
    for r in rows:
        x, true, top, occ = _cut(r)
        k = x.size
        tot["removed"] += 0.5 * x[top + 1 :].sum()
        tot["true above cut"] += 0.5 * true[top + 1 :].sum()
        tot["runs j* below top occupied"] += top < occ
        tot["empty buckets above top occupied (mean)"] += (k - 1 - occ) / len(rows)
        runs = sum(q["graph"] == r["graph"] for q in rows)
        per[r["graph"]]["removed"] += x[top + 1 :].sum() / runs
        per[r["graph"]]["true above"] += true[top + 1 :].sum() / runs
        per[r["graph"]]["buckets cut below top occ"] += max(0, occ - top) / runs
    print({key: round(float(v), 1) for key, v in tot.items()})
    for graph, v in per.items():
        print(graph, {key: round(float(a), 1) for key, a in v.items()})


if __name__ == "__main__":
    main()
