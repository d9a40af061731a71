"""Released histogram: keep a real second mode above the top significant bucket —
evaluation harness (issue 20, helper J; the harness of ``scripts/B_hist_eval.py`` with a
new rule and new sets).

    python scripts/J_hist_eval.py capture SET SEEDS OUT.pkl   # SET: jbimodal, junimodal, realsmall, or B's/H's sets
    python scripts/J_hist_eval.py compare RUNS.pkl [...]

``capture``: as ``scripts/B_hist_eval.py`` (one ``private_run`` per graph, ε in 0.5, 1,
2, 3, 5 and seed; dp, LL, θ auto-dev, α = 0.1, D = n − 1; the post-processing inputs
spied on). ``compare``: per run the released histogram read two ways from the same
θ-search counts — ``main``: ``histogram_prior`` as on main (B's geometric tail above H's
gap-corrected g), ``rule``: the rule below — scored by L1 and EMD against the true
degrees beside the constant TRUE median's histogram; per (graph, ε) cell the mean over
the seeds; then the pre-registered criterion.

Sets fixed 2026-12-05 (helper J) before any run on them:

- ``jbimodal``: twenty generated BIMODAL graphs, networkx seeds 1701-1720, n 30-3,000:
  two-block stochastic block models with a sparse and a dense block, configuration
  models on a two-mode degree sequence (self-loops and multi-edges removed), a sparse
  and a dense Erdős–Rényi community joined by a few bridges, and "core with pendants"
  (a dense core, every other node a leaf on a core node: les misérables' shape).
- ``junimodal``: ten unimodal heavy-tailed graphs, networkx seeds 1721-1730, n 80-3,000
  (Barabási–Albert, powerlaw cluster): B's target, where a regression would show.
- ``realsmall``: helper I's real small graphs (karate, les misérables, davis,
  florentine, the Intel Lab motes within 6 m) — CALIBRATION for this rule (I's held-out
  result motivated it).
"""

from __future__ import annotations

import pickle
import sys
from collections import defaultdict

import networkx as nx
import numpy as np

sys.path.insert(0, "scripts")
import B_hist_eval as b_eval
import I_real_holdout as i_real
from ldpfleet.collector import degree_postprocess as dpp


def _sbm(sizes: list[int], probs: list[list[float]], seed: int) -> nx.Graph:
    return nx.stochastic_block_model(sizes, probs, seed=seed)


def _two_blocks(sparse: int, p_sparse: float, dense: int, p_dense: float, p_out: float, seed):
    """A sparse and a dense block (stochastic block model)."""
    return _sbm([sparse, dense], [[p_sparse, p_out], [p_out, p_dense]], seed)


def _two_mode_config(n: int, low_share: float, low_mean: float, high_mean: float, seed: int):
    """Configuration model on a two-mode sequence: ``low_share`` of the nodes with degree
    1 + Poisson(low_mean − 1), the rest 1 + Poisson(high_mean − 1); self-loops and
    multi-edges removed."""
    rng = np.random.default_rng(seed)
    low = int(round(low_share * n))
    seq = np.concatenate(
        [1 + rng.poisson(low_mean - 1, low), 1 + rng.poisson(high_mean - 1, n - low)]
    )
    seq = np.minimum(seq, n - 1)
    if seq.sum() % 2:
        seq[0] += 1
    g = nx.Graph(nx.configuration_model([int(x) for x in seq], seed=seed))
    g.remove_edges_from(list(nx.selfloop_edges(g)))
    return g


def _union(n1: int, p1: float, n2: int, p2: float, bridges: int, seed: int) -> nx.Graph:
    """A sparse and a dense Erdős–Rényi community joined by ``bridges`` random edges."""
    rng = np.random.default_rng(seed)
    g = nx.disjoint_union(
        nx.gnp_random_graph(n1, p1, seed=seed), nx.gnp_random_graph(n2, p2, seed=seed + 1)
    )
    for _ in range(bridges):
        g.add_edge(int(rng.integers(n1)), int(n1 + rng.integers(n2)))
    return g


def _core_pendant(core: int, p_core: float, leaves: int, seed: int) -> nx.Graph:
    """A dense Erdős–Rényi core and ``leaves`` degree-1 nodes, each on a random core node."""
    rng = np.random.default_rng(seed)
    g = nx.gnp_random_graph(core, p_core, seed=seed)
    for leaf in range(core, core + leaves):
        g.add_edge(leaf, int(rng.integers(core)))
    return g


