"""The checks a CADR-LDP scenario (``[graph]`` and ``[cadr]``) passes on load: no stream
sections, a graph source that exists and that its generator can build, a budget that
passes the run's own check at the graph's node count (``scenarios.schema_graph``), and a
``dropout`` the run can take (``scenarios.cadr_dropout.check_dropout``).
"""

from __future__ import annotations

import functools
from pathlib import Path

from ldpfleet.protocol.cadr_budget import (
    plan_theta,
    resolve_degree_bound,
    resolve_method,
    theta_search_min_eps,
)
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.cadr_dropout import check_dropout
from ldpfleet.scenarios.schema_collect import differs_from, unless_refused
from ldpfleet.scenarios.schema_errors import ScenarioError, _schema_rule
from ldpfleet.scenarios.schema_graph import (
    cadr_budget_problem,
    cadr_theta_problem,
    generator_problem,
    graph_nodes,
    graph_source_rule,
    missing_source_problem,
)
from ldpfleet.scenarios.schema_loaded import LoadedScenario, resolve_data_path
from ldpfleet.scenarios.schema_sections import CadrSection, CprSection

# the sections of a stream scenario a CADR-LDP scenario must not have ([cpr] too, when set)
STREAM_ONLY = ("fleet", "stream", "source", "secure_sum", "faults", "gcdp")


def _check_cadr_sections(loaded: LoadedScenario, where: str) -> None:
    """[graph] and [cadr], none of the stream sections. A section refused whole (its
    required key refused or missing) is neither missing nor extra here: its own refusal
    says it, and the other sections are still checked (``schema_collect.unless_refused``)."""
    spec = loaded.spec
    graph = unless_refused(lambda: spec.graph, otherwise=False)
    cadr = unless_refused(lambda: spec.cadr, otherwise=False)
    if graph is None or cadr is None:
        raise ScenarioError(
            f"{where}a CADR-LDP scenario needs both [graph] and [cadr]",
            field="graph" if graph is None else "cadr",
            limit="required: [graph] and [cadr]",
        )
    extra = [name for name in STREAM_ONLY if unless_refused(lambda n=name: getattr(spec, n))]
    # [cpr] has defaults: set keys are what a user wrote (``differs_from``: not refused ones)
    if unless_refused(lambda: differs_from(spec.cpr, CprSection()), otherwise=False):
        extra.append("cpr")
    if extra:
        raise ScenarioError(
            f"{where}{extra[0]}: a CADR-LDP scenario's fleet is its graph and it runs no "
            f"stream stage; remove [{extra[0]}] (it would be ignored)",
            limit="absent in a CADR-LDP scenario",
        )


def _check_graph_source(loaded: LoadedScenario, where: str) -> None:
    """``[graph] source`` names a graph that exists and that its generator can build, and
    ``[cadr]``'s budget passes the run's own check at the graph's node count (the dp θ
    search's floor; ``scenarios.schema_graph``): refused on load, before the run's folder
    is made."""
    from ldpfleet.devices.graphs import NAMED_GRAPHS, is_generator_spec

    source = loaded.spec.graph.source
    resolved = Path(source)
    if is_generator_spec(source):
        problem = generator_problem(source)
    elif source not in NAMED_GRAPHS:
        resolved = resolve_data_path(str(Path(source).expanduser()), loaded.path)
        problem = missing_source_problem(source, resolved)
    else:
        problem = None
    if problem is not None:
        raise ScenarioError(f"{where}graph.source: {problem}", limit=graph_source_rule())
    nodes = functools.cache(lambda: graph_nodes(source, resolved))  # loaded at most once
    for check in (cadr_budget_problem, cadr_theta_problem):
        problem = check(loaded.spec.cadr, nodes)
        if problem is not None:
            name = problem.split(":", 1)[0].removeprefix("cadr.")
            limit = _schema_rule(CadrSection, name) or "the run's budget check"
            cadr = loaded.spec.cadr
            if name == "eps" and check is cadr_budget_problem:  # the θ search's floor
                floor = theta_search_min_eps(cadr.alpha)
                limit = f">= theta_search_min_eps(alpha) = {floor} (with a θ search)"
            elif name == "theta":
                limit = (
                    '"auto-dev" or an integer with pipeline = "dp"'
                    if cadr.theta == "auto-sum"
                    else "<= the degree bound D"
                )
            raise ScenarioError(f"{where}{problem}", limit=limit)
    _check_dropout(loaded, nodes, where)


def _check_dropout(loaded: LoadedScenario, nodes, where: str) -> None:
    """``[cadr] dropout``: what ``check_dropout`` refuses, on load (the number of devices
    it may leave is ``noise_parties(n)`` of the graph's n)."""
    cadr = loaded.spec.cadr
    if not cadr.dropout:
        return
    n = nodes()
    searched = isinstance(cadr.theta, str)
    if searched and cadr.degree_bound != "graph-max":  # else D needs the graph: the run checks
        bound, _ = resolve_degree_bound(cadr.degree_bound, cadr.pipeline, n, 1)
        searched = plan_theta(cadr.theta, cadr.pipeline, cadr.eps, cadr.alpha, n, bound).searched
    try:
        check_dropout(
            cadr.dropout,
            cadr.dropout_stage,
            devices=n,
            pipeline=cadr.pipeline,
            method=resolve_method(cadr.method, cadr.pipeline),
            searched=searched,
            partitions=loaded.spec.collector.partitions,
        )
    except ParameterError as error:
        raise ScenarioError(
            f"{where}cadr.{error.field}: {error.reason}",
            field=f"cadr.{error.field}",
            limit=error.limit,
            value=error.value,
        ) from None
