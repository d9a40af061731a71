"""Small graphs (n < 100): the dp release against other readings of the SAME releases.

    python scripts/cadr_user_small_alternatives.py cal 0,1,2    # calibration graphs, seeds
    python scripts/cadr_user_small_alternatives.py eval 3,4,5   # fresh graphs, fresh seeds

Per graph, ε in 0.5..5 and seed: one ``private_run`` (dp, LL, θ auto-dev, α = 0.1), its
raw DSR releases re-read as ``pp`` (the pipeline's release, checked equal to the run's
MAE), ``paper_pp`` (the deconvolution of the DSR values alone and its posterior medians),
``clip_raw`` (the raw values rounded and clipped to [0, θ]), ``const_deconv_median`` (that
deconvolution's median for every node) and ``const_prior_median`` (the θ-search prior's
median for every node); one JSON line each, with the two baselines. 2026-12-05 (issue 20,
helper B): docs/cadr-private.md, "Held-out graphs (2026-12-05)".
"""

import json
import sys

import ldpfleet.collector.cadr_reference as ref
import networkx as nx
import numpy as np
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.devices.graphs import Graph

captured = {}
orig_release_scores = ref._release_scores


def spy(degrees, released, theta, eps_dsr, search, bound):
    captured.update(
        degrees=degrees, released=released, theta=theta, eps_dsr=eps_dsr, search=search, bound=bound
    )
    return orig_release_scores(degrees, released, theta, eps_dsr, search, bound)


ref._release_scores = spy


def graph_of(g):
    g = nx.convert_node_labels_to_integers(g)
    u, v = zip(*g.edges(), strict=False)
    return Graph.from_edges(g.number_of_nodes(), np.array(u), np.array(v))


def alternatives(c):
    d, y, t, e, s, D = (
        c[k] for k in ("degrees", "released", "theta", "eps_dsr", "search", "bound")
    )
    n = len(d)

    def mae(est):
        return float(np.mean(np.abs(d - est)))

    out = {}
    prior = dpp.degree_prior(s["bucket_sums"], s["thresholds"], D, n)
    out["pp"] = mae(dpp.post_process(y, t, e, prior).estimates)
    out["paper_pp"] = mae(dpp.post_process(y, t, e, None).estimates)
    out["clip_raw"] = mae(np.clip(np.round(y), 0, t))
    # the kept-degree deconvolution's median, to every node
    k = dpp.post_process(y, t, e, None).distribution
    out["const_deconv_median"] = mae(int(np.searchsorted(np.cumsum(k), 0.5)))
    out["const_prior_median"] = mae(int(np.searchsorted(np.cumsum(prior), 0.5)))
    return out


GRAPHS = {
    "cal": {
        "n2": lambda: nx.path_graph(2),
        "path-3": lambda: nx.path_graph(3),
        "florentine": nx.florentine_families_graph,
        "karate": nx.karate_club_graph,
        "davis": nx.davis_southern_women_graph,
    },
    "eval": {
        "lesmis": nx.les_miserables_graph,
        "kite": nx.krackhardt_kite_graph,
        "petersen": nx.petersen_graph,
        "ba-60": lambda: nx.barabasi_albert_graph(60, 2, seed=301),
        "er-80": lambda: nx.gnp_random_graph(80, 0.08, seed=302),
        "star-40": lambda: nx.star_graph(39),
        "ws-100": lambda: nx.watts_strogatz_graph(100, 6, 0.2, seed=303),
        "plc-150": lambda: nx.powerlaw_cluster_graph(150, 3, 0.3, seed=304),
    },
}
which, seeds = sys.argv[1], [int(x) for x in sys.argv[2].split(",")]
for name, make in GRAPHS[which].items():
    g = graph_of(make())
    for eps in (0.5, 1, 2, 3, 5):
        for seed in seeds:
            run = ref.private_run(g, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp")
            row = {
                "graph": name,
                "n": g.n,
                "eps": eps,
                "seed": seed,
                "theta": run.theta,
                "median": run.baselines["constant_median_oracle"]["mae"],
                "zero": run.baselines["all_zero"]["mae"],
                "eps_theta": run.theta_search.get("eps"),
                "buckets": len(captured["search"]["thresholds"]),
            }
            row.update(alternatives(captured))
            assert abs(row["pp"] - run.mae) < 1e-9, (row, run.mae)
            print(json.dumps(row), flush=True)
