"""The ``ldpfleet bench fleet``, ``bench cpr`` and ``bench secagg`` command lines, and the
checks that name the option a bench's refusal is about (``--stage-timeout``, not
``stage_timeout``).

The benches themselves (app/bench.py, app/bench_cpr.py, app/bench_secagg.py) are imported
when a command runs. The command functions are registered on the ``bench`` group in
app/cli.py; the benches that need numpy or scipy have theirs in app/bench_commands.py.
"""

from __future__ import annotations

import contextlib
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from ldpfleet.app.cli_common import OptionError, _fail, user_errors
from ldpfleet.app.cli_options import ShardBrokerOption, _at_least_one, _out_dir_option
from ldpfleet.app.cli_summary import _print_warnings


def bench_fleet_command(
    devices: Annotated[int, typer.Option(help="Number of devices.")] = 1000,
    steps: Annotated[
        int, typer.Option(help="Time steps per device.", callback=_at_least_one("steps"))
    ] = 100,
    broker: Annotated[
        str, typer.Option("--broker", "-b", help="embedded, memory or mqtt://host:port")
    ] = "embedded",
    batch_steps: Annotated[
        int | None,
        typer.Option(
            help="Steps per report message (default w).", callback=_at_least_one("batch-steps")
        ),
    ] = None,
    eps: Annotated[float, typer.Option(help="Window budget.")] = 2.0,
    w: Annotated[
        int | None,
        typer.Option(
            help="Window length (default 5, or --steps when shorter).",
            callback=_at_least_one("w"),
        ),
    ] = None,
    max_in_flight: Annotated[
        int, typer.Option(help="Collector credit: reports in flight at most.")
    ] = 256,
    credit_window: Annotated[int, typer.Option(help="Reports a device may have in flight.")] = 2,
    shards: Annotated[
        str, typer.Option(help='Device processes: a number or "auto" (docs/scaling.md).')
    ] = "auto",
    connection: Annotated[
        str,
        typer.Option(
            help='"device" (one MQTT connection each), "gateway" (bulk forwarding above '
            '100,000 devices) or "bulk" (docs/scaling.md "Bulk gateways").'
        ),
    ] = "device",
    gateway_devices: Annotated[
        int | None,
        typer.Option(
            help="Devices per gateway (bulk default 10,000); with --connection gateway, bulk "
            "or auto.",
            callback=_at_least_one("gateway-devices"),
        ),
    ] = None,
    connect_concurrency: Annotated[int, typer.Option(help="Connections opened at once.")] = 64,
    trace: Annotated[
        str,
        typer.Option(
            help='What the trace keeps: "all" or "control", or with --connection bulk also '
            '"none" (docs/scaling.md).'
        ),
    ] = "all",
    shard_broker: ShardBrokerOption = None,
    retransmit_after: Annotated[
        float | None,
        typer.Option(help="Retransmission delay (waiting hellos: 6x); default 5, bulk 30."),
    ] = None,
    out: Annotated[
        Path | None,
        _out_dir_option("Keep the run's outputs here."),
    ] = None,
    partitions: Annotated[
        int, typer.Option(help="Collector partitions: a coordinator + P worker processes.")
    ] = 1,
    reconstruct: Annotated[
        str,
        typer.Option(help='Reconstruct every stream ("cpr", a baseline, or "none").'),
    ] = "none",
    step_seconds: Annotated[
        float,
        typer.Option(help="Paced devices: seconds between readings (\\[stream] step_seconds)."),
    ] = 0.0,
    as_json: Annotated[
        bool,
        typer.Option("--json/--pretty", help="One-line JSON (default) or indented JSON."),
    ] = True,
) -> None:
    """End-to-end fleet run: connect seconds, messages/s, report->ack latency p50/p99,
    peak RSS of the collector, fleet and broker processes, CPU per report, lost reports."""
    w = _fleet_window(steps, batch_steps, w, connection, gateway_devices)
    result = _run_bench_fleet(
        devices,
        steps,
        broker=broker,
        eps=eps,
        w=w,
        batch_steps=batch_steps,
        max_in_flight=max_in_flight,
        credit_window=credit_window,
        shards=int(shards) if shards.isdigit() else shards,
        connection=connection,
        connect_concurrency=connect_concurrency,
        trace=trace,
        out_dir=str(out) if out else None,
        shard_brokers=shard_broker or None,
        retransmit_after=retransmit_after,
        partitions=partitions,
        reconstruct=reconstruct,
        gateway_devices=gateway_devices,
        step_seconds=step_seconds,
    )
    print(json.dumps(result, indent=None if as_json else 2))
    if result["lost"]:
        _fail(f"{result['lost']} reports lost; the measurement is of an incomplete run")


