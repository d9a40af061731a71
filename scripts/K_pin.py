"""Pin of the in-process CADR reference's outputs, for a pure refactor's bit-identity check.

    python scripts/K_pin.py OUT.json            # write the pin
    python scripts/K_pin.py OUT.json --quick    # 2 graphs, 1 seed (a fast look)
    cmp before.json after.json                   # identical bytes: the refactor changed nothing

Runs ``collector.cadr_reference.private_run`` for every method (ll, lh, ra, er, clip) and
pipeline (dp, paper) on seven graphs (Barabási-Albert n 60 and 400, Erdős-Rényi n 300,
powerlaw-cluster n 1,000, Zachary's karate club, a star on 40 nodes; and
Barabási-Albert n 15, a fleet too small for the dp θ search), ε 0.5 / 1 / 3,
seeds 1-2, θ by ``auto-dev``, α 0.1. Per run it writes every figure of the ``CadrRun``
(``seconds`` dropped: machine speed) and every call of ``degree_postprocess.search_priors``
and ``degree_postprocess.post_process`` made during it: the inputs (released values, θ,
ε_dsr, the θ search's counts, the priors, ``known_ratio``, ``exact_releases``) and the
outputs (priors, estimates, distribution, histogram, kept ratio); the arguments bound to
the signature with its defaults applied, so ``f(x)`` and ``f(x, k=None)`` (k's default
None) record alike. The calls are recorded
by wrapping both names in ``degree_postprocess`` and, where it still imports them, in
``cadr_reference``: before and after the refactor the same calls pass through exactly one
wrapper. JSON with sorted keys; floats by ``repr`` (exact), so equal pins are equal bytes.
Helper K, 2026-12-06 (the single CADR release function).
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import sys

import networkx as nx
import numpy as np
from ldpfleet.collector import cadr_reference as ref
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.devices.graphs import Graph, generate

METHODS = ("ll", "lh", "ra", "er", "clip")
PIPELINES = ("dp", "paper")
EPS = (0.5, 1.0, 3.0)
SEEDS = (1, 2)


def _from_networkx(g: nx.Graph, name: str) -> Graph:
    """A networkx graph on ``0..n-1`` as the project's ``Graph``."""
    edges = np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2)
    return Graph.from_edges(g.number_of_nodes(), edges[:, 0], edges[:, 1], name=name)


def graphs(quick: bool) -> dict[str, Graph]:
    """The pinned graphs by name (``quick``: the two smallest)."""
    made = {
        "ba60": generate("barabasi_albert", 60, seed=11, m=3),
        "star40": _from_networkx(nx.star_graph(39), "star40"),
    }
    if quick:
        return made
    made["ba15"] = generate("barabasi_albert", 15, seed=15, m=2)  # small fleet: no θ search
    made["karate"] = _from_networkx(nx.karate_club_graph(), "karate")
    made["ba400"] = generate("barabasi_albert", 400, seed=12, m=3)
    made["er300"] = generate("erdos_renyi", 300, seed=13, p=0.03)
    made["plc1000"] = generate("powerlaw_cluster", 1000, seed=14, m=3, p=0.2)
    return made


def _plain(value: object) -> object:
    """``value`` as JSON-ready data (arrays as lists, dataclasses as dicts)."""
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


class Recorder:
    """Wraps ``search_priors`` and ``post_process`` and keeps each call's inputs and output."""

    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.originals = {"search_priors": dpp.search_priors, "post_process": dpp.post_process}

    def wrapper(self, name: str):
        """The recording stand-in for ``name``."""
        original = self.originals[name]

        signature = inspect.signature(original)

        def recording(*args, **kwargs):
            out = original(*args, **kwargs)
            bound = signature.bind(*args, **kwargs)
            bound.apply_defaults()  # the call's arguments, not how they were spelt
            arguments = _plain(bound.arguments)
            self.calls.append({"fn": name, "arguments": arguments, "out": _plain(out)})
            return out

        return recording

    def install(self) -> None:
        """Wrap both names where the pipelines look them up."""
        for module in (dpp, ref):
            for name in self.originals:
                if hasattr(module, name):
                    setattr(module, name, self.wrapper(name))


def pin(quick: bool) -> dict:
    """Every run's figures and recorded calls, keyed ``graph/method/pipeline/eps/seed``."""
    recorder = Recorder()
    recorder.install()
    out: dict = {}
    for gname, graph in graphs(quick).items():
        for method in METHODS:
            for pipeline in PIPELINES:
                for eps in EPS:
                    for seed in SEEDS[:1] if quick else SEEDS:
                        recorder.calls = []
                        run = ref.private_run(
                            graph, method, "auto-dev", eps, 0.1, seed, pipeline=pipeline
                        )
                        figures = _plain(run)
                        figures.pop("seconds")
                        key = f"{gname}/{method}/{pipeline}/{eps}/{seed}"
                        out[key] = {"run": figures, "calls": recorder.calls}
    return out


def main() -> None:
    """Write the pin to ``argv[1]``."""
    path, quick = sys.argv[1], "--quick" in sys.argv[2:]
    data = pin(quick)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, sort_keys=True)
    calls = sum(len(v["calls"]) for v in data.values())
    print(f"{len(data)} runs, {calls} recorded calls -> {path}")


if __name__ == "__main__":
    main()
