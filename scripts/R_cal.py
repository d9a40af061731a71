"""Helper R calibration on helper G's 30 graphs (rng 4471): the current default against the
no-search arm (θ = ⌈√D⌉, the small-fleet rule's release) per eps; prints the count-signal
ratio n / (√K σ) the small-fleet test compares with 1.

    python scripts/R_cal.py 0.5,0.75,1,2
"""

import math
import sys

import numpy as np
from ldpfleet.collector.cadr_reference import private_run
from ldpfleet.collector.degree_postprocess import trivial_baselines
from ldpfleet.protocol.cadr_budget import (
    THETA_FRACTION,
    CadrBudget,
    bucket_count,
    bucket_grid,
    noise_parties,
    noise_sd,
    theta_extra,
)

sys.path.insert(0, "scripts")
from R_diag import g_graphs


def ratio(eps, n, bound, alpha=0.1):
    et = CadrBudget(eps, alpha, THETA_FRACTION, theta_extra(eps, alpha, n)).theta
    k = len(bucket_grid(bound, bucket_count(n, et))) + 1
    return n / (math.sqrt(k) * noise_sd(et, n, noise_parties(n)))


eps_list = [float(x) for x in sys.argv[1].split(",")]
for eps in eps_list:
    tot = {"cur": 0.0, "ns": 0.0, "zero": 0.0, "med": 0.0}
    above = {"cur": 0, "ns": 0}
    abovemed = {"cur": 0, "ns": 0}
    for G in g_graphs():
        d = G.degrees()
        b = trivial_baselines(d)
        D = G.n - 1
        th = math.ceil(math.sqrt(D))
        cur = np.mean([private_run(G, "clip", "auto-dev", eps, 0.1, s, "dp").mae for s in range(5)])
        ns = np.mean([private_run(G, "clip", th, eps, 0.1, s, "dp").mae for s in range(5)])
        z, m = b["all_zero"]["mae"], b["constant_median_oracle"]["mae"]
        for k, v in (("cur", cur), ("ns", ns)):
            tot[k] += v
            above[k] += v > z
            abovemed[k] += v > m
        tot["zero"] += z
        tot["med"] += m
        print(
            f"  {G.name} eps {eps} ratio {ratio(eps, G.n, D):.2f} cur {cur:.2f} ns {ns:.2f} "
            f"zero {z:.2f} med {m:.2f}"
        )
    print(
        f"eps {eps}: summed cur {tot['cur']:.2f} nosearch {tot['ns']:.2f} "
        f"zero {tot['zero']:.2f} med {tot['med']:.2f}; "
        f"above zero {above}; above med {abovemed}",
        flush=True,
    )
