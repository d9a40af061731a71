"""How tight ``protocol.secagg.graph.session_abort_bound`` is: sampled dropped sets.

For each (devices, degree, dropping) the SecAgg+ (Harary) graph is built once on a seeded
labelling, then ``TRIALS`` dropped sets are drawn uniformly and the server's rules before
unmasking are applied to each, devices leaving after their shares: a survivor with fewer
than t live share holders (its live neighbours and itself), a dropped device with fewer
than t live neighbours (its mask key), or a survivors' graph in several parts aborts. The
share that aborts is printed beside the bound (docs/secagg.md, "How likely an abort is").

usage: A_secagg_abort_mc.py [TRIALS]   (default 4000; seed 0)
"""

from __future__ import annotations

import sys

import numpy as np
from ldpfleet.protocol.secagg import graph as g

CASES = [(50, 7, 10), (100, 5, 20), (100, 13, 10), (200, 11, 20), (100, 3, 10)]


def sampled_abort_share(n: int, k: int, dropping: int, trials: int, seed: int = 0) -> float:
    """The share of ``trials`` random dropped sets the server's rules abort on."""
    rng = np.random.default_rng(seed)
    ids = list(range(1, n + 1))
    graph = g.harary_graph(ids, k, lambda m: rng.bytes(m))
    neighbours = {u: frozenset(vs) for u, vs in graph.items()}
    t = g.default_threshold(k + 1)
    aborts = 0
    for _ in range(trials):
        dropped = frozenset(rng.choice(ids, dropping, replace=False).tolist())
        alive = frozenset(ids) - dropped
        bad = any(len(neighbours[u] & alive) + 1 < t for u in alive)
        bad = bad or any(len(neighbours[v] & alive) < t for v in dropped)
        bad = bad or len(g.components(neighbours, alive)) > 1
        aborts += bad
    return aborts / trials


def main(argv: list[str]) -> None:
    """Print one line per case: n, k, dropping, the bound, the sampled share."""
    trials = int(argv[0]) if argv else 4000
    for n, k, dropping in CASES:
        t = g.default_threshold(k + 1)
        bound = g.session_abort_bound(n, k, t, dropping)
        share = sampled_abort_share(n, k, dropping, trials)
        print(f"n={n} k={k} t={t} dropping={dropping}: bound {bound:.4g}, sampled {share:.4g}")


if __name__ == "__main__":
    main(sys.argv[1:])
