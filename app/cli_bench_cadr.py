"""The ``ldpfleet bench cadr`` command: the CADR-LDP degree release, in-process (the
reference pipeline) or over a device fleet on a transport, averaged over seeds.

The command function is registered on the ``bench`` group in app/cli.py.
"""

from __future__ import annotations

import contextlib
import json
from typing import Annotated

import typer
from ldpfleet.app.cli_common import console, user_errors


def bench_cadr_command(
    graph: Annotated[
        str,
        typer.Option(
            help="facebook, wiki-vote, a generator (barabasi_albert:n=500,m=3) or an "
            "edge-list path (SNAP/KONECT; plain, gzip, bzip2, xz; docs/cadr.md)."
        ),
    ] = "facebook",
    method: Annotated[
        str,
        typer.Option(
            help="auto (clip under --pipeline dp, ll under paper), ll, lh, ra, er or clip "
            "(no negotiation: the whole view is ε-node-LDP)."
        ),
    ] = "auto",
    theta: Annotated[str, typer.Option(help="An integer, auto-sum or auto-dev.")] = "auto-dev",
    eps: Annotated[float, typer.Option(help="Node-LDP budget.")] = 3.0,
    alpha: Annotated[float, typer.Option(help="Share of eps for NDOE + LPEA.")] = 0.1,
    runs: Annotated[int, typer.Option(help="Runs (seeds 0..runs-1).")] = 20,
    transport: Annotated[
        str,
        typer.Option(
            help="reference (in-process pipeline); memory, embedded, mqtt (Mosquitto on "
            "127.0.0.1:1883) or mqtt://host:port: the device fleet protocol."
        ),
    ] = "reference",
    fanout: Annotated[int, typer.Option(help="Thresholds per Deviation round (fleet).")] = 1,
    spacing: Annotated[
        str, typer.Option(help="linear or geometric threshold grid (fleet, fanout > 1).")
    ] = "linear",
    processes: Annotated[
        int, typer.Option(help="Processes the devices run in (fleet on a real broker).")
    ] = 1,
    non_private: Annotated[
        bool, typer.Option(help="The seed's Table 2: projection only, no noise.")
    ] = False,
    pipeline: Annotated[
        str, typer.Option(help="dp (θ for the post-processed release) or paper (exact paper).")
    ] = "dp",
    degree_bound: Annotated[
        str,
        typer.Option(
            help="The public degree bound D: auto (dp: devices, paper: graph-max), devices "
            "(n - 1), graph-max (the graph's maximum degree: not private) or an integer."
        ),
    ] = "auto",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = True,
) -> None:
    """CADR-LDP degree release: MAE/MSE, distribution error, kept-edge ratio, chosen θ."""
    import time as _time

    from ldpfleet.app.progress import job_progress
    from ldpfleet.scenarios.cadr_run import scenario_graph_source

    with user_errors():
        method, rule, bound = _cadr_options(
            method, pipeline, non_private, runs, eps, alpha, theta, degree_bound
        )
        _fleet_options(transport, fanout, spacing, processes)
        graph = scenario_graph_source(graph, None)  # ~ expanded, data/... found
        g = _bench_graph(graph)
        if not non_private:
            _theta_within_bound(g, rule, bound, pipeline)
        started = _time.perf_counter()
        bar = job_progress("bench cadr", None if non_private else runs, unit="runs")
    with user_errors(), bar as advance:  # runs done / runs (one tick at the end: non-private)
        if transport != "reference":
            _refuse_centralised_on_fleet(non_private, method)
            with _stage_failures():
                result = _bench_cadr_fleet(
                    g, graph, transport, method, rule, eps, alpha, runs, fanout, spacing,
                    processes, pipeline, advance, bound,
                )  # fmt: skip
        elif non_private:
            result = _non_private_cadr(g, method, rule, runs)
        else:
            result = _private_cadr(g, method, rule, eps, alpha, runs, pipeline, bound, advance)
        _add_release_warnings(result, g)
        _same_keys(result)
        _add_verdict(result)
    print(json.dumps({
        "bench": "cadr", "graph": g.name or graph, "nodes": g.n, "edges": g.edges(),
        "method": method, "eps": eps, "alpha": alpha, "runs": runs, "transport": transport,
        **result, "seconds": round(_time.perf_counter() - started, 2),
    }))  # fmt: skip


