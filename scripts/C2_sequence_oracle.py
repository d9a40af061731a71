"""Helper C2 (issue 19): the per-window Bayes oracle of bench gcdp next to a SEQUENCE
oracle that also uses the persistence of occupancy in time: a two-state hidden Markov
model whose emissions are the per-window oracle's class likelihoods (the empirical
mixture of the clean test windows of each class convolved with the method's public noise
law) and whose transition rates are counted on the test labels; forward-backward
posterior, best threshold on the test labels.  It knows what no fair classifier knows
(clean test windows, labels, transition rates, threshold); it is a diagnostic of what
post-processing the released SEQUENCE can reach, not a strict bound (it ignores the
continuity of the clean values, which a smoother can also use).

    python scripts/C2_sequence_oracle.py [--test-file F] [--draws 10] [--seed 0]
"""

from __future__ import annotations

import argparse

import numpy as np
from ldpfleet.app import bench_gcdp as b
from ldpfleet.app.gcdp_datasets import prepare

METHODS = ("Lap-DP", "Gau-DP", "Ada-DP", "Risk-DP", "GC-DP")
EPS = (0.2, 0.5, 1.0, 2.0, 4.0)


def class_loglik(x, y, law, released):
    scale = np.maximum(np.asarray(law.scale, dtype=float), 1e-12)
    diff = (released[:, None, :] - x[None, :, :]) / scale
    loglik = -(np.abs(diff) if law.kind == "laplace" else 0.5 * diff**2).sum(axis=2)
    return np.stack([b._log_mean_exp(loglik[:, y == c]) for c in (0, 1)], axis=1)


def forward_backward(emit, trans, prior):
    """Posterior log-odds of state 1 per step (log-space, two states)."""
    n = emit.shape[0]
    lt = np.log(trans)
    fwd = np.zeros((n, 2))
    bwd = np.zeros((n, 2))
    fwd[0] = np.log(prior) + emit[0]
    for t in range(1, n):
        fwd[t] = emit[t] + (np.logaddexp(fwd[t - 1, 0] + lt[0], fwd[t - 1, 1] + lt[1]))
    for t in range(n - 2, -1, -1):
        nxt = bwd[t + 1] + emit[t + 1]
        bwd[t] = np.logaddexp(lt[:, 0] + nxt[0], lt[:, 1] + nxt[1])
    post = fwd + bwd
    return post[:, 1] - post[:, 0]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--test-file")
    ap.add_argument("--draws", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    prep = prepare("occupancy", test_file=args.test_file)
    tau, _ = b.select_tau(prep, args.draws, args.seed)
    cal = b._calibrate_prepared(prep, tau)
    cal = {"bounds": prep.bounds, "gau_l2": prep.gau_l2, "gau_changed": prep.gau_changed,
           "readings": prep.readings, **cal}  # fmt: skip
    x, y = prep.test_f, np.asarray(prep.test_l)
    trans = np.array([[np.sum((y[:-1] == a) & (y[1:] == c)) + 0.5 for c in (0, 1)] for a in (0, 1)])
    trans /= trans.sum(axis=1, keepdims=True)
    prior = np.array([np.mean(y == 0), np.mean(y == 1)])
    seed_f1 = b.SEED_TABLES["occupancy"]["f1"]
    print(f"tau {tau}; windows {y.size}; label changes {int(np.sum(y[1:] != y[:-1]))}")
    print("eps | method: per-window oracle / sequence oracle (seed)")
    for e in EPS:
        row = []
        for m in METHODS:
            law = b.noise_law(m, cal, e)
            win, seq = [], []
            for k in range(args.draws):
                rng = np.random.default_rng([args.seed, round(e * 1e6), k, 3])
                rel = b._release(m, x, cal, e, rng)
                emit = class_loglik(x, y, law, rel)
                win.append(b.best_threshold_f1(y, emit[:, 1] - emit[:, 0]))
                seq.append(b.best_threshold_f1(y, forward_backward(emit, trans, prior)))
            row.append(f"{m} {np.mean(win):.1f} / {np.mean(seq):.1f} ({seed_f1[m][e]})")
        print(f"{e}: " + "; ".join(row), flush=True)


if __name__ == "__main__":
    main()
