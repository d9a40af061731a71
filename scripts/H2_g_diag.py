"""Diagnostic (after the evaluation, not a fresh one): where helper B's g (the highest 3σ
bucket) and the gap-corrected scan's g differ on the captured θ searches, and how often
each lies above twice the graph's maximum degree (issue 20, helper H).

    python scripts/H2_g_diag.py /tmp/H-fresh/h2fresh-{81,82,83}.pkl \\
        /tmp/H-fresh/large-{81,82,83}.pkl
"""

import pickle
import sys

import numpy as np
from ldpfleet.collector.bucket_denoise import noise_sd
from ldpfleet.collector.bucket_isotonic import top_significant_bucket

rows = []
for path in sys.argv[1:]:
    with open(path, "rb") as fh:
        rows += pickle.load(fh)
seen = set()
far = {"B": 0, "H": 0}
diff = 0
lower_real = 0
tot = 0
for r in rows:
    s = r["search"]
    y = np.asarray(s["bucket_sums"], float)
    key = (r["graph"], y.tobytes())
    if key in seen:
        continue
    seen.add(key)
    tot += 1
    n = len(r["degrees"])
    sd = noise_sd(s["eps"], n, s["noise_parties"])
    edges = np.array([-1, *s["thresholds"], r["bound"]])
    true = np.histogram(r["degrees"], bins=edges + 0.5)[0]
    top = np.flatnonzero(true > 0)[-1]
    dmax = max(r["degrees"])
    gb = top_significant_bucket(y, sd, mode_z=3.0)
    gh = top_significant_bucket(y, sd, mode_z=3.0, gap_corrected=True)
    for k, g in (("B", gb), ("H", gh)):
        if g is not None and edges[g] + 1 > 2 * dmax:
            far[k] += 1
    if gb != gh:
        diff += 1
        kind = "B above true top" if gb > top else "B within tail"
        lower_real += gb <= top
        print(
            r["graph"],
            r["eps"],
            r["seed"],
            "gB",
            gb,
            "gH",
            gh,
            "true top",
            top,
            kind,
            "zB %.1f" % (y[gb] / sd),
        )
print(
    "distinct draws",
    tot,
    "differ",
    diff,
    "of which B g within the true tail",
    lower_real,
    "g above 2x max degree",
    far,
)
