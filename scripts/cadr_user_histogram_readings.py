"""The released degree histogram from other readings of the θ search's counts.

    python scripts/cadr_user_histogram_readings.py new 0,1,2    # cadr_user_new_graphs, calibration
    python scripts/cadr_user_histogram_readings.py held 3,4,5   # cadr_user_graphs + ego-Facebook

Per graph, ε in 0.5..5 and seed: one ``private_run`` (dp, LL, θ auto-dev, α = 0.1) and its
θ search's noisy bucket sums read by ``old`` (the projection: today's histogram, checked
equal to the run's EMD), ``iso``, ``boot``, ``tail``, ``tailiso``
(``collector.bucket_isotonic``) and ``denoise`` (``collector.bucket_denoise``), each
spread over the degrees by ``degree_prior`` and rounded by ``consistent_histogram``: one
JSON line with ``[L1, EMD]`` per reading. The per-node release is not touched. 2026-12-05
(issue 20, helper B): docs/cadr-private.md, "Held-out graphs (2026-12-05)".
"""

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import ldpfleet.collector.cadr_reference as ref
from ldpfleet.collector import bucket_denoise as bd
from ldpfleet.collector import bucket_isotonic as bi
from ldpfleet.collector import degree_postprocess as dpp

cap = {}
orig = ref._release_scores


def spy(degrees, released, theta, eps_dsr, search, bound):
    cap.update(degrees=degrees, search=search, bound=bound)
    return orig(degrees, released, theta, eps_dsr, search, bound)


ref._release_scores = spy
simplex = bd.simplex_projection


def readers(s, n):
    e, m = s["eps"], s["noise_parties"]
    return {
        "old": lambda y, n: simplex(y, n),
        "iso": lambda y, n: bi.isotonic_counts(y, n),
        "boot": lambda y, n: bi.bootstrap_counts(y, n, e, m),
        "tail": lambda y, n: bi.tail_counts(y, n, e, m),
        "tailiso": lambda y, n: bi.tail_counts(y, n, e, m, isotonic=True),
        "denoise": lambda y, n: bd.denoise_counts(y, n, e, m),
    }


def hist_scores():
    d, s, D = cap["degrees"], cap["search"], cap["bound"]
    n = len(d)
    out = {}
    for name, reader in readers(s, n).items():
        dpp.simplex_projection = reader
        try:
            p = dpp.degree_prior(s["bucket_sums"], s["thresholds"], D, n)
        finally:
            dpp.simplex_projection = simplex
        h = dpp.consistent_histogram(p, n)
        out[name] = (dpp.histogram_l1(d, h), dpp.histogram_emd(d, h))
    return out


def main():
    source, seeds = sys.argv[1], [int(x) for x in sys.argv[2].split(",")]
    graphs = {}
    if source == "new":
        import cadr_user_new_graphs as m

        with tempfile.TemporaryDirectory() as f:
            for label in m.GRAPHS:
                graphs[label] = m.load(m.write_graph(label, Path(f)))
    else:
        import cadr_user_graphs as m

        with tempfile.TemporaryDirectory() as f:
            for label in m.USER_GRAPHS:
                graphs[label] = m.user_graph(label, Path(f))[0]
        from ldpfleet.devices.graphs import ego_facebook

        graphs["facebook"] = ego_facebook()
    for label, g in graphs.items():
        for eps in (0.5, 1, 2, 3, 5):
            for seed in seeds:
                run = ref.private_run(g, "ll", "auto-dev", eps, 0.1, seed, pipeline="dp")
                row = {
                    "graph": label,
                    "n": g.n,
                    "eps": eps,
                    "seed": seed,
                    "mae": run.mae,
                    "median": run.baselines["constant_median_oracle"]["mae"],
                }
                row.update({k: v for k, v in hist_scores().items()})
                assert abs(row["boot"][1] - run.histogram_emd) < 1e-9  # released since 2026-12-05
                print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
