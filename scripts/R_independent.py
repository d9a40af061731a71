"""Helper R, post hoc (not a pre-registered result): helper G's 30 graphs at ε = 0.5 with
independent θ-search noise draws (run seeds distinct per graph: 20000 + 100 k + j), main
(method clip, dp, auto-dev) against the no-search arm (θ = ⌈√D⌉). G's own scan reuses run
seeds 0-4 for every graph, and graphs with the same n / ⌈0.9 n⌉ then share one noise draw.

    python scripts/R_independent.py [runs per graph, default 20]
"""

import math
import sys

import numpy as np
from ldpfleet.collector.cadr_reference import private_run
from ldpfleet.collector.degree_postprocess import trivial_baselines

sys.path.insert(0, "scripts")
from R_diag import g_graphs

runs = int(sys.argv[1]) if len(sys.argv) > 1 else 20
tot = {"main": 0.0, "ns": 0.0, "zero": 0.0, "med": 0.0}
cells = {"main": 0, "ns": 0}
runs_above = {"main": 0, "ns": 0}
worst = 0.0
for k, g in enumerate(g_graphs()):
    b = trivial_baselines(g.degrees())
    z, m = b["all_zero"]["mae"], b["constant_median_oracle"]["mae"]
    seeds = [20000 + 100 * k + j for j in range(runs)]
    th = math.ceil(math.sqrt(g.n - 1))
    arms = {
        "main": [private_run(g, "clip", "auto-dev", 0.5, 0.1, s, "dp").mae for s in seeds],
        "ns": [private_run(g, "clip", th, 0.5, 0.1, s, "dp").mae for s in seeds],
    }
    for arm, maes in arms.items():
        tot[arm] += float(np.mean(maes))
        cells[arm] += float(np.mean(maes)) > z
        runs_above[arm] += sum(x > z for x in maes)
    worst = max(worst, max(arms["main"]) / z)
    tot["zero"] += z
    tot["med"] += m
print(f"{runs} independent runs per graph, 30 graphs, eps 0.5")
print(
    f"summed mean MAE: main {tot['main']:.2f}, no-search {tot['ns']:.2f}, "
    f"all zeros {tot['zero']:.2f}, constant median {tot['med']:.2f}"
)
print(
    f"graphs with mean above all zeros: {cells}; runs above all zeros (of {30 * runs}): "
    f"{runs_above}; worst main run / all zeros {worst:.2f}"
)