def _fleet_window(
    steps: int, batch_steps: int | None, w: int | None, connection: str, gateway_devices
) -> int:
    """``bench fleet``'s window: ``--w``, else ``FLEET_DEFAULT_W`` or ``--steps`` when
    shorter; refuses ``--gateway-devices`` with ``--connection device`` and a ``--w`` or
    ``--batch-steps`` longer than ``--steps`` (``OptionError``)."""
    if gateway_devices is not None and connection == "device":
        raise OptionError(
            "--gateway-devices",
            "left out with --connection device (its own connection per device)",
            gateway_devices,
            hint="it applies to --connection gateway, bulk or auto",
        )
    if w is None:  # a --steps 3 run was refused for the default --w 5 it never set
        w = min(FLEET_DEFAULT_W, steps)
    _check_within_steps(steps, batch_steps=batch_steps, w=w)
    return w


def _run_bench_fleet(devices: int, steps: int, **options) -> dict:
    """``app.bench.bench_fleet(devices, steps, **options)`` on an event loop, behind a
    progress bar of the reports; a refusal is one line naming the option (exit 2)."""
    from ldpfleet.app.bench import bench_fleet
    from ldpfleet.app.progress import as_callback, job_progress
    from ldpfleet.scenarios.loop import run as run_loop

    with (
        user_errors(),
        _bench_fleet_options(),
        job_progress(f"bench fleet ({devices:,} devices)", unit="reports") as step,
    ):
        return run_loop(bench_fleet(devices, steps, progress=as_callback(step), **options))


FLEET_DEFAULT_W = 5  # bench fleet's window when --w is not given (at most --steps)


@contextlib.contextmanager
def _bench_fleet_options():
    """A refusal of the scenario ``bench fleet`` builds names the option (``--devices``)
    beside the scenario key (``fleet.devices``), which the user never wrote."""
    from ldpfleet.app.bench import name_the_option
    from ldpfleet.scenarios.schema import ScenarioError

    try:
        yield
    except ScenarioError as error:
        renamed = name_the_option(str(error))
        if renamed == str(error):
            raise
        raise ScenarioError(renamed) from error


def _check_within_steps(steps: int, **lengths: int | None) -> None:
    """``bench fleet``: a ``--w`` or ``--batch-steps`` longer than ``--steps`` ran (a batch
    of 5 over 3 steps counted 5 values per message); refused, naming both options."""
    for name, value in lengths.items():
        if value is not None and value > steps:
            option = "--" + name.replace("_", "-")
            raise OptionError(option, f"at most --steps {steps}", value)


