"""Helper C2 (issue 19), exploration: two sequence-aware downstream classifiers of the
release, both post-processing with public inputs only (training windows and labels, the
public theta), against seed 000's Table 8 Occupancy row (tau fixed at 0.25, noise seed 0,
10 draws).  ``logit_hmm``: the kept classifier's logit as a two-state HMM emission
(transition rates counted on the training labels), forward-backward posterior > 0;
``inf``: the per-window Bayes classifier with the method's public noise law and the clean
training windows' empirical class mixtures (``informed_attack_scores``, the informed
attacker's scorer, applied to the task label); ``inf_hmm``: ``inf`` as the HMM emission.
A reading explored, not pre-registered (docs/gcdp.md, "Fresh eyes on the small-eps row").

    python scripts/C2_hmm_explore.py [TEST_FILE]
"""

import sys

import numpy as np
from ldpfleet.app import bench_gcdp as b
from ldpfleet.app.gcdp_datasets import prepare
from ldpfleet.collector.gcdp.evaluation import f1_percent, informed_attack_scores

sys.path.insert(0, "scripts")
from C2_sequence_oracle import forward_backward

METHODS = ("Lap-DP", "Gau-DP", "Ada-DP", "Risk-DP", "GC-DP")
EPS = (0.2, 0.5, 1.0, 2.0, 4.0)
seed_f1 = b.SEED_TABLES["occupancy"]["f1"]
test_file = sys.argv[1] if len(sys.argv) > 1 else None
prep = prepare("occupancy", test_file=test_file)
tau = 0.25
cal = b._calibrate_prepared(prep, tau)
yl = np.asarray(prep.train_l)
trans = np.array([[np.sum((yl[:-1] == a) & (yl[1:] == c)) + 0.5 for c in (0, 1)] for a in (0, 1)])
trans /= trans.sum(axis=1, keepdims=True)
prior = np.array([np.mean(yl == 0), np.mean(yl == 1)])
lp = np.log(prior[1] / prior[0])
res = {}
for m in ("NonPrivate", *METHODS):
    for e in EPS:
        acc = {"logit_hmm": [], "inf": [], "inf_hmm": []}
        for k in range(10):
            rel = b._release_all(
                m, prep.test_f, cal, e, np.random.default_rng([0, round(e * 1e6), k])
            )
            dec = prep.model.decision(rel) - lp
            emit = np.stack([np.zeros_like(dec), dec], axis=1)
            acc["logit_hmm"].append(
                f1_percent(prep.test_l, (forward_backward(emit, trans, prior) > 0).astype(int))
            )
            if m != "NonPrivate":
                law = b.noise_law(m, cal, e)
                s = informed_attack_scores(rel, prep.train_f, prep.train_l, law)
                acc["inf"].append(f1_percent(prep.test_l, (s + lp > 0).astype(int)))
                emit = np.stack([np.zeros_like(s), s], axis=1)
                acc["inf_hmm"].append(
                    f1_percent(prep.test_l, (forward_backward(emit, trans, prior) > 0).astype(int))
                )
        for key, v in acc.items():
            if v:
                res[(m, e, key)] = float(np.mean(v))
for key in ("logit_hmm", "inf", "inf_hmm"):
    dev = np.array([res[(m, e, key)] - seed_f1[m][e] for m in METHODS for e in EPS])
    print(
        key,
        "within2",
        int(np.sum(np.abs(dev) <= 2)),
        f"rms {np.sqrt(np.mean(dev**2)):.2f}",
        "NP",
        res.get(("NonPrivate", 1.0, key)),
    )
    for e in EPS:
        print(
            "   ",
            e,
            " / ".join(f"{res[(m, e, key)]:.1f}" for m in METHODS),
            "| seed",
            " / ".join(str(seed_f1[m][e]) for m in METHODS),
        )
