"""Helper C2 (issue 19), exploration: the window label read four ways (majority of the
records, kept; any record occupied; all records occupied; the last record) against seed
000's Table 8 Occupancy row; kept classifier, tau by the bench rule, noise seed 0, 10
draws, datatest.  python scripts/C2_label_explore.py
"""

import ldpfleet.app.gcdp_datasets as gd
import numpy as np
from ldpfleet.app import bench_gcdp as b
from ldpfleet.collector.gcdp import evaluation as ev

METHODS = ("Lap-DP", "Gau-DP", "Ada-DP", "Risk-DP", "GC-DP")
EPS = (0.2, 0.5, 1.0, 2.0, 4.0)
seed = b.SEED_TABLES["occupancy"]["f1"]
orig = ev.window_means
for rule in ("majority", "any", "all", "last"):

    def wm(x, y, window, rule=rule):
        f, lab = orig(x, y, window)
        n = f.shape[0] * window
        r = y[:n].reshape(-1, window)
        lab = {"majority": lab, "any": r.max(axis=1), "all": r.min(axis=1), "last": r[:, -1]}[rule]
        return f, np.asarray(lab).astype(int)

    gd.window_means = wm
    prep = gd.prepare("occupancy")
    tau, _ = b.select_tau(prep, 10, 0)
    cal = b._calibrate_prepared(prep, tau)
    out = {
        (m, e): b._mean_f1(m, prep, prep.test_f, prep.test_l, cal, e, 10, 0)[0]
        for m in ("NonPrivate", *METHODS)
        for e in EPS
    }
    dev = np.array([out[(m, e)] - seed[m][e] for m in METHODS for e in EPS])
    print(
        rule,
        "tau",
        tau,
        f"pos share {np.mean(prep.test_l):.3f}",
        "NP {:.1f}".format(out[("NonPrivate", 1.0)]),
        "within2",
        int(np.sum(np.abs(dev) <= 2)),
        f"rms {np.sqrt(np.mean(dev**2)):.2f}",
        "| e0.2:",
        " / ".join(f"{out[(m, 0.2)]:.1f}" for m in METHODS),
        "| e1:",
        " / ".join(f"{out[(m, 1.0)]:.1f}" for m in METHODS),
    )