# helper J's fresh BIMODAL set: fixed 2026-12-05 before any run; networkx seeds 1701-1720
JBIMODAL = {
    "sbm2-60": lambda: _two_blocks(40, 0.05, 20, 0.5, 0.01, 1701),
    "sbm2-120": lambda: _two_blocks(80, 0.03, 40, 0.35, 0.005, 1702),
    "cfg2-300-2-14": lambda: _two_mode_config(300, 0.67, 2, 14, 1703),
    "corep-90": lambda: _core_pendant(30, 0.35, 60, 1704),
    "sbm2-500": lambda: _two_blocks(350, 0.006, 150, 0.1, 0.001, 1705),
    "cfg2-800-3-18": lambda: _two_mode_config(800, 0.6, 3, 18, 1706),
    "union-1000": lambda: _union(700, 0.003, 300, 0.05, 50, 1707),
    "sbm2-1500": lambda: _two_blocks(1000, 0.002, 500, 0.04, 0.0004, 1708),
    "cfg2-2000-3-25": lambda: _two_mode_config(2000, 0.7, 3, 25, 1709),
    "sbm2-3000": lambda: _two_blocks(2000, 0.0015, 1000, 0.03, 0.0002, 1710),
    "corep-400": lambda: _core_pendant(80, 0.15, 320, 1711),
    "cfg2-150-2-10": lambda: _two_mode_config(150, 0.6, 2, 10, 1712),
    "sbm2-240": lambda: _two_blocks(160, 0.015, 80, 0.2, 0.004, 1713),
    "cfg2-1200-1-20": lambda: _two_mode_config(1200, 0.5, 1, 20, 1714),
    "sbm2-45": lambda: _two_blocks(30, 0.07, 15, 0.6, 0.01, 1715),
    "union-2500": lambda: _union(1800, 0.0015, 700, 0.025, 100, 1716),
    "corep-1800": lambda: _core_pendant(300, 0.05, 1500, 1717),
    "cfg2-600-4-30": lambda: _two_mode_config(600, 0.5, 4, 30, 1718),
    "sbm2-200": lambda: _two_blocks(100, 0.02, 100, 0.15, 0.003, 1719),
    "cfg2-3000-2-40": lambda: _two_mode_config(3000, 0.8, 2, 40, 1720),
}

# helper J's fresh UNIMODAL heavy-tailed set: fixed 2026-12-05; networkx seeds 1721-1730
JUNIMODAL = {
    "ba-300-m2": lambda: nx.barabasi_albert_graph(300, 2, seed=1721),
    "ba-1000-m3": lambda: nx.barabasi_albert_graph(1000, 3, seed=1722),
    "ba-2500-m2": lambda: nx.barabasi_albert_graph(2500, 2, seed=1723),
    "ba-80-m2": lambda: nx.barabasi_albert_graph(80, 2, seed=1724),
    "ba-1800-m4": lambda: nx.barabasi_albert_graph(1800, 4, seed=1725),
    "plc-500-m2": lambda: nx.powerlaw_cluster_graph(500, 2, 0.4, seed=1726),
    "plc-2000-m3": lambda: nx.powerlaw_cluster_graph(2000, 3, 0.3, seed=1727),
    "plc-120-m3": lambda: nx.powerlaw_cluster_graph(120, 3, 0.3, seed=1728),
    "plc-3000-m2": lambda: nx.powerlaw_cluster_graph(3000, 2, 0.5, seed=1729),
    "plc-1200-m4": lambda: nx.powerlaw_cluster_graph(1200, 4, 0.2, seed=1730),
}

FRESH_RUN_SEEDS = (101, 102, 103)
BIMODAL = frozenset(JBIMODAL)
UNIMODAL = frozenset(JUNIMODAL)

_B_GRAPHS = b_eval._graphs  # B's sets and ``large``, kept before ``main`` patches it


def _graphs(which: str):
    sets = {"jbimodal": JBIMODAL, "junimodal": JUNIMODAL}
    if which in sets:
        for name, make in sets[which].items():
            yield name, b_eval.capture._graph_of(make())
    elif which == "realsmall":
        for name, make in i_real.GRAPHS.items():
            yield name, i_real.graph_of(make())
    else:
        yield from _B_GRAPHS(which)


def main() -> None:
    mode = sys.argv[1]
    if mode == "capture":
        b_eval._graphs = _graphs  # the capture loop reads the module's _graphs
        b_eval.capture_runs(sys.argv[2], [int(s) for s in sys.argv[3].split(",")], sys.argv[4])
    elif mode == "compare":
        rows = []
        for path in sys.argv[2:]:
            with open(path, "rb") as fh:
                rows += pickle.load(fh)
        compare(rows)
    else:
        raise SystemExit(f"mode: {mode!r} is not capture or compare")


def compare(rows: list[dict]) -> None:  # filled in with the rule (pre-registration)
    raise SystemExit("compare: not written yet")


if __name__ == "__main__":
    main()