def bench_cpr_command(
    dataset: Annotated[
        list[str] | None,
        typer.Option(help="synthetic, darwin, music, raisin (repeatable; default all)."),
    ] = None,
    eps: Annotated[
        list[float] | None,
        typer.Option(help="Detection budgets, each once (default 1 2 3 4 5; eps / w <= 50)."),
    ] = None,
    w: Annotated[
        list[int] | None,
        typer.Option(help="Detection windows, each once, 1 .. --n (default 5 10 15 20 25)."),
    ] = None,
    cosine_eps: Annotated[
        list[float] | None,
        typer.Option(help="Cosine-distance budgets, each once (default 0.5 .. 5)."),
    ] = None,
    cosine_w: Annotated[
        int | None, typer.Option(help="Window for the cosine-distance sweep (1 .. --n; 5).")
    ] = None,
    trials: Annotated[int | None, typer.Option(help="Trials per cell (1 .. 10,000; 100).")] = None,
    length: Annotated[
        int | None,
        typer.Option(
            "--n",
            help="Samples per stream (144 .. 1,000,000; 144: 3 cycles of period 48; 3000).",
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Seed of every trial (0 .. 2^63-1).")] = 0,
    fleet_streams: Annotated[
        int | None,
        typer.Option(
            help="Streams of 10,000 reports for the fleet timing (0 .. 10,000; 1000; 0: skip "
            "it, the one-stream timings of 'speed' still run)."
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json/--markdown", help="JSON (default) or the docs tables.")
    ] = True,
    grid: Annotated[
        bool,
        typer.Option(
            "--grid",
            help="Instead: the period-detection grid (detect_period vs folded-variance and "
            "autocorrelation baselines, false-claim rates on aperiodic streams).",
        ),
    ] = False,
    grid_trials: Annotated[
        int | None, typer.Option(help="--grid: trials per grid cell (1 .. 10,000; 40).")
    ] = None,
    aperiodic_trials: Annotated[
        int | None, typer.Option(help="--grid: trials per aperiodic cell (1 .. 10,000; 200).")
    ] = None,
    grid_source: Annotated[
        list[str] | None,
        typer.Option(help="--grid: only this template (repeatable; default all 11)."),
    ] = None,
    grid_shape: Annotated[
        list[str] | None,
        typer.Option(
            help="--grid: only this PERIOD,CYCLES (repeatable, e.g. 50,3; any period >= 2, "
            "cycles >= 3; default the grid's 8)."
        ),
    ] = None,
    grid_eps0: Annotated[
        list[float] | None,
        typer.Option(
            help="--grid: these per-report budgets (repeatable, each once, <= 50; default "
            "0.2 0.5 1 2 5; the aperiodic cells run at them too)."
        ),
    ] = None,
    grid_template: Annotated[
        list[str] | None,
        typer.Option(
            metavar="FILE[:COLUMN]",
            help="--grid: your own template (repeatable): the column's values (CSV, TSV or "
            "one number a line, gzip ok; by header name or 0-based index, default the first "
            "numeric column) are ONE cycle, resampled to every grid period as a built-in "
            "record; rows are named STEM:COLUMN. Alone it runs only your templates (add "
            "--grid-source to compare).",
        ),
    ] = None,
) -> None:
    """Seed 003's CPR evaluation in-process: detection accuracy and cosine distances."""
    with user_errors():
        _cpr_mode_options(grid, {
            "--dataset": dataset, "--eps": eps, "--w": w, "--cosine-eps": cosine_eps,
            "--cosine-w": cosine_w, "--trials": trials, "--n": length,
            "--fleet-streams": fleet_streams, "--grid-trials": grid_trials,
            "--aperiodic-trials": aperiodic_trials, "--grid-source": grid_source,
            "--grid-shape": grid_shape, "--grid-eps0": grid_eps0,
            "--grid-template": grid_template,
        })  # fmt: skip
    if grid:
        found = _run_period_grid(
            seed, grid_trials, aperiodic_trials, grid_shape, grid_source, grid_eps0, grid_template
        )
        _print_period_grid(found, as_json)
        return
    result = _run_cpr_evaluation(
        dataset, eps, w, cosine_eps, cosine_w, trials, length, seed, fleet_streams
    )
    _print_cpr_evaluation(result, as_json)


def _run_period_grid(
    seed: int,
    grid_trials: int | None,
    aperiodic_trials: int | None,
    grid_shape: list[str] | None,
    grid_source: list[str] | None,
    grid_eps0: list[float] | None,
    grid_template: list[str] | None,
) -> dict:
    """``bench cpr --grid``: the period-detection grid at the options given (the defaults
    for those left out); a refusal names the option (exit 2)."""
    from ldpfleet.app.bench_cpr import bench_period_grid

    with user_errors(), _cpr_options():
        return bench_period_grid(
            trials=40 if grid_trials is None else grid_trials,
            aperiodic_trials=200 if aperiodic_trials is None else aperiodic_trials,
            seed=seed,
            shapes=None if grid_shape is None else _grid_shapes(grid_shape),
            sources=grid_source,
            eps0=grid_eps0,
            templates=grid_template,
        )


def _print_period_grid(found: dict, as_json: bool) -> None:
    """The grid as one JSON line, or its markdown tables headed by the command line."""
    from ldpfleet.app.bench_cpr import grid_markdown

    command = "ldpfleet " + " ".join(sys.argv[1:])
    print(json.dumps(found) if as_json else grid_markdown(found, command))


def _run_cpr_evaluation(
    dataset: list[str] | None,
    eps: list[float] | None,
    w: list[int] | None,
    cosine_eps: list[float] | None,
    cosine_w: int | None,
    trials: int | None,
    length: int | None,
    seed: int,
    fleet_streams: int | None,
) -> dict:
    """``bench cpr``: the CPR evaluation at the options given (the defaults for those left
    out), behind a progress bar of its cells; a refusal names the option (exit 2)."""
    from ldpfleet.app.bench_cpr import COSINE_EPS, DETECTION_EPS, DETECTION_W, bench_cpr
    from ldpfleet.app.progress import as_callback, job_progress
    from ldpfleet.devices.periodic import DATASETS

    with user_errors(), _cpr_options(), job_progress("bench cpr", unit="cells") as step:
        return bench_cpr(
            tuple(dataset or DATASETS),
            detection_eps=tuple(eps or DETECTION_EPS),
            detection_w=tuple(w or DETECTION_W),
            cosine_eps=tuple(cosine_eps or COSINE_EPS),
            cosine_w=5 if cosine_w is None else cosine_w,
            trials=100 if trials is None else trials,
            n=3000 if length is None else length,
            seed=seed,
            fleet_streams=1000 if fleet_streams is None else fleet_streams,
            progress=as_callback(step),
        )


def _print_cpr_evaluation(result: dict, as_json: bool) -> None:
    """The evaluation as one JSON line, or the docs tables headed by the command line."""
    from ldpfleet.app.bench_cpr import markdown

    if as_json:
        print(json.dumps(result))
    else:
        print(markdown(result, "ldpfleet " + " ".join(sys.argv[1:])))


_CPR_GRID_ONLY = ("--grid-trials", "--aperiodic-trials", "--grid-source", "--grid-shape",
                  "--grid-eps0", "--grid-template")  # fmt: skip


def _cpr_mode_options(grid: bool, given: dict) -> None:
    """Refuse an option the chosen mode ignores: ``--grid`` runs only the grid (``--eps``,
    ``--n``, ``--trials`` ... were silently ignored with it), and the ``--grid-*`` and
    ``--aperiodic-trials`` options apply to ``--grid`` only (silently ignored without)."""
    from ldpfleet.protocol.errors import ParameterError

    for option, value in given.items():
        if value is None or (option in _CPR_GRID_ONLY) == grid:
            continue
        shown = " ".join(str(v) for v in value) if isinstance(value, list) else value
        if grid:
            reason = f"--grid runs only the period grid (its options: {', '.join(_CPR_GRID_ONLY)})"
            limit = f"with --grid only its options: {', '.join(_CPR_GRID_ONLY)}"
        else:
            reason = "applies to --grid only"
            limit = "--grid only"
        raise ParameterError(
            f"{reason}, got {option} {shown}", field=option, limit=limit, value=value
        )


# bench cpr's ParameterError fields (app/bench_cpr.py) by the option that sets them
_CPR_OPTIONS = {
    "datasets": "--dataset", "eps": "--eps", "w": "--w", "cosine_eps": "--cosine-eps",
    "cosine_w": "--cosine-w", "trials": "--trials", "n": "--n", "seed": "--seed",
    "fleet_streams": "--fleet-streams", "grid_trials": "--grid-trials",
    "aperiodic_trials": "--aperiodic-trials", "grid_shape": "--grid-shape",
    "grid_shape period": "--grid-shape", "grid_shape cycles": "--grid-shape",
    "grid_source": "--grid-source", "grid_eps0": "--grid-eps0",
    "grid_template": "--grid-template",
}  # fmt: skip


@contextlib.contextmanager
def _cpr_options():
    """``bench cpr``: a ``ParameterError`` names the option (``--fleet-streams: ...``; it
    said ``fleet_streams: ...``, a name the command line has not), as ``bench gcdp`` does."""
    from ldpfleet.protocol.errors import ParameterError

    try:
        yield
    except ParameterError as error:
        if error.field not in _CPR_OPTIONS:
            raise
        raise ParameterError(
            error.reason, field=_CPR_OPTIONS[error.field], limit=error.limit, value=error.value
        ) from None


def _secagg_degree(neighbors: str) -> int:
    """``--neighbors K``: an integer, else a ``ParameterError`` naming the option."""
    from ldpfleet.protocol.errors import ParameterError

    try:
        return int(neighbors)
    except ValueError:
        raise ParameterError(
            f"must be an integer K >= 1, 'auto' or 'full', got {neighbors!r}",
            field="neighbors",
            limit="an integer K >= 1, 'auto' or 'full'",
            value=neighbors,
        ) from None


def bench_secagg_command(
    devices: Annotated[int, typer.Option(help="Number of devices.")] = 200,
    dim: Annotated[int, typer.Option(help="Vector length.")] = 10_000,
    neighbors: Annotated[
        str, typer.Option(help="K (SecAgg+ degree), 'auto' (~2 log2 n) or 'full'.")
    ] = "auto",
    dropout: Annotated[
        float,
        typer.Option(
            help="Fraction of devices that drop out, in [0, 1); at least the threshold "
            "((K + 1) // 2 + 1) must remain."
        ),
    ] = 0.0,
    dropout_stage: Annotated[
        str, typer.Option(help="before_keys, after_keys, after_shares, after_masked, during_unmask")
    ] = "after_shares",
    broker: Annotated[
        str, typer.Option("--broker", "-b", help="memory, embedded or mqtt://host:port")
    ] = "memory",
    stage_timeout: Annotated[
        float, typer.Option(help="Seconds per stage before silent devices count as dropped.")
    ] = 30.0,
    silent_dropouts: Annotated[
        bool, typer.Option(help="Dropped devices leave silently (the deadline detects them).")
    ] = False,
    seed: Annotated[int, typer.Option(help="Inputs and who drops out.")] = 0,
    active: Annotated[
        bool, typer.Option(help="Active-adversary mode: signed keys, consistency round.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON (always JSON).")] = True,
) -> None:
    """One secure-aggregation session end to end: seconds per stage, bytes, exactness."""
    result = _run_bench_secagg(
        devices,
        dim,
        neighbors,
        dropout,
        dropout_stage,
        broker=broker,
        stage_timeout=stage_timeout,
        silent_dropouts=silent_dropouts,
        seed=seed,
        active=active,
    )
    print(json.dumps(result))
    _print_warnings(result)  # stderr: stdout stays the JSON
    _fail_unless_exact(result)


def _run_bench_secagg(
    devices: int,
    dim: int,
    neighbors: str,
    dropout: float,
    dropout_stage: str,
    *,
    broker: str,
    stage_timeout: float,
    silent_dropouts: bool,
    seed: int,
    active: bool,
) -> dict:
    """``bench secagg``'s options checked (a refusal names the option, exit 2), then the
    session (``app.bench_secagg.bench_secagg``) behind a progress bar of the devices."""
    from ldpfleet.app.bench_secagg import bench_secagg, check_options, check_survivors
    from ldpfleet.app.progress import as_callback, job_progress
    from ldpfleet.app.suggest import near_miss
    from ldpfleet.devices.secagg_agent import DROPOUT_STAGES
    from ldpfleet.scenarios.loop import run as run_loop
    from ldpfleet.scenarios.schema import ScenarioError

    with user_errors(), job_progress("bench secagg: connecting", unit="devices") as step:
        if dropout_stage not in DROPOUT_STAGES:
            raise ScenarioError(
                f"--dropout-stage {dropout_stage!r} is not one of {', '.join(DROPOUT_STAGES)}"
                + near_miss(dropout_stage, DROPOUT_STAGES)
            )
        if not 0 <= dropout < 1:
            raise ScenarioError(f"--dropout: must be in [0, 1), got {dropout}")
        full = neighbors == "full"
        with _secagg_options():
            degree = None if neighbors in ("full", "auto") else _secagg_degree(neighbors)
            # the command refuses a run that must abort; bench_secagg itself still runs
            # one (the protocol's abort path is tested through it)
            check_options(
                devices, dim, dropout=dropout, dropout_stage=dropout_stage,
                stage_timeout=stage_timeout, seed=seed,
            )  # fmt: skip
            check_survivors(devices, dropout, degree, full)
            return run_loop(
                bench_secagg(
                    devices,
                    dim,
                    neighbors=degree,
                    full=full,
                    dropout=dropout,
                    dropout_stage=dropout_stage,
                    broker=broker,
                    stage_timeout=stage_timeout,
                    silent_dropouts=silent_dropouts,
                    seed=seed,
                    active=active,
                    progress=as_callback(step),
                )
            )


def _fail_unless_exact(result: dict) -> None:
    """Exit 1 with one sentence for a session that aborted or whose sum is not exact."""
    if result["aborted"]:
        _fail(
            f"session aborted ({result['aborted']}): no sum was revealed, as the protocol "
            "requires when too few devices remain or the survivors' graph splits (each "
            "part's sum would show); lower --dropout or raise --neighbors. "
            "The JSON above has the details"
        )
    if result["exact"] is not True:
        _fail(
            "secure sum not exact (the unmasked sum differs from the survivors' inputs); "
            "the JSON above has the details"
        )


_SECAGG_OPTIONS = ("devices", "dim", "neighbors", "dropout", "stage_timeout", "seed")


@contextlib.contextmanager
def _secagg_options():
    """``bench secagg``: a ``ParameterError`` of one of its options names the option
    (``--stage-timeout: ...``; it said ``stage_timeout: ...``, a name the command line has
    not)."""
    from ldpfleet.protocol.errors import ParameterError

    try:
        yield
    except ParameterError as error:
        if error.field not in _SECAGG_OPTIONS:
            raise
        option = "--" + error.field.replace("_", "-")
        raise ParameterError(
            error.reason, field=option, limit=error.limit, value=error.value
        ) from None


def _grid_shapes(specs: list[str]) -> list[tuple[int, int]]:
    """``--grid-shape PERIOD,CYCLES`` values as integer pairs (ranges checked by the bench)."""
    from ldpfleet.protocol.errors import ParameterError

    shapes = []
    for spec in specs:
        parts = spec.split(",")
        if len(parts) != 2 or not all(p.strip().lstrip("-").isdigit() for p in parts):
            raise ParameterError(
                f"must be PERIOD,CYCLES, got {spec!r}",
                field="grid_shape",
                limit="PERIOD,CYCLES",
                value=spec,
            )
        shapes.append((int(parts[0]), int(parts[1])))
    return shapes