def _cadr_options(
    method: str,
    pipeline: str,
    non_private: bool,
    runs: int,
    eps: float,
    alpha: float,
    theta: str,
    degree_bound: str,
) -> tuple[str, str | int, str | int]:
    """``bench cadr``'s options checked (one ``ScenarioError`` sentence naming the option,
    or ``resolve_degree_bound``'s naming ``degree_bound``): the method it runs (auto
    resolved), the θ rule (an integer, auto-sum or auto-dev) and the degree bound."""
    from ldpfleet.protocol.cadr_budget import (
        CADR_EPS_MAX,
        CADR_EPS_MIN,
        resolve_degree_bound,
        resolve_method,
    )
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.scenarios.schema import ScenarioError

    if method not in ("auto", "ll", "lh", "ra", "er", "clip"):
        raise ScenarioError(f"--method {method!r} is not one of auto, ll, lh, ra, er, clip")
    if pipeline not in ("dp", "paper"):
        raise ScenarioError(f"--pipeline {pipeline!r} is not dp or paper")
    # auto: clip under dp, ll under paper; --non-private measures a projection: ll
    method = "ll" if non_private and method == "auto" else resolve_method(method, pipeline)
    if runs < 1:  # zero runs averaged to NaN, printed as invalid JSON
        raise ScenarioError(f"--runs must be an integer >= 1, got {runs}")
    if not CADR_EPS_MIN <= eps <= CADR_EPS_MAX:  # the limits of a scenario's [cadr] eps
        raise ScenarioError(
            f"--eps must be in [{CADR_EPS_MIN:g}, {CADR_EPS_MAX:g}], got {eps} (below "
            f'{CADR_EPS_MIN:g} every CADR release is noise: docs/cadr.md, "Range of eps")'
        )
    if not 0 < alpha < 1:
        raise ScenarioError(f"--alpha must be in (0, 1), got {alpha}")
    rule: str | int = int(theta) if theta.strip().lstrip("+-").isdigit() else theta
    if rule not in ("auto-sum", "auto-dev") and not (isinstance(rule, int) and rule >= 1):
        raise ScenarioError(f"--theta must be an integer >= 1, auto-sum or auto-dev, got {theta!r}")
    if rule == "auto-sum" and pipeline == "dp" and not non_private:
        # the reference printed private_run's ValueError as a traceback (helper F's trial)
        raise ScenarioError(
            "--theta auto-sum is the paper pipeline's θ rule (exact secure sums); the dp "
            "pipeline searches θ by Deviation (auto-dev, the DP search) or takes a given θ: "
            "use one of those, or --pipeline paper"
        )
    bound: str | int = int(degree_bound) if degree_bound.isdigit() else degree_bound
    try:
        resolve_degree_bound(bound, pipeline, 2, 1)  # one sentence naming degree_bound if bad
    except ParameterError as error:  # it said "degree_bound: ...", no option
        raise ScenarioError(f"--degree-bound {error.reason}") from None
    return method, rule, bound


# bench cadr's --transport: the in-process reference, or a broker (broker.select)
TRANSPORTS = ("reference", "memory", "embedded", "mqtt")


