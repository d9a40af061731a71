"""Helper H's calibration of the gap-corrected top significant bucket (issue 20) on helper
B's calibration captures (read-only, /tmp/B-cal): B's rule against five choices of g, by
summed EMD / L1 and cells above the constant median. Exploratory: the variants here were
seen on the calibration set only; the pre-registered one is in ``scripts/H2_hist_eval.py``.

    python scripts/H2_proto_calibration.py /tmp/B-cal/*.pkl
"""

import math
import pickle
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, "scripts")
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_denoise import noise_sd
from ldpfleet.collector.bucket_isotonic import TAIL_DECAY_MAX, _fitted_decay, bootstrap_counts

R2 = math.sqrt(2)


def g_b(z):
    s = np.flatnonzero(z >= 3)
    return int(s[-1]) if s.size else None


def g0(z):
    mode = int(np.argmax(z))
    if z[mode] < 3:
        return None
    g = mode
    while g + 1 < z.size and z[g + 1] >= 3:
        g += 1
    return g


def g_run(z):
    return g0(z)


def g_bonf_above(z):
    g = g0(z)
    if g is None:
        return None
    N = z.size - 1 - g
    if N <= 0:
        return g
    thr = 3 + math.log(N) / R2
    s = np.flatnonzero(z[g + 1 :] >= thr)
    return g + 1 + int(s[-1]) if s.size else g


def g_gap(spend):
    def f(z):
        g = g0(z)
        if g is None:
            return None
        while True:
            nxt = None
            for j in range(g + 1, z.size):
                k = j - g
                if z[j] >= 3 + math.log(spend(k)) / R2:
                    nxt = j
                    break
            if nxt is None:
                return g
            g = nxt

    return f


def g_global(z):
    thr = 3 + math.log(z.size) / R2
    s = np.flatnonzero(z >= thr)
    return int(s[-1]) if s.size else None


def g_bonf_all(z):
    # highest j: z_j >= 3 + ln(#buckets above g0)/√2 for j>g0, 3 within run
    return g_bonf_above(z)


V = {
    "B": g_b,
    "run": g_run,
    "bonfN": g_bonf_above,
    "gapk": g_gap(lambda k: k),
    "gapkk": g_gap(lambda k: k * (k + 1)),
    "global": g_global,
}


def geo(y, x, w, top):
    if top is None or top >= y.size - 1:
        return x
    live = w[top + 1 :] > 0
    mass = float(x[top + 1 :].sum())
    if mass <= 0 or not live.any():
        return x
    rho = _fitted_decay(y[top + 1 :][live], TAIL_DECAY_MAX)
    shape = np.zeros(live.size)
    shape[live] = rho ** np.arange(int(live.sum()))
    out = x.copy()
    out[top + 1 :] = mass * shape / shape.sum()
    return out


files = sys.argv[1:]
rows = []
for f in files:
    with open(f, "rb") as fh:
        rows += pickle.load(fh)
cells = defaultdict(list)
for r in rows:
    d = r["degrees"]
    s = r["search"]
    n = len(d)
    y = np.asarray(s["bucket_sums"], float)
    ts = list(s["thresholds"])
    D = r["bound"]
    sd = noise_sd(s["eps"], n, s["noise_parties"])
    z = y / sd
    w = np.diff(np.array([-1, *ts, D]))
    boot = bootstrap_counts(y, n, s["eps"], s["noise_parties"])
    base = dpp.trivial_baselines(d)["constant_median_oracle"]
    out = {"median_emd": base["histogram_emd"], "median_l1": base["histogram_l1"]}
    prior, _ = dpp.search_priors(s["bucket_sums"], ts, D, n, s["eps"], s["noise_parties"])
    for k, fn in V.items():
        h = dpp._spread(geo(y, boot, w, fn(z)), ts, D, True)
        post = dpp.post_process(r["released"], r["theta"], r["eps_dsr"], prior, h)
        out[k + "_emd"] = dpp.histogram_emd(d, post.histogram)
        out[k + "_l1"] = dpp.histogram_l1(d, post.histogram)
        out[k + "_g"] = fn(z)
    cells[(r["graph"], r["eps"])].append(out)
tot = defaultdict(float)
real = defaultdict(float)
for key, runs in cells.items():
    m = {k: float(np.mean([x[k] for x in runs])) for k in runs[0] if not k.endswith("_g")}
    isreal = key[0] in ("facebook", "wiki-vote")
    for k in V:
        tot[k + " emd"] += m[k + "_emd"]
        tot[k + " l1"] += m[k + "_l1"]
        tot[k + " above"] += m[k + "_emd"] > m["median_emd"] + 1e-12
        if isreal:
            real[k + " emd"] += m[k + "_emd"]
            real[k + " l1"] += m[k + "_l1"]
    if any(m[k + "_emd"] > m["median_emd"] for k in V) or any(
        abs(m[k + "_emd"] - m["B_emd"]) > 0.3 for k in V
    ):
        print(
            key,
            "med {:.2f}".format(m["median_emd"]),
            " ".join("{} {:.2f}".format(k, m[k + "_emd"]) for k in V),
            [[x[k + "_g"] for k in V] for x in runs],
        )
for k in V:
    print(
        k,
        f"EMD {tot[k + ' emd']:.2f} L1 {tot[k + ' l1']:.3f} above {tot[k + ' above']:.0f}"
        f" | real EMD {real[k + ' emd']:.2f} L1 {real[k + ' l1']:.3f}",
    )
