"""The scale of Algorithm 2's masking deltas against the certificate B = 1/30 on the shipped
Occupancy training file (helper G, 2026-12-05; docs/gcdp.md "Masking-delta scale"): the
deltas, xi, the scales s = max(B, xi) and the GC-DP budgets at eps = 1 under each masking
reading, on the graph at tau = 0.25. No release is drawn.

    python scripts/G2_xi_scale.py
"""

from __future__ import annotations

import numpy as np
from ldpfleet.app.gcdp_datasets import prepare
from ldpfleet.collector.gcdp import (
    allocate_budget,
    calibrate_from_data,
    empirical_influence,
    release_scales,
    window_masking_deltas,
)

WINDOW = 30


def main() -> None:
    prep = prepare("occupancy")
    x = prep.train_nodes
    print("training records x nodes", x.shape, "channel means", x.mean(axis=0).round(4))
    graph = calibrate_from_data(x, tau=0.25)
    print("r_bar", graph.exposure_norm.round(3), "edges", graph.edges)
    readings = {
        "occurrence": {"unit": "occurrence"},
        "node": {},
        "node, max": {"aggregate": "max"},
        "node, mask = mean": {"mask_values": x.mean(axis=0)},
    }
    for name, options in readings.items():
        deltas = window_masking_deltas(x, WINDOW, **options)
        for neighbours in ("coordinate", "own"):
            xi = empirical_influence(deltas, graph, neighbour_delta=neighbours)
            scales = release_scales(prep.bounds, xi)
            budgets = allocate_budget(1.0, scales, prep.utility, graph.exposure_norm)
            print(f"{name:18s} {neighbours:10s} delta_kk {np.diag(deltas).round(4)}"
                  f" s {scales.round(4)} s/B {(scales / prep.bounds).round(1)}"
                  f" budgets {budgets.round(3)}")  # fmt: skip


if __name__ == "__main__":
    main()