def _fleet_options(transport: str, fanout: int, spacing: str, processes: int) -> None:
    """``--transport``, ``--fanout``, ``--spacing`` and ``--processes`` checked on every
    transport, each refusal one sentence naming the option (``--transport foo`` said
    "broker URL 'foo' must start with mqtt://", naming neither the option nor reference;
    ``--fanout 0`` and ``--spacing log`` ran, ignored, in process and under dp)."""
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.scenarios.cadr_run import MAX_FANOUT, MAX_PROCESSES, check_spacing, check_whole
    from ldpfleet.scenarios.schema import ScenarioError

    if transport not in TRANSPORTS and not transport.startswith(("mqtt://", "mqtts://")):
        raise ScenarioError(
            f"--transport {transport!r} is not one of {', '.join(TRANSPORTS)} or an mqtt:// "
            "(mqtts://) URL"
        )
    try:  # the checks CadrSettings and run_cadr_fleet make, named as options
        check_whole(fanout, "fanout", 1, MAX_FANOUT)
        check_whole(processes, "processes", 1, MAX_PROCESSES)
        check_spacing(spacing)
    except ParameterError as error:
        raise ScenarioError(f"--{error.field} {error.reason}") from None


@contextlib.contextmanager
def _stage_failures():
    """A fleet run whose devices did not join, or whose stage did not end, within the stage
    timeout (120 s): one sentence and exit status 1 (a 50,000-device graph on the memory
    transport printed a CadrFailed traceback after 196 s)."""
    from ldpfleet.collector.cadr_fleet import CadrFailed
    from ldpfleet.collector.readiness import DevicesMissing
    from rich.markup import escape

    try:
        yield
    except (CadrFailed, DevicesMissing) as error:
        console.print(
            f"[bold red]error:[/] {escape(str(error))}; bench cadr gives each stage 120 s: "
            "for a larger fleet run a scenario with \\[cadr] stage_timeout "
            "(docs/scenarios.md), or --transport reference",
            highlight=False, soft_wrap=True, emoji=False,
        )  # fmt: skip
        raise typer.Exit(1) from None


def _refuse_centralised_on_fleet(non_private: bool, method: str) -> None:
    """``bench cadr --transport ...``: the fleet runs only the private methods."""
    from ldpfleet.scenarios.schema import ScenarioError

    if non_private or method == "er":
        raise ScenarioError(
            "--transport: the fleet runs the private ll, lh, ra and clip; --non-private "
            "and er are centralised: use --transport reference"
        )


def _theta_within_bound(g, rule: str | int, bound: str | int, pipeline: str) -> None:
    """A given ``--theta`` above the run's degree bound D, refused on every transport naming
    the options: the fleet's devices refuse such a θ (its message named ``theta:``, no
    option), and the in-process reference ran it, so ``--theta 200`` on a star of 100 nodes
    (D = 99) released MAE 2.94 against all zeros' 1.98 with no word (helper G's user trial,
    2026-12-06)."""
    from ldpfleet.protocol.cadr_budget import check_theta_within_bound, resolve_degree_bound
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.scenarios.schema import ScenarioError

    degrees = g.degrees()
    resolved = resolve_degree_bound(bound, pipeline, g.n, int(degrees.max()) if g.n else 0)
    try:
        check_theta_within_bound(rule, resolved)
    except ParameterError as error:
        limit, source = resolved
        raise ScenarioError(
            f"--theta must be <= the degree bound D = {limit} ({source}), got {error.value}: "
            "lower --theta or raise --degree-bound"
        ) from None


def _non_private_cadr(g, method: str, rule: str | int, runs: int) -> dict:
    """``bench cadr --non-private``: the projection alone at an integer θ, no noise (the
    seed's Table 2), over seeds 0..runs-1."""
    from ldpfleet.collector.projection import evaluate
    from ldpfleet.scenarios.schema import ScenarioError

    if method == "clip":  # no projection to measure: clip only clips each degree
        raise ScenarioError("--non-private measures a projection: ll, lh, ra or er")
    if not isinstance(rule, int):
        raise ScenarioError("--non-private needs an integer --theta")
    score = evaluate(g, method.upper(), rule, list(range(runs)))
    return {
        "mode": "non-private",
        "degree_sequence_mae": score.seq_mae,
        "degree_sequence_mse": score.seq_mse,
        "degree_distribution_l1": score.dist_l1,
        "kept_edge_ratio": score.kept_ratio,
        "theta": rule,
    }


