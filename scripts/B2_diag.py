"""Diagnose the released histogram's steps on captured runs (issue 20, helper B, round 2).

    python scripts/B2_diag.py RUNS.pkl GRAPH [EPS ...]

Per captured run of GRAPH (at the given ε): the θ search's buckets — noisy sum in noise
sds, the true count, the ``boot`` count — the top significant bucket g chosen by B's rule
(highest at 3σ), H's scan and J's stretch scan, and the histogram EMD/L1 of each reading
(``boot`` alone, B, H, J = main) beside the constant median's. Calibration only: reads the
true degrees.
"""

from __future__ import annotations

import pickle
import sys

import numpy as np
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_denoise import noise_sd
from ldpfleet.collector.bucket_isotonic import (
    TAIL_LEVEL,
    bootstrap_counts,
    geometric_tail_counts,
    second_mode_top,
    top_significant_bucket,
)


def stages(r: dict) -> dict:
    """The readings of one run: name -> (g, counts)."""
    s = r["search"]
    y = np.asarray(s["bucket_sums"], float)
    ts, d, n = list(s["thresholds"]), r["bound"], len(r["degrees"])
    eps, m = s["eps"], s["noise_parties"]
    sd = noise_sd(eps, n, m)
    w = np.diff(np.array([-1, *ts, d]))
    boot = bootstrap_counts(y, n, eps, m)
    out = {"boot": (None, boot)}
    for name, gap, level in (("B", False, None), ("H", True, None), ("J", True, TAIL_LEVEL)):
        x = geometric_tail_counts(
            y, boot, w, sd, mode_z=dpp.MODE_Z, gap_corrected=gap, stretch_level=level
        )
        g = top_significant_bucket(y, sd, mode_z=dpp.MODE_Z, gap_corrected=gap)
        if level is not None and g is not None:
            g = second_mode_top(y, g, sd, level=level)
        out[name] = (g, x)
    return out


def main() -> None:
    path, graph = sys.argv[1], sys.argv[2]
    eps_wanted = {float(e) for e in sys.argv[3:]}
    with open(path, "rb") as fh:
        rows = pickle.load(fh)
    for r in rows:
        if r["graph"] != graph or (eps_wanted and r["eps"] not in eps_wanted):
            continue
        s = r["search"]
        y = np.asarray(s["bucket_sums"], float)
        ts, d, n = list(s["thresholds"]), r["bound"], len(r["degrees"])
        sd = noise_sd(s["eps"], n, s["noise_parties"])
        edges = np.array([-1, *ts, d])
        true = np.histogram(r["degrees"], bins=edges + 0.5)[0]
        st = stages(r)
        base = dpp.trivial_baselines(r["degrees"])["constant_median_oracle"]
        print(
            f"== {graph} eps={r['eps']} seed={r['seed']} sd={sd:.2f} K={y.size}"
            f" median EMD {base['histogram_emd']:.3f} L1 {base['histogram_l1']:.3f}"
        )
        for name, (g, x) in st.items():
            h = dpp._spread(x, ts, d, True)
            hist = dpp.consistent_histogram(h, n)
            print(
                f"  {name:5s} g={g!s:4s} EMD {dpp.histogram_emd(r['degrees'], hist):.3f}"
                f" L1 {dpp.histogram_l1(r['degrees'], hist):.3f}"
            )
        print("  j  (lo,hi]      y/sd   true   boot     B      H      J")
        for j in range(y.size):
            print(
                f"  {j:2d} ({edges[j]},{edges[j + 1]}] {y[j] / sd:6.2f} {true[j]:6d}"
                + "".join(f" {st[k][1][j]:6.1f}" for k in ("boot", "B", "H", "J"))
            )


if __name__ == "__main__":
    main()
