"""Released histogram: the top significant bucket under multiplicity — evaluation (issue 20,
helper H, second round; the harness of ``scripts/B_hist_eval.py`` with a new rule and a new
fresh set ``H2FRESH``).

    python scripts/H2_hist_eval.py capture SET SEEDS OUT.pkl   # SET: h2fresh, large, or B's sets
    python scripts/H2_hist_eval.py compare RUNS.pkl [...]

The fresh set below was fixed before any run on it (networkx seeds 1601-1610, never used).
"""

from __future__ import annotations

import sys

import networkx as nx

sys.path.insert(0, "scripts")
import B_hist_eval as b_eval

# helper H's second evaluation set: fixed 2026-12-05 before any run; B's BFRESH families,
# networkx seeds 1601-1610 (never used before), new sizes in 700-6,000.
H2FRESH = {
    "ba-3200-m2": lambda: nx.barabasi_albert_graph(3200, 2, seed=1601),
    "ba-2000-m5": lambda: nx.barabasi_albert_graph(2000, 5, seed=1602),
    "ba-5000-m3": lambda: nx.barabasi_albert_graph(5000, 3, seed=1603),
    "er-2400-p0.004": lambda: nx.gnp_random_graph(2400, 0.004, seed=1604),
    "plc-6000-m3": lambda: nx.powerlaw_cluster_graph(6000, 3, 0.3, seed=1605),
    "ws-2600-k8": lambda: nx.watts_strogatz_graph(2600, 8, 0.2, seed=1606),
    "sbm-1650-3x550": lambda: nx.stochastic_block_model(
        [550, 550, 550],
        [[0.024 if i == j else 0.002 for j in range(3)] for i in range(3)],
        seed=1607,
    ),
    "config-4000-pl2.3": lambda: b_eval._config_heavy(4000, 1608),
    "gnm-1100-5500": lambda: nx.gnm_random_graph(1100, 5500, seed=1609),
    "plc-900-m2": lambda: nx.powerlaw_cluster_graph(900, 2, 0.5, seed=1610),
}


def _graphs(which: str):
    if which == "h2fresh":
        for name, make in H2FRESH.items():
            yield name, b_eval.capture._graph_of(make())
    else:
        yield from b_eval._graphs(which)


def main() -> None:
    mode = sys.argv[1]
    if mode == "capture":
        b_eval._graphs = _graphs  # the capture loop reads the module's _graphs
        b_eval.capture_runs(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4])
    else:
        raise SystemExit(f"mode: {mode!r} is not capture")


if __name__ == "__main__":
    main()
