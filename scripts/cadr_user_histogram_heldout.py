"""The pre-registered evaluation of the ``boot`` histogram reading (issue 20, helper I).

    nice -n 5 python scripts/cadr_user_histogram_heldout.py 6,7,8 > heldout.jsonl
    python scripts/cadr_user_histogram_heldout.py --summarise heldout.jsonl

Per graph of ``GRAPHS`` (fixed in docs/cadr-private.md, "Released histogram: boot reading,
pre-registered (2026-12-05)", before any run), ε in 0.5..5 and seed: one ``private_run``
(dp, LL, θ auto-dev, α = 0.1) and its θ search's bucket sums read by ``old`` (the
projection, today's release) and ``boot``, via ``cadr_user_histogram_readings``'s capture:
one JSON line with ``[L1, EMD]`` per reading. ``--summarise`` prints the rule's figures.
"""

import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cadr_user_histogram_readings as hr
from ldpfleet.collector import bucket_isotonic as bi

EPS = (0.5, 1, 2, 3, 5)


def _nx_graph(label, make):
    def build():
        from ldpfleet.devices.graphs import Graph

        g = make()
        n = g.number_of_nodes()
        e = np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2)
        return Graph.from_edges(n, e[:, 0], e[:, 1], name=label)

    return build


def _sbm():
    import networkx as nx

    sizes, p_in, p_out = [300, 600, 900], 0.015, 0.002
    probs = [[p_in if i == j else p_out for j in range(3)] for i in range(3)]
    return nx.stochastic_block_model(sizes, probs, seed=306)


def _graphs():
    import networkx as nx
    from ldpfleet.devices.graphs import ego_facebook, wiki_vote

    gens = {
        "ba-3500-m5": lambda: nx.barabasi_albert_graph(3500, 5, seed=301),
        "er-2200-mean6": lambda: nx.gnp_random_graph(2200, 6 / 2199, seed=302),
        "plc-2000-m2-p0.6": lambda: nx.powerlaw_cluster_graph(2000, 2, 0.6, seed=303),
        "ws-1500-k8-p0.15": lambda: nx.watts_strogatz_graph(1500, 8, 0.15, seed=304),
        "rr-1500-d5": lambda: nx.random_regular_graph(5, 1500, seed=305),
        "sbm-1800": _sbm,
        "rgg-1500-r0.04": lambda: nx.random_geometric_graph(1500, 0.04, seed=307),
        "er-90-p0.06": lambda: nx.gnp_random_graph(90, 0.06, seed=308),
        "ba-150-m2": lambda: nx.barabasi_albert_graph(150, 2, seed=309),
    }
    out = {k: _nx_graph(k, f) for k, f in gens.items()}
    out["wiki-vote"] = wiki_vote
    out["facebook"] = ego_facebook
    return out


GRAPHS = _graphs()


def readers(s, n):
    """The two pre-registered readings."""
    e, m = s["eps"], s["noise_parties"]
    return {
        "old": lambda y, n: hr.simplex(y, n),
        "boot": lambda y, n: bi.bootstrap_counts(y, n, e, m),
    }


def run(seeds):
    hr.readers = readers
    for label, build in GRAPHS.items():
        g = build()
        for eps in EPS:
            for seed in seeds:
                r = hr.ref.private_run(g, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp")
                row = {"graph": label, "n": g.n, "eps": eps, "seed": seed, "mae": r.mae}
                row["median"] = r.baselines["constant_median_oracle"]["mae"]
                row.update(hr.hist_scores())
                assert abs(row["boot"][1] - r.histogram_emd) < 1e-9  # the release reads boot
                print(json.dumps(row), flush=True)


def _mean(rows, key, i):
    return np.mean([r[key][i] for r in rows])


def summarise(path):
    rows = [json.loads(x) for x in Path(path).read_text().splitlines() if x.strip()]
    print("| graph | n | ε | L1 old / boot | EMD old / boot | constant median |")
    print("|---|---|---|---|---|---|")
    cells = {}
    for r in rows:
        cells.setdefault((r["graph"], r["eps"]), []).append(r)
    for (g, e), rs in cells.items():
        med = np.mean([r["median"] for r in rs])
        print(
            f"| {g} | {rs[0]['n']:,} | {e:g} | "
            f"{_mean(rs, 'old', 0):.3f} / {_mean(rs, 'boot', 0):.3f} | "
            f"{_mean(rs, 'old', 1):.2f} / {_mean(rs, 'boot', 1):.2f} | {med:.3f} |"
        )
    m = {k: [np.mean([r[k][i] for r in rows]) for i in (0, 1)] for k in ("old", "boot")}
    fb = [r for r in rows if r["graph"] == "facebook" and r["eps"] == 3]
    fbo, fbb = (np.mean([r[k][1] for r in fb]) if fb else float("nan") for k in ("old", "boot"))
    above = {
        k: sum(
            np.mean([r[k][1] for r in rs]) > np.mean([r["median"] for r in rs]) + 1e-9
            for rs in cells.values()
        )
        for k in ("old", "boot")
    }
    print(f"\nruns {len(rows)}, cells {len(cells)}")
    for k in ("old", "boot"):
        print(
            f"{k}: mean L1 {m[k][0]:.4f}, mean EMD {m[k][1]:.4f}, "
            f"cells with EMD above the constant median's {above[k]}"
        )
    c1 = m["boot"][1] < m["old"][1]
    c2 = m["boot"][0] <= 1.05 * m["old"][0]
    c3 = fbb <= fbo
    print(f"1. mean EMD lower: {c1} ({m['boot'][1]:.4f} vs {m['old'][1]:.4f})")
    print(f"2. mean L1 within +5 %: {c2} ({m['boot'][0] / m['old'][0] - 1:+.2%})")
    print(f"3. facebook ε=3 EMD not higher: {c3} ({fbb:.3f} vs {fbo:.3f})")
    print(f"rule holds: {c1 and c2 and c3}")


def main():
    if sys.argv[1] == "--summarise":
        summarise(sys.argv[2])
    else:
        run([int(x) for x in sys.argv[1].split(",")])


if __name__ == "__main__":
    main()
