"""Helper C2 exploration (issue 19): which downstream readings make seed 000's Table 8
Occupancy row jointly reachable?  Prints, per candidate, the 25 cells, how many are
within 2 F1 points of the seed's and the RMS deviation.  In-process, test file datatest."""

from __future__ import annotations

import sys

import numpy as np
from ldpfleet.app import bench_gcdp as b
from ldpfleet.app.gcdp_datasets import parse_readings, prepare
from ldpfleet.collector.gcdp.evaluation import f1_percent, temporal_smooth

SEED = b.SEED_TABLES["occupancy"]["f1"]
METHODS = ("Lap-DP", "Gau-DP", "Ada-DP", "Risk-DP", "GC-DP")
EPS = (0.2, 0.5, 1.0, 2.0, 4.0)


def macro(t, p):
    return 0.5 * (f1_percent(t, p) + f1_percent(1 - t, 1 - p))


def acc(t, p):
    return 100.0 * float(np.mean(t == p))


def run(window=30, readings="", lags=(0, 1, 2, 3), draws=10, tau=None, test_file=None):
    r = parse_readings(readings)
    prep = prepare("occupancy", None, window, r, test_file=test_file)
    if tau is None:
        tau, _ = b.select_tau(prep, draws, 0)
    cal = b._calibrate_prepared(prep, tau)
    models = {L: prep.fit_task(temporal_smooth(prep.train_f, L), prep.train_l) for L in lags}
    out = {}
    for m in ("NonPrivate", *METHODS):
        for e in EPS:
            acc_ = {}
            for k in range(draws):
                rel = b._release_all(
                    m, prep.test_f, cal, e, np.random.default_rng([0, round(e * 1e6), k])
                )
                for L in lags:
                    pred = np.asarray(models[L].predict(temporal_smooth(rel, L)))
                    for name, fn in (("pos", f1_percent), ("macro", macro), ("acc", acc)):
                        acc_.setdefault((L, name), []).append(fn(prep.test_l, pred))
            for key, v in acc_.items():
                out[(m, e, *key)] = float(np.mean(v))
    return out, tau, prep


def report(out, label, lags=(0, 1, 2, 3)):
    for L in lags:
        for name in ("pos", "macro", "acc"):
            cells = [(out[(m, e, L, name)], SEED[m][e]) for m in METHODS for e in EPS]
            dev = np.array([a - s for a, s in cells])
            within = int(np.sum(np.abs(dev) <= 2))
            rows = " | ".join(
                f"{e}: " + " ".join(f"{out[(m, e, L, name)]:.1f}" for m in METHODS) for e in EPS
            )
            print(
                f"{label} lag={L} {name}: within2={within} rms={np.sqrt(np.mean(dev**2)):.2f} "
                f"NP={out[('NonPrivate', 1.0, L, name)]:.1f} || {rows}"
            )
    sys.stdout.flush()


if __name__ == "__main__":
    for w in [int(a) for a in sys.argv[1:]] or [30]:
        out, tau, prep = run(window=w)
        report(out, f"w{w} tau={tau} n={len(prep.test_l)}")