def _private_cadr(
    g, method: str, rule: str | int, eps, alpha, runs: int, pipeline: str, bound, advance
) -> dict:
    """``bench cadr`` in-process: the reference pipeline's private run for seeds
    0..runs-1 (one ``advance()`` each), summarised."""
    from ldpfleet.collector.cadr_reference import private_run, summarise

    done = []
    for seed in range(runs):
        done.append(private_run(g, method, rule, eps, alpha, seed, pipeline, bound))
        advance()
    return {"mode": "private", **summarise(done)}


def _same_keys(result: dict) -> None:
    """A private bench prints the same figure keys on every transport (docs/cadr.md): the
    in-process reference left ``theta_search`` out where no θ search ran (the fleet: null),
    and the fleet left out ``histogram_l1`` (the reference: = ``distribution_l1``); helper
    G's user trial, 2026-12-06."""
    if result.get("mode") != "private":
        return
    result.setdefault("theta_search", None)
    if "distribution_l1" in result:
        result.setdefault("histogram_l1", result["distribution_l1"])


def _add_verdict(result: dict) -> None:
    """A private bench's ``verdict``: the sentence ``ldpfleet run`` prints under its summary
    (``app.cadr_report.verdict``), the mean released MAE against the constant true median
    and all zeros. The JSON had the three figures only: a ``--pipeline paper`` bench on
    K(3, 300) at ε = 1 released MAE 5.99 against all zeros' 5.94 with ``warnings`` empty
    (helper F's trial)."""
    if result.get("mode") != "private":
        return
    from ldpfleet.app.cadr_report import verdict

    baselines = result.get("baselines") or {}
    median = (baselines.get("constant_median_oracle") or {}).get("mae")
    zero = (baselines.get("all_zero") or {}).get("mae")
    result["verdict"] = verdict(result.get("mae"), median, zero, result.get("pipeline"))


def _add_release_warnings(result: dict, g) -> None:
    """A private release (one that spent on the DSR): whether it can place the fleet,
    ``release_warnings`` under ``result["warnings"]``."""
    if "dsr" in (result.get("spent") or {}):
        from ldpfleet.protocol.cadr_budget import release_warnings

        searched = result["spent"].get("theta", 0.0) > 0.0  # the DP θ search ran
        result["warnings"] = release_warnings(result["spent"]["dsr"], g.n, searched=searched)


def _bench_graph(graph: str):
    """``bench cadr``'s graph: a refusal names the option (``--graph: ...``, it said
    ``graph: ...``) and the nearest named graph (``facebok``: did you mean 'facebook'?)."""
    from ldpfleet.app.suggest import near_miss
    from ldpfleet.devices.graphs import GENERATORS, NAMED_GRAPHS, load_graph
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.scenarios.schema import ScenarioError

    try:
        return load_graph(graph)
    except ParameterError as error:
        reason = error.reason if error.field == "graph" else str(error)
        # a mistyped generator kind (erdos_reny:n=100,p=0.1) is read as a path: name the
        # kind it is close to, as a scenario's graph.source does (helper F's trial)
        kind, sep, _ = graph.partition(":")
        hint = near_miss(kind, GENERATORS) if sep else near_miss(graph, NAMED_GRAPHS)
        raise ScenarioError(f"--graph: {reason}{hint}") from None


