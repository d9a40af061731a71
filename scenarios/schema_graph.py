"""Load-time checks of a CADR-LDP scenario's ``[graph] source`` and ``[cadr]`` budget,
and of ``[broker] url``: each returns the sentence ``scenarios.schema`` refuses the file
with, or None.

They run before the run's output folder exists and before any graph is generated: a
generator spec is checked from its text (``erdos_renyi:n=100000000,p=0.1`` was generated
until the kernel killed the run at 23 GB), a path must exist, and the dp pipeline's θ
search floor (``protocol.cadr_budget``) is checked with the function the run uses.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from pathlib import Path


def generator_problem(source: str) -> str | None:
    """Why the generator spec ``source`` (``kind:n=...``) cannot be generated, or None:
    every refusal the text decides (``devices.graphs.parse_generator_spec``: a malformed
    or unknown parameter, a value out of its range, a graph too large to generate or
    without edges whatever the seed), naming the parameter, the limit and the value; and
    a small erdos_renyi graph that may draw no edge is built, as the run would."""
    from ldpfleet.devices.graphs import load_graph, parse_generator_spec
    from ldpfleet.protocol.errors import ParameterError

    try:
        spec = parse_generator_spec(source)
        if _may_draw_no_edge(spec):  # cheap to build: build it, as the run will
            load_graph(source)
    except ParameterError as error:
        return f"{generator_refusal(error)} (in {source!r})"
    return None


# an erdos_renyi graph is built on load when it may draw no edge at all (the run refuses
# it, after its collector process started): expected edges below this (P(no edge) =
# e^-30 ~ 1e-13 at it) and pairs to draw below SMALL_GRAPH_PAIRS (2e6 coins, ~1 s)
FEW_EDGES = 30
SMALL_GRAPH_PAIRS = 2_000_000


def _may_draw_no_edge(spec) -> bool:
    """An erdos_renyi spec small enough to build and likely enough to have no edge."""
    from ldpfleet.devices.graphs import expected_edges

    if spec.kind != "erdos_renyi":
        return False  # the others always have an edge once their parameters are valid
    pairs = spec.n * (spec.n - 1) / 2
    return expected_edges(spec.kind, spec.n, spec.params) < FEW_EDGES and pairs <= SMALL_GRAPH_PAIRS


def generator_refusal(error) -> str:
    """A generator's ``ParameterError`` as a sentence naming its parameter (``p must lie
    in [0, 1], got 2``): the reason alone when it names the graph or starts with the
    parameter already."""
    reason = error.reason
    if error.field in (None, "graph") or reason.startswith(f"{error.field} "):
        return reason
    return f"{error.field} {reason}"


def graph_source_rule() -> str:
    """What ``[graph] source`` must be, as a ``ScenarioError.limit``: a built-in graph's
    name, a generator spec within its limits, or an edge-list file."""
    import json

    from ldpfleet.devices.graphs import GENERATORS, NAMED_GRAPHS

    return (
        f"one of {', '.join(json.dumps(g) for g in NAMED_GRAPHS)}, a generator spec "
        f"kind:n=N,... ({', '.join(GENERATORS)}) within its limits, or an edge-list file"
    )


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
    from ldpfleet.scenarios.schema_loaded import variable_hint

    return (
        f"cannot read the edge list {source!r}{variable_hint(source)} (no such file: looked "
        "beside the scenario file, one folder up, in the current folder and in the shipped "
        f"data/); a graph is {', '.join(NAMED_GRAPHS)}, a generator "
        f"({', '.join(GENERATORS)}: kind:n=N,...) or the path of an edge list{hint}"
    )


def graph_nodes(source: str, resolved: Path) -> int:
    """The node count of a graph that exists (checked before): read from a generator spec
    (``devices.graphs.parse_generator_spec``), else the graph loaded (``resolved`` is the
    path of an edge list)."""
    from ldpfleet.devices.graphs import is_generator_spec, load_graph, parse_generator_spec

    if is_generator_spec(source):
        return parse_generator_spec(source).n
    return load_graph(str(resolved) if resolved.exists() else source).n


# more devices than any run can have: the θ search's ε_θ only falls as n grows
# (``protocol.cadr_budget.theta_extra``), so a budget accepted here is accepted at every n
_ANY_FLEET = 2**62


def cadr_budget_problem(cadr, nodes: Callable[[], int]) -> str | None:
    """The run's budget check (``CadrBudget.for_pipeline``: the dp θ search's floor,
    ``theta_search_min_eps``) as ``cadr.eps: ...``, or None. ``nodes()`` gives the graph's
    node count; it is called only when the answer depends on it (a fleet of more than
    240,000 devices at a small alpha x eps, or a dp ``"auto-dev"`` run below the floor,
    which a fleet small enough for the small-fleet rule runs with no θ search:
    ``protocol.cadr_budget.plan_theta``), since a named graph or a file is then loaded."""
    from ldpfleet.protocol.cadr_budget import CadrBudget
    from ldpfleet.protocol.errors import ParameterError

    searched = isinstance(cadr.theta, str)  # a rule ("auto-dev", "auto-sum"), not a given θ

    def problem(devices: int) -> str | None:
        try:
            CadrBudget.for_pipeline(cadr.eps, cadr.alpha, cadr.pipeline, searched, devices)
        except ParameterError as error:
            return f"cadr.{error.field}: {error.reason}"
        return None

    smallest_fleet = problem(1)
    if smallest_fleet is None and problem(_ANY_FLEET) is None:
        return None
    if smallest_fleet is not None and not _small_fleet_rule_may_apply(cadr):
        return smallest_fleet
    try:
        devices = nodes()
        refused = problem(devices)
        if refused is not None and not _searches_theta(cadr, devices):
            return None  # the small-fleet rule: no θ search, no floor
        return refused
    except ParameterError:
        return None  # an unreadable graph: the run's loader says why, naming graph.source


def _small_fleet_rule_may_apply(cadr) -> bool:
    """Whether the run's θ plan (``plan_theta``) can drop the θ search: dp, "auto-dev",
    and a degree bound known from n alone (n - 1 or configured). With "graph-max" (not
    private) the graph's maximum is not read here: the check stays the search's."""
    return cadr.pipeline == "dp" and cadr.theta == "auto-dev" and cadr.degree_bound != "graph-max"


def _searches_theta(cadr, devices: int) -> bool:
    """``plan_theta``'s answer for this ``[cadr]`` on ``devices`` devices (the run's own)."""
    from ldpfleet.protocol.cadr_budget import plan_theta, resolve_degree_bound

    if not _small_fleet_rule_may_apply(cadr):
        return isinstance(cadr.theta, str)
    bound, _ = resolve_degree_bound(cadr.degree_bound, cadr.pipeline, devices, 1)
    return plan_theta(cadr.theta, cadr.pipeline, cadr.eps, cadr.alpha, devices, bound).searched


def cadr_theta_problem(cadr, nodes: Callable[[], int]) -> str | None:
    """``[cadr] theta`` as the run checks it (``scenarios.cadr_run.CadrSettings``,
    ``protocol.cadr_budget.check_theta_within_bound``), as ``cadr.theta: ...``, or None: a
    given θ must not exceed the public degree bound D (every device refuses it; the run
    refused it after connecting the fleet). D is known before the run unless it is the
    graph's maximum degree ("graph-max"); ``nodes()`` gives n for D = n - 1. "auto-sum"
    (the paper's exact secure sums) under pipeline "dp" is refused as ``CadrSettings``
    refuses it for a library caller."""
    from ldpfleet.protocol.cadr_budget import check_theta_within_bound, resolve_degree_bound
    from ldpfleet.protocol.errors import ParameterError

    if cadr.theta == "auto-sum" and cadr.pipeline == "dp":
        return (
            'cadr.theta: "auto-sum" is the paper pipeline\'s θ rule (exact secure sums, not '
            'differentially private); with pipeline = "dp" use theta = "auto-dev" or a given '
            'integer, or set pipeline = "paper"'
        )
    if isinstance(cadr.theta, str) or cadr.degree_bound == "graph-max":
        return None
    if cadr.degree_bound == "auto" and cadr.pipeline == "paper":
        return None  # "auto" is then the graph's maximum degree: the run checks θ
    try:
        devices = nodes() if isinstance(cadr.degree_bound, str) else 2
        bound = resolve_degree_bound(cadr.degree_bound, cadr.pipeline, devices, 1)
        check_theta_within_bound(cadr.theta, bound)
    except ParameterError as error:
        if error.field != "theta":
            return None  # an unreadable graph: the run's loader says why
        return f"cadr.theta: {error.reason}"
    return None


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
