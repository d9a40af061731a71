"""Capture the dp pipeline's inputs to post-processing, per run, for re-reading offline.

    python scripts/cadr_small_capture.py SET SEEDS OUT.pkl [--exact-theta]

``SET``: ``cal`` (the 13 small graphs of ``scripts/cadr_user_small_alternatives.py``),
``fresh`` (twenty small graphs, n = 5-90, never run before, networkx seeds 501-507,
fixed 2026-12-05 before any run), ``large`` (ego-Facebook and wiki-Vote) or ``held``
(the 14 graphs with n >= 100 of ``scripts/cadr_user_new_graphs.py``). Per graph, ε in
0.5, 1, 2, 3, 5 and seed:
one ``collector.cadr_reference.private_run`` (dp, LL, θ auto-dev, α = 0.1, D = n − 1) with
``_release_scores`` spied on: the true degrees, the DSR releases, θ, ε_dsr, the θ search's
figures (bucket sums, thresholds, ε_θ, noise parties, θ on exact counts), D, and the run's
MAE. ``--exact-theta``: the same run with θ replaced by the search's exact-count θ (same
budget, same generators; the oracle of docs/cadr-private.md "Small graphs: the limit and
the guard"). Issue 20, helper B, 2026-12-05.
"""

from __future__ import annotations

import contextlib
import pickle
import sys
import time

import ldpfleet.collector.cadr_reference as ref
import networkx as nx
import numpy as np
from ldpfleet.devices.graphs import Graph, load_graph

EPS_LIST = (0.5, 1, 2, 3, 5)
captured: dict = {}


@contextlib.contextmanager
def searching_always():
    """``private_run`` as it was when these scripts measured "today" (before
    ``protocol.cadr_budget``'s small-fleet rule landed, 2026-12-05): ``"auto-dev"`` always
    runs the θ search. Without it a tiny fleet now takes the rule's θ and "today" would be
    the rule itself (helper G's review)."""
    from ldpfleet.protocol.cadr_budget import ThetaPlan

    def search_plan(rule, *args):
        return ThetaPlan(rule, "search" if isinstance(rule, str) else "configured")

    original, ref.plan_theta = ref.plan_theta, search_plan
    try:
        yield
    finally:
        ref.plan_theta = original


_original_scores = ref._release_scores
_original_dp_theta = ref.dp_theta


def _spy(degrees, released, theta, eps_dsr, search, bound):
    captured.update(
        degrees=np.asarray(degrees).copy(),
        released=np.asarray(released).copy(),
        theta=int(theta),
        eps_dsr=float(eps_dsr),
        search=dict(search),
        bound=int(bound),
    )
    return _original_scores(degrees, released, theta, eps_dsr, search, bound)


def _exact_theta(degrees, budget, weight, rng, bound=None):
    _, search = _original_dp_theta(degrees, budget, weight, rng, bound)
    return search["theta_exact"], {**search, "theta": search["theta_exact"]}


def _graph_of(g) -> Graph:
    g = nx.convert_node_labels_to_integers(g)
    u, v = zip(*g.edges(), strict=False)
    return Graph.from_edges(g.number_of_nodes(), np.array(u), np.array(v))


def _sets() -> dict:
    cal = {
        "n2": lambda: nx.path_graph(2),
        "path-3": lambda: nx.path_graph(3),
        "florentine": nx.florentine_families_graph,
        "karate": nx.karate_club_graph,
        "davis": nx.davis_southern_women_graph,
        "lesmis": nx.les_miserables_graph,
        "kite": nx.krackhardt_kite_graph,
        "petersen": nx.petersen_graph,
        "ba-60": lambda: nx.barabasi_albert_graph(60, 2, seed=301),
        "er-80": lambda: nx.gnp_random_graph(80, 0.08, seed=302),
        "star-40": lambda: nx.star_graph(39),
        "ws-100": lambda: nx.watts_strogatz_graph(100, 6, 0.2, seed=303),
        "plc-150": lambda: nx.powerlaw_cluster_graph(150, 3, 0.3, seed=304),
    }
    fresh = {  # fixed before any run (2026-12-05, helper B)
        "tutte": nx.tutte_graph,
        "heawood": nx.heawood_graph,
        "ba-45-m3": lambda: nx.barabasi_albert_graph(45, 3, seed=501),
        "er-60-p0.1": lambda: nx.gnp_random_graph(60, 0.1, seed=502),
        "ws-50-k4": lambda: nx.watts_strogatz_graph(50, 4, 0.3, seed=503),
        "plc-90-m2": lambda: nx.powerlaw_cluster_graph(90, 2, 0.4, seed=504),
        "gnm-70-150": lambda: nx.gnm_random_graph(70, 150, seed=505),
        "tree-63": lambda: nx.balanced_tree(2, 5),
        "caveman-6x8": lambda: nx.connected_caveman_graph(6, 8),
        "lollipop-10-20": lambda: nx.lollipop_graph(10, 20),
        "bull": nx.bull_graph,
        "octahedral": nx.octahedral_graph,
        "frucht": nx.frucht_graph,
        "chvatal": nx.chvatal_graph,
        "desargues": nx.desargues_graph,
        "wheel-16": lambda: nx.wheel_graph(16),
        "barbell-5-2": lambda: nx.barbell_graph(5, 2),
        "gnp-20-0.2": lambda: nx.gnp_random_graph(20, 0.2, seed=507),
        "star-12": lambda: nx.star_graph(11),
        "cycle-8": lambda: nx.cycle_graph(8),
    }
    return {"cal": cal, "fresh": fresh}


def _graphs(which: str):
    if which in ("cal", "fresh"):
        for name, make in _sets()[which].items():
            yield name, _graph_of(make())
    elif which == "large":
        for name in ("facebook", "wiki-vote"):
            yield name, load_graph(name)
    elif which == "held":
        sys.path.insert(0, "scripts")
        import cadr_user_new_graphs as user

        with __import__("tempfile").TemporaryDirectory() as tmp:
            for label in user.GRAPHS:
                path = user.write_graph(label, __import__("pathlib").Path(tmp))
                graph = user.load(path)
                if graph.n >= 100:
                    yield label, graph
    else:
        raise SystemExit(f"set: {which!r} is not cal, fresh, large or held")


def main() -> None:
    which, seeds, out = sys.argv[1], [int(s) for s in sys.argv[2].split(",")], sys.argv[3]
    if "--exact-theta" in sys.argv:
        ref.dp_theta = _exact_theta
    ref._release_scores = _spy
    rows = []
    for name, graph in _graphs(which):
        for eps in EPS_LIST:
            for seed in seeds:
                started = time.process_time()
                with searching_always():  # the search's figures are what is captured
                    run = ref.private_run(graph, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp")
                cpu = time.process_time() - started
                row = {"graph": name, "n": graph.n, "eps": eps, "seed": seed, "mae": run.mae}
                rows.append({**row, "cpu": cpu, **captured})
                print(name, graph.n, eps, seed, run.theta, round(run.mae, 4), flush=True)
    with open(out, "wb") as fh:
        pickle.dump(rows, fh)


if __name__ == "__main__":
    main()