def _bench_cadr_fleet(
    g, graph, transport, method, rule, eps, alpha, runs, fanout, spacing, processes, pipeline,
    advance=lambda: None, degree_bound: str | int = "auto",
) -> dict:  # fmt: skip
    """``bench cadr`` over a transport: ``runs`` fleet runs (seeds 0..runs-1), means."""
    from ldpfleet.protocol.cadr_budget import PART_NAMES
    from ldpfleet.scenarios.cadr_run import run_cadr_fleet
    from ldpfleet.scenarios.loop import run as run_loop

    broker = "mqtt://127.0.0.1:1883" if transport == "mqtt" else transport
    per_run = []
    for seed in range(runs):
        result = _fleet_run(
            run_loop,
            run_cadr_fleet(
                g, broker=broker, method=method, theta=rule, eps=eps, alpha=alpha,
                seed=seed, fanout=fanout, spacing=spacing,
                processes=processes if broker != "memory" else 1, graph_spec=graph,
                pipeline=pipeline, degree_bound=degree_bound,
            ),
        )  # fmt: skip
        for key in ("released", "histogram", "ledgers", "theta_queries", "per_device"):
            result.pop(key)
        result.pop("estimate_histogram", None)
        per_run.append(result)
        advance()
    means = _fleet_means(per_run)
    last = per_run[-1]
    return {
        "mode": "private",
        "broker": last["broker"],
        "pipeline": pipeline,
        "degree_bound": last["degree_bound"],
        "degree_bound_source": last["degree_bound_source"],
        **means,
        "baselines": last["baselines"],
        "spent": last["budget"],  # per device, by part: theta (the DP θ search), ndoe, lpea, dsr
        "spent_by_mechanism": {
            label: last["budget"][part]
            for label, part in PART_NAMES.items()
            if part in last["budget"]
        },
        "theta_search": _fleet_theta_search([r["theta_search"] for r in per_run]),
        "theta": sorted({r["theta"] for r in per_run}),
        "theta_chosen_by": last["theta_chosen_by"],  # public rule: the same every seed
        "privacy_claim": last["privacy_claim"],
        "theta_rounds": last["theta_rounds"],
        "processes": last["processes"],
        "ledger_exact": all(r["ledger_exact"] is not False for r in per_run),
        "max_kept_degree": max(r["max_kept_degree"] for r in per_run),
        "messages": {
            "device_up": last["device_messages_up"],
            "device_down": last["device_messages_down"],
            "lpea_round_cap": last["lpea_round_cap"],
        },
        "stage_seconds": last["stage_seconds"],
    }


def _fleet_run(run_loop, fleet_run):
    """One fleet run; the fleet-size refusal (``CadrSettings.check_fleet_size``, field
    ``devices``) names the options: it printed "error: devices: ... give an integer theta"
    (helper G's user trial, 2026-12-06)."""
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.scenarios.schema import ScenarioError

    try:
        return run_loop(fleet_run)
    except ParameterError as error:
        if error.field != "devices":
            raise
        reason = error.reason.replace("give an integer theta", "give an integer --theta")
        raise ScenarioError(f"--graph: {reason}") from None


def _fleet_means(per_run: list[dict]) -> dict:
    """The fleet runs' means: the error figures, and the raw and post-processed releases'."""
    import numpy as np

    means = {
        key: float(np.mean([r[key] for r in per_run]))
        for key in ("mae", "mse", "distribution_l1", "histogram_emd", "kept_edge_ratio",
                    "bound_mean", "seconds")
    }  # fmt: skip
    for part in ("raw", "postprocessed"):
        means[part] = {k: float(np.mean([r[part][k] for r in per_run])) for k in per_run[0][part]}
    return means


def _fleet_theta_search(searches: list[dict | None]) -> dict | None:
    """The runs' DP θ searches in the shape of the reference bench's ``theta_search``
    (``collector.cadr_reference.summarise``), plus what only the fleet knows per run: the
    survivors whose noise shares were summed and the noisy counts' largest error."""
    if not searches or searches[0] is None:
        return None  # the paper pipeline: no DP θ search
    first = searches[0]
    return {
        "eps": first["eps"],
        "mechanism": first["mechanism"],
        "noise_parties": first["noise_parties"],
        "theta_exact": first["theta_exact"],
        "thetas": [s["theta"] for s in searches],
        "survivors": [s["survivors"] for s in searches],
        "counts_error_max": [s["counts_error_max"] for s in searches],
    }
