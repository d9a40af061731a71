"""Helper C2 (issue 19, G4): is there a Gaussian noise level at which Gau-DP beats Lap-DP
in task F1 AND is below it in attack AUC, as the seed has at every budget (Table 8:
Gau-DP F1 0.4-0.8 above Lap-DP; Table 10: its AUC 0.007-0.009 below)?  Uniform Gaussian
noise of standard deviation c x Lap-DP's per-coordinate standard deviation (continuous
sampler, exploration only), the kept classifier and the kept temporal attacker, datatest,
10 draws.

    python scripts/C2_gau_lap_window.py
"""

from __future__ import annotations

import numpy as np
from ldpfleet.app.gcdp_datasets import ATTACK_LAG, prepare
from ldpfleet.collector.gcdp.evaluation import f1_percent, oriented_auc, temporal_smooth

EPS = (0.2, 0.5, 1.0, 2.0, 4.0)
RATIOS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.4)


def scores(prep, released):
    f1 = f1_percent(prep.test_l, prep.model.predict(np.clip(released, 0.0, 1.0)))
    seen = temporal_smooth(np.clip(released, 0.0, 1.0), ATTACK_LAG)[:, prep.attack_inputs]
    return f1, oriented_auc(prep.protected, prep.temporal_attacker.decision(seen))


def main() -> None:
    prep = prepare("occupancy")
    x = prep.test_f
    d = x.shape[1]
    for e in EPS:
        lap_scale = float(prep.bounds[0]) / (e / d)
        lap_sd = np.sqrt(2.0) * lap_scale
        lap = np.array([scores(prep, np.clip(x, 0, 1) + np.random.default_rng([0, k]).laplace(
            0.0, lap_scale, x.shape)) for k in range(10)]).mean(axis=0)  # fmt: skip
        cells = []
        for c in RATIOS:
            g = np.array([scores(prep, np.clip(x, 0, 1) + np.random.default_rng([0, k]).normal(
                0.0, c * lap_sd, x.shape)) for k in range(10)]).mean(axis=0)  # fmt: skip
            ok = "*" if g[0] > lap[0] and g[1] < lap[1] else " "
            cells.append(f"{c}: {g[0]:.1f}/{g[1]:.3f}{ok}")
        print(f"eps {e}: Lap {lap[0]:.1f}/{lap[1]:.3f} | " + " ".join(cells), flush=True)


if __name__ == "__main__":
    main()
