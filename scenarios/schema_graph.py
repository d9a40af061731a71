"""Load-time checks of a CADR-LDP scenario's ``[graph] source`` and of ``[broker] url``:
each returns the sentence ``scenarios.schema`` refuses the file with, or None.

They run before the run's output folder exists and before any graph is generated: a
generator spec is checked from its text (``erdos_renyi:n=100000000,p=0.1`` was generated
until the kernel killed the run at 23 GB), and a path must exist.
"""

from __future__ import annotations

import difflib
from pathlib import Path

# one device per node: the same limit as [fleet] devices
GRAPH_MAX_NODES = 1_000_000
# expected edges of a generated graph: 50 x wiki-vote's 100,762; networkx holds about
# 0.5 kB per edge while generating (barabasi_albert:n=100000,m=3: 300k edges, 173 MB
# peak), so the limit is about 2.5 GB
GRAPH_MAX_EDGES = 5_000_000
# networkx's gnp_random_graph draws one coin per node pair: n (n - 1) / 2 = 2e8 pairs at
# n = 20,000, about 80 s at the 2.4 M pairs/s measured (n = 5,000: 5.3 s)
ERDOS_RENYI_MAX_NODES = 20_000


def _expected_edges(kind: str, n: int, params: dict[str, float]) -> float:
    """The generator's edge count (expected for erdos_renyi; at most for the others)."""
    if kind == "erdos_renyi":
        return params["p"] * n * (n - 1) / 2
    if kind == "watts_strogatz":
        return n * params["k"] / 2
    return params["m"] * n  # barabasi_albert, powerlaw_cluster: m edges per new node


def generator_problem(source: str) -> str | None:
    """Why the generator spec ``source`` (``kind:n=...``) is too large to generate, or
    None (its other mistakes are the loader's, ``devices.graphs.load_graph``)."""
    from ldpfleet.devices.graphs import GENERATORS

    kind, _, rest = source.partition(":")
    try:
        fields = dict(part.split("=", 1) for part in rest.split(",") if part)
        n = int(fields["n"])
        params = {key: float(fields[key]) for key in GENERATORS[kind]}
    except (KeyError, ValueError):
        return None  # malformed: the loader names the missing or bad parameter
    limit = ERDOS_RENYI_MAX_NODES if kind == "erdos_renyi" else GRAPH_MAX_NODES
    if n > limit:
        why = (
            "erdos_renyi draws a coin per node pair; use barabasi_albert or an edge list "
            "for larger graphs"
            if kind == "erdos_renyi"
            else "one device per node, as [fleet] devices"
        )
        return f"n must be <= {limit:,} ({why}), got n = {n:,} (in {source!r})"
    edges = _expected_edges(kind, n, params)
    if edges > GRAPH_MAX_EDGES:
        return (
            f"the generated graph would have about {edges:,.0f} edges, more than "
            f"{GRAPH_MAX_EDGES:,} (memory while generating); lower n or the degree "
            f"(in {source!r})"
        )
    return None


def missing_source_problem(source: str, resolved: Path) -> str | None:
    """Why ``source`` (neither a built-in graph nor a generator) names no graph: the file
    ``resolved`` does not exist. A near miss of a generator kind or a built-in name (before
    a ``:``, or the whole text) gets a did-you-mean."""
    from ldpfleet.devices.graphs import GENERATORS, NAMED_GRAPHS

    if resolved.exists():
        return None
    kind, sep, _ = source.partition(":")
    names = list(GENERATORS) if sep else list(NAMED_GRAPHS)
    close = difflib.get_close_matches(kind if sep else source, names, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return (
        f"cannot read the edge list {source!r} (no such file: looked beside the scenario "
        f"file, one folder up, in the current folder and in the shipped data/); a graph is "
        f"{', '.join(NAMED_GRAPHS)}, a generator ({', '.join(GENERATORS)}: kind:n=N,...) or "
        f"the path of an edge list{hint}"
    )


def broker_url_problem(url: str) -> str | None:
    """Why ``[broker] url`` cannot be a broker: not "embedded", "memory" or a well-formed
    ``mqtt://`` / ``mqtts://`` URL (its TLS files are checked when the run connects, on the
    host that runs it)."""
    from ldpfleet.broker.mqtt import BrokerUrlError, parse_broker_url

    if url in ("embedded", "memory"):
        return None
    try:
        parse_broker_url(url.split("?", 1)[0])
    except BrokerUrlError as error:
        return f"{error}; got {url!r}" if repr(url) not in str(error) else str(error)
    return None
