"""The ``ldpfleet`` command line.

Every user error (bad scenario key, unreachable broker, port in use, missing data file,
bad trace path) prints one sentence saying what to fix and exits with status 2; never a
traceback unless ``--verbose`` is given.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import json
import logging
import math
import os
import re
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from ldpfleet.app.audit_cli import audit_command
from ldpfleet.app.bench_commands import (
    bench_cadr_sweep,
    bench_gcdp_command,
    bench_gcdp_scaling_command,
    bench_gcdp_timing_command,
    bench_mechanisms_command,
)
from rich.console import Console

# Start-up stays cheap (``ldpfleet --help`` and every command's ``--help`` import typer and
# rich, nothing heavy): every command imports what it runs inside its function. The
# commands whose benches need numpy or scipy have their command lines in light modules
# (app/audit_cli.py, app/bench_commands.py); tests/unit/test_cli_imports.py checks this.

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Fleets of IoT devices running local differential privacy over MQTT.",
)
trace_app = typer.Typer(no_args_is_help=True, help="Inspect a recorded trace (OUT/trace.sqlite).")
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks that print JSON.")
app.add_typer(trace_app, name="trace")
app.add_typer(bench_app, name="bench")

console = Console(stderr=True)
# (module, exception): the expected failures, shown as one line. They are looked up among
# the modules already imported: an exception of a module never imported was never raised.
USER_ERRORS = (
    ("ldpfleet.scenarios.schema", "ScenarioError"),
    ("ldpfleet.broker.select", "BrokerUnavailable"),
    ("ldpfleet.broker.mqtt", "BrokerUrlError"),
    ("ldpfleet.broker.embedded", "EmbeddedBrokerError"),
    ("ldpfleet.broker.transport", "TransportError"),
    ("ldpfleet.devices.sources", "SourceError"),
    ("ldpfleet.protocol.errors", "ParameterError"),
    ("ldpfleet.broker.trace", "TraceError"),
    ("ldpfleet.broker.auth", "AuthError"),
    ("ldpfleet.broker.tls", "TlsError"),
    # the collector process refused the run (a refusal only the run can make): the line
    # the in-process runner prints for the same scenario, exit 2, no output folder
    ("ldpfleet.scenarios.split_run", "SplitRunRefused"),
)
_state = {"verbose": False}


def user_error_types() -> tuple[type[BaseException], ...]:
    """The exception classes of ``USER_ERRORS`` whose modules are imported."""
    loaded = ((sys.modules.get(module), name) for module, name in USER_ERRORS)
    return tuple(getattr(module, name) for module, name in loaded if module is not None)


def _print_version(value: bool) -> None:
    if value:
        print(f"ldpfleet {package_version()}")
        raise typer.Exit()


def package_version() -> str:
    """The installed distribution's version (``ldpfleet.__version__`` in a source tree)."""
    from importlib import metadata

    try:
        return metadata.version("ldpfleet")
    except metadata.PackageNotFoundError:
        import ldpfleet

        return ldpfleet.__version__


@app.callback()
def _global(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show details and tracebacks.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    _state["verbose"] = verbose
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # amqtt logs its own tracebacks (e.g. a port in use) before we print one clear line
    # for them: only with --verbose
    for noisy in ("amqtt", "transitions"):
        logging.getLogger(noisy).setLevel(logging.WARNING if verbose else logging.CRITICAL)


@contextlib.contextmanager
def user_errors():
    """Turn expected failures into one clear line and exit status 2."""
    try:
        yield
    except user_error_types() as error:
        if _state["verbose"]:
            console.print_exception()
        from rich.markup import escape

        # escaped: a message naming a section ([stream]) is not rich markup; no emoji codes:
        # a value such as 'data.csv:v:' or 'nope:smile:' printed as 'data.csv✌', 'nope😄'
        console.print(
            f"[bold red]error:[/] {escape(str(error))}",
            highlight=False,
            soft_wrap=True,
            emoji=False,
        )
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        _say_interrupted("interrupted")
        raise typer.Exit(130) from None


def _say_interrupted(sentence: str) -> None:
    """The one line a Ctrl-C prints (``main`` prints "interrupted" for the commands that
    did not say it themselves)."""
    console.print(sentence, highlight=False, soft_wrap=True)
    _state["interrupted_said"] = True


BrokerOption = Annotated[
    str | None,
    typer.Option(
        "--broker",
        "-b",
        help="embedded (default: in-process amqtt), memory (no broker), "
        "mqtt://\\[user:pass@]host:port or mqtts://host:port?ca=PATH (TLS, docs/brokers.md)",
    ),
]


ShardBrokerOption = Annotated[
    list[str] | None,
    typer.Option(
        "--shard-broker",
        help="A broker node for the device shards (repeat: shard i uses the i-th mod n, "
        "e.g. the nodes of a cluster); the collector uses --broker.",
    ),
]


SEED_MAX = 2**63 - 1  # [scenario] seed's limit (scenarios/schema.py), kept by --seed too
SeedOption = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=SEED_MAX,
        help="Override the scenario's seed (0 .. 2^63-1, as \\[scenario] seed).",
    ),
]


class OptionError(typer.BadParameter):
    """A refused command-line option, as data: ``option`` (``"--steps"``), the ``limit`` it
    breaks (``"at least 1"``) and the ``value`` given, with an optional ``hint`` (what to do
    instead). The sentence is built from them: ``--steps must be at least 1, got 0``. A
    ``typer.BadParameter``: click prints it as a usage error and the command exits 2. Every
    option refusal of this module goes through it (tests/unit/test_F_option_error.py)."""

    def __init__(self, option: str, limit: str, value: object, *, hint: str = "") -> None:
        self.option = option
        self.limit = limit
        self.value = value
        self.hint = hint
        sentence = f"{option} must be {limit}, got {_shown(value)}"
        super().__init__(f"{sentence} ({hint})" if hint else sentence)


def _shown(value: object) -> str:
    """An option's value in a refusal: numbers as given, text quoted (an empty one shows)."""
    if isinstance(value, int | float):
        return str(value)
    return repr(str(value))


def _out_path(option: str):
    """The parser of an ``--out`` / ``--output`` option: an empty path was read as the
    current directory (``Path("")`` is ``Path(".")``) and the outputs landed there."""

    def parse(value: str | Path) -> Path:
        if isinstance(value, str) and not value:
            raise OptionError(
                option,
                "a non-empty path",
                value,
                hint="an empty path was read as the current directory: give a path, "
                "or . for the current directory",
            )
        return Path(value)

    return parse


def _out_dir(path: Path | None) -> Path | None:
    """``--out``: refused when it, or a folder on the way to it, is an existing file
    (the run used to end in a FileExistsError / NotADirectoryError traceback)."""
    if path is None:
        return None
    for folder in (path, *path.parents):
        if folder.exists():
            if not folder.is_dir():
                raise OptionError(
                    "--out",
                    "an output directory (an existing folder or a new path)",
                    path,
                    hint=f"{folder} is a file, not a directory",
                )
            break
    return path


def _out_dir_option(help_text: str):
    """The ``--out/-o`` option of a command that writes a directory: refused when empty
    (``_out_path``) or an existing file (``_out_dir``); one declaration for every command."""
    return typer.Option(
        "--out",
        "-o",
        help=help_text,
        parser=_out_path("--out"),
        metavar="PATH",
        callback=_out_dir,
    )


def _run_id_option(value: str | None) -> str | None:
    """``--run``: an empty id was taken for "none given" (a random one was made); an id no
    run can have (``a/b``, ``#``: a topic level) made ``watch`` watch nothing."""
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.protocol.topics import check_ident

    if value is not None and not value:
        raise OptionError("--run", RUN_ID_LIMIT, value, hint="leave it out for a random id")
    if value is not None:
        try:
            check_ident(value, "run")
        except ParameterError:
            raise OptionError("--run", RUN_ID_LIMIT, value) from None
    return value


RUN_ID_LIMIT = "1-64 characters of A-Z a-z 0-9 _ . -"


def _at_least_one(name: str):
    """A callback refusing an integer option below 1 (0 was read as "not given")."""

    def check(value: int | None) -> int | None:
        if value is not None and value < 1:
            raise OptionError(f"--{name}", "at least 1", value)
        return value

    return check


def _watch_seconds(value: float | None) -> float | None:
    """``watch --seconds``: NaN was a ValueError traceback, 0 or less stopped at once."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise OptionError(
            "--seconds",
            "a number of seconds > 0",
            value,
            hint="leave it out to stop with Ctrl-C",
        )
    return value


def _positive_seconds(value: float, option: str) -> float:
    """A duration option: a finite number of seconds > 0."""
    if not (value > 0 and math.isfinite(value)):
        raise OptionError(option, "a finite number of seconds > 0", value)
    return value


CredentialsOption = Annotated[
    Path | None,
    typer.Option(
        "--credentials",
        help="A run's credentials.json (ldpfleet mosquitto-config): log in with them; "
        "the run id is theirs (docs/reliability.md)",
    ),
]


def _credentials(path: Path | None, run_id: str | None = None, loaded=None):
    """Load ``--credentials``; refuse a run id other than theirs, and (given the scenario
    ``loaded``) a partition count other than its ``[collector] partitions``."""
    if path is None:
        return None
    from ldpfleet.broker.auth import AuthError, Credentials

    credentials = Credentials.load(path)
    if run_id is not None and run_id != credentials.run:
        raise AuthError(f"{path} is for run {credentials.run!r}, not {run_id!r}")
    wanted = loaded.spec.collector.partitions if loaded is not None else None
    if wanted is not None and credentials.partitions != wanted:
        raise AuthError(
            f"{path} is for {credentials.partitions} collector partition(s), but the scenario "
            f"has [collector] partitions = {wanted}: its devices' topics would be denied"
        )
    return credentials


def _with_activity(label: str):
    """Wrap a bench command so that, while it runs, stderr shows ``label`` with an activity
    bar and the elapsed time (app/progress.py: only on a terminal, never with --json) —
    for the benches that do not report their own counts yet."""

    def wrap(function):
        @functools.wraps(function)
        def running(*args, **kwargs):
            from ldpfleet.app.progress import job_progress

            with job_progress(label, unit="running"):
                return function(*args, **kwargs)

        return running

    return wrap


def _device_means_cell(accuracy: dict) -> str:
    """The per-device means' error with what it is worth beside it (results.json
    ``accuracy.baselines``): the clipped estimates where clipping helps, and the constant
    guess at mid-bounds ("4.618" alone read as a result where a constant scores 0.147),
    said "worse than" when even the clipped estimates do not beat it (the quickstart at
    eps0 = 0.4 over 200 readings: a per-device mean is noise there; issue 2 fixes its
    budget, and docs/scenarios.md says what it takes)."""
    error = accuracy["mean_abs_error"]
    cell = f"{error:.4g}"
    baselines = accuracy.get("baselines") or {}
    constant = baselines.get("constant") or {}
    clipped_error = (baselines.get("clipped_to_bounds") or {}).get("mean_abs_error")
    notes = []
    if clipped_error is not None and clipped_error < error:
        notes.append(f"clipped to the bounds {clipped_error:.4g}")
    if constant.get("mean_abs_error") is not None:
        best = error if clipped_error is None else min(error, clipped_error)
        worse = "worse than " if best >= constant["mean_abs_error"] else ""
        notes.append(f"{worse}a constant guess {constant['mean_abs_error']:.4g}")
    return f"{cell} ({'; '.join(notes)})" if notes else cell


def _summary_table(results: dict):
    from rich.table import Table

    table = Table(
        title=f"run {results['run']} ({results['broker']['kind']} broker)", show_header=False
    )
    stream = results["stages"]["stream"]
    rows_ = [
        ("devices complete", f"{results['devices_complete']} / {results['devices']}"),
        ("reports received", f"{results['reports_received']} / {results['reports_expected']}"),
        ("reports lost", str(results["reports_lost"])),
        ("reports rejected", str(results["reports_rejected"])),
        ("stream stage", f"{stream['status']} in {stream['seconds']:.2f} s"),
        ("trace messages", str(results["trace"]["messages"]) + _trace_incomplete_mark(results)),
    ]
    delivery = results.get("delivery") or {}
    if delivery.get("device_reconnects") or delivery.get("collector_reconnects"):
        rows_.append((
            "reconnects (devices / collector / recorder)",
            f"{delivery['device_reconnects']} / {delivery['collector_reconnects']} / "
            f"{delivery['recorder_reconnects']}, {delivery['republished']} republished",
        ))  # fmt: skip
    faults = results.get("faults")
    if faults:
        injected, outcome = faults["injected"], faults["outcome"]
        gone = outcome["never_returned"]
        rows_.append((
            "faults: crashes",
            f"{len(injected['crashes'])} crashed, {outcome['returned_complete']}/"
            f"{outcome['returned']} came back and completed, {len(gone)} never returned "
            f"({sum(gone.values())} batches reported missing)",
        ))  # fmt: skip
        if injected["hostile"]:
            rows_.append((
                "faults: hostile client",
                f"{injected['hostile']['messages']} messages, "
                f"{outcome['reports_rejected']} rejected (by reason in results.json)",
            ))  # fmt: skip
    accuracy = results.get("accuracy", {})
    if accuracy.get("mean_abs_error") is not None:
        rows_.append(("mean abs error of device means", _device_means_cell(accuracy)))
    reconstruction = results.get("reconstruction")
    if reconstruction:
        parts = [f"{reconstruction['streams']} streams in {reconstruction['seconds']:.2f} s"]
        if reconstruction.get("period_accuracy") is not None:
            parts.append(f"period accuracy {100 * reconstruction['period_accuracy']:.0f}%")
        if reconstruction.get("mean_cosine_distance") is not None:
            parts.append(f"mean cosine distance {reconstruction['mean_cosine_distance']:.3f}")
        rows_.append((f"reconstruction ({reconstruction['method']})", ", ".join(parts)))
    secure = results.get("secure_sum")
    if secure:
        outcome = (
            f"aborted: {secure['aborted']}"
            if secure["aborted"]
            else f"{secure['survivors']}/{secure['devices']} survivors, exact={secure.get('exact')}"
        )
        rows_.append((f"secure sum ({secure['graph']}, dim {secure['dim']})",
                      f"{outcome}, {secure['seconds']:.2f} s"))  # fmt: skip
    gcdp = results.get("gcdp")
    if gcdp:
        rows_.append((
            f"central release ({gcdp['method']}, eps_rel {gcdp['eps_rel']:g} per window)",
            f"{gcdp['windows_released']}/{gcdp['windows_expected']} windows, "
            f"eps_cal {gcdp['eps_cal']:g}, MAE {_maybe(gcdp['accuracy']['mae'])} "
            f"({_maybe(gcdp['accuracy']['mae_clipped'])} clipped)",
        ))  # fmt: skip
    for key, value in rows_:
        table.add_row(key, value)
    return table


def trace_incomplete_reason(results: dict) -> str | None:
    """Why the run's trace is incomplete (results.json ``trace_incomplete_reason``), or
    None: complete, or no recorder (``[collector] trace = "none"``: no reason given)."""
    if results.get("trace_complete") is False:
        return results.get("trace_incomplete_reason") or None
    return None


def _trace_incomplete_mark(results: dict) -> str:
    return " (incomplete)" if trace_incomplete_reason(results) else ""


def _maybe(value: float | None) -> str:
    """A figure to 3 digits, or "n/a" (a GC-DP run that released no window has no MAE)."""
    return "n/a" if value is None else f"{value:.3g}"


@app.command("scenarios")
def scenarios_command(
    paths: Annotated[bool, typer.Option("--paths", help="Also show each file's path.")] = False,
) -> None:
    """List the built-in scenarios, one line each: the name `ldpfleet run NAME` takes and
    the scenario's description."""
    from ldpfleet.scenarios.builtin import builtin_scenarios

    found = builtin_scenarios()
    width = max((len(s.name) for s in found), default=0)
    for s in found:
        print(f"{s.name:<{width}}  {s.description}" + (f"  ({s.path})" if paths else ""))


@app.command()
def run(
    scenario: Annotated[
        Path,
        typer.Argument(
            help="Scenario file or built-in name (ldpfleet scenarios lists them), e.g. "
            "scenarios/quickstart.toml or quickstart"
        ),
    ],
    broker: BrokerOption = None,
    out: Annotated[
        Path,
        _out_dir_option("Output directory."),
    ] = Path("runs/latest"),
    seed: SeedOption = None,
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run", help="Run id (default: name + random suffix).", callback=_run_id_option
        ),
    ] = None,
    credentials_path: CredentialsOption = None,
    shard_broker: ShardBrokerOption = None,
) -> None:
    """Run a scenario: broker + collector + recorder + fleet; write results, trace, ledger."""
    from ldpfleet.scenarios.schema import load_scenario
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with _no_folder_left_on_refusal(out), user_errors():
        loaded = load_scenario(scenario)
        credentials = _credentials(credentials_path, run_id, loaded)
        loaded.check_shard_brokers(broker, shard_broker or None)
        if loaded.spec.cadr is not None:
            _run_cadr(loaded, broker, out, seed, run_id, credentials, shard_broker or None)
            return
        if (broker or loaded.spec.broker.url) == "embedded" and loaded.spec.fleet.devices > 1000:
            console.print(
                "[yellow]warning:[/] the embedded amqtt broker slows down beyond ~1,000 devices; "
                "use --broker mqtt://127.0.0.1:1883 (Mosquitto) for large fleets (docs/brokers.md)"
            )
        with Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            TextColumn("{task.completed}/{task.total} reports"),
            TimeElapsedColumn(),
            console=console,
            disable=not console.is_terminal,
        ) as bar:
            expected = loaded.spec.fleet.devices * loaded.stream_config("r").n_batches
            task = bar.add_task(f"stream ({loaded.name})", total=expected)

            def progress(done: int, total: int, joined=None, devices=None) -> None:
                name = f"stream ({loaded.name})"
                if joined is not None and joined < devices:
                    name += f": {joined}/{devices} devices joined"
                bar.update(task, completed=done, total=total, description=name)

            results = _run_any(
                loaded,
                broker=broker,
                out_dir=out,
                seed=seed,
                run_id=run_id,
                progress=progress,
                credentials=credentials,
                shard_brokers=shard_broker or None,
            )
    console.print(_summary_table(results))
    report = _write_report(out)
    files = ("trace.sqlite", "ledger.json")
    if results.get("kind") == "bulk-stream":  # traces and rows per partition, no ledger file
        traced = (results.get("trace") or {}).get("recorder") == "bulk"
        files = (
            (("trace.sqlite", "trace-p*.sqlite") if traced else ())
            + ("p*/reports.bin",)
            + (("reconstructions.npz",) if results.get("reconstruction") else ())
        )
    console.print(
        f"outputs: {out}/results.json, "
        + ", ".join(f"{out}/{f}" for f in files)
        + (f", {report}" if report else "")
    )
    _print_trace_key(results)
    _print_warnings(results)
    if results.get("aborted"):
        _fail(f"{results['aborted']['detail']}.", "aborted")
    secure_aborted = (results.get("secure_sum") or {}).get("aborted")
    if secure_aborted:
        _fail(f"{secure_aborted} (exit code 1).", "secure sum aborted")
    if results.get("device_rejections"):
        _fail(f"{_rejection_sentence(results)} (exit code 1).", "rejected")
    if results["reports_lost"]:
        missing = results["missing_batches"]
        failed = (results.get("fleet") or {}).get("device_errors") or {}
        _fail(
            f"{results['reports_lost']} reports lost from "
            f"{len(missing)} device(s) ({', '.join(sorted(missing)[:5])}"
            f"{', ...' if len(missing) > 5 else ''})"
            + _device_errors_clause(failed)
            + _deadline_clause(results, loaded.spec.collector.stage_timeout)
            + "; results.json missing_batches lists them (exit code 1).",
            "incomplete",
            "bold yellow",
        )


# protocol/stream.py's close reason of a stream stage its deadline closed
STAGE_DEADLINE_REASON = "stage deadline passed"


def _deadline_clause(results: dict, stage_timeout: float) -> str:
    """``; the stage closed at its deadline, [collector] stage_timeout = N s (raise it ...)``
    when ``stage_timeout`` closed the stream stage (a run said only "N reports lost")."""
    stream = (results.get("stages") or {}).get("stream") or {}
    if STAGE_DEADLINE_REASON not in str(stream.get("close_reason") or ""):
        return ""
    return (
        f"; the stage closed at its deadline, [collector] stage_timeout = {stage_timeout:g} s "
        "(raise it if the fleet needs longer)"
    )


# the CadrFailed sentences of a stage that ran out of time (collector/cadr_fleet.py,
# collector/cadr_partition.py); a secure sum's abort names its stage_timeout itself
_CADR_DEADLINE_WORDS = ("relay: no report of phase", "missing after", "sent no releases within")


def _stage_deadline_failed(error: BaseException, stage_timeout: float) -> NoReturn:
    """A CADR-LDP run whose devices did not join, or whose stage did not complete, within
    ``[cadr] stage_timeout``: one line naming the setting (was a traceback), exit 1. Other
    stage failures: their one sentence."""
    from ldpfleet.collector.readiness import DevicesMissing

    sentence = str(error)
    if isinstance(error, DevicesMissing) or any(w in sentence for w in _CADR_DEADLINE_WORDS):
        sentence += (
            f"; each stage waits at most [cadr] stage_timeout = {stage_timeout:g} s "
            "(raise it if the fleet needs longer)"
        )
    _fail(sentence, "error")


@contextlib.contextmanager
def _no_folder_left_on_refusal(out: Path):
    """``ldpfleet run``: a run refused (exit 2: a scenario, graph or option the run cannot
    take) leaves no output folder behind. The folder is made when the run starts, and a
    few refusals come only then (a random graph that drew no edge); the topmost folder of
    ``out`` that did not exist before the command is removed. An existing folder, and the
    outputs of a run that started and failed (exit 1), are kept."""
    created = None
    for folder in (out, *out.parents):
        if folder.exists():
            break
        created = folder
    try:
        yield
    except typer.Exit as stop:
        if stop.exit_code == 2 and created is not None and created.is_dir():
            import shutil

            shutil.rmtree(created, ignore_errors=True)
        raise


def _device_errors_clause(failed: dict[str, str]) -> str:
    """``; N device(s) failed (...)`` for results.json ``fleet.device_errors``: the first
    device's error and the count (a plugin failing on every device repeated the same
    sentence per device); every device's with ``--verbose``."""
    if not failed:
        return ""
    ordered = sorted(failed.items())
    if _state["verbose"] or len(ordered) == 1:
        return f"; {len(failed)} device(s) failed ({'; '.join(f'{d}: {e}' for d, e in ordered)})"
    device, error = ordered[0]
    return (
        f"; {len(failed)} device(s) failed (the first, {device}: {error}; the other "
        f"{len(failed) - 1} with --verbose and in results.json fleet.device_errors)"
    )


def _rejection_sentence(results: dict) -> str:
    """One sentence on the devices the collector finally rejected (results.json
    ``device_rejections``): the first by name, with its message, field, limit and value."""
    rejections = results["device_rejections"]
    device, first = min(rejections.items())
    seq = f" #{first['seq']}" if first["kind"] == "sw_report" else ""
    others = sorted(rejections)[1:]
    more = f"; {len(others)} more: {', '.join(others[:5])}{', ...' if len(others) > 5 else ''}"
    return (
        f"device {device} stopped: the collector rejected its {first['kind']}{seq}, field "
        f"{first['field'] or '?'}: {first['reason']} ({first['code']})"
        + (more if others else "")
        + "; results.json device_rejections lists them"
    )


def _theta_line(results: dict) -> str:
    """The run table's θ row: the θ, the rule configured and the secure sums opened; a θ
    the small-fleet rule chose (``theta_chosen_by``) says so: no search ran."""
    if results.get("theta_chosen_by") == "small-fleet":
        return (
            f"{results['theta']} (small-fleet rule: ⌈√D⌉, no θ search; configured "
            f"{results['theta_rule']})"
        )
    sums = results["theta_rounds"]
    noun = "secure sum" if sums == 1 else "secure sums"
    return f"{results['theta']} ({results['theta_rule']}, {sums} {noun})"


def _kept_row(results: dict) -> tuple[str, str]:
    """The run table's projection row. A negotiated method (ll, lh, ra) keeps edges: the
    kept-edge ratio and the largest kept degree. Method clip negotiates no edge: the same
    results keys hold Σ min(d, θ) / Σ d and the largest clipped degree (docs/cadr.md,
    "Method clip"), so the row says that instead of "kept-edge"."""
    from ldpfleet.protocol.cadr_budget import negotiates

    ratio, largest = results["kept_edge_ratio"], results["max_kept_degree"]
    if negotiates(results["method"]):
        return "kept-edge ratio", f"{ratio:.3f} (max kept degree {largest})"
    return (
        "clipped-degree ratio",
        f"{ratio:.3f} (Σ min(d, θ) / Σ d, largest {largest})",
    )


def _run_cadr(
    loaded,
    broker,
    out: Path,
    seed: int | None,
    run_id: str | None,
    credentials=None,
    shard_brokers: list[str] | None = None,
) -> None:
    """``ldpfleet run`` of a CADR-LDP scenario: a summary table, outputs in ``out``."""
    from ldpfleet.collector.cadr_fleet import stage_listener
    from ldpfleet.collector.readiness import join_listener
    from rich.table import Table

    with console.status(f"CADR-LDP ({loaded.name}): connecting the devices") as status:

        def stage_done(name: str, seconds: float) -> None:
            console.print(f"  [green]✓[/] stage {name}: {seconds:.1f} s", highlight=False)
            status.update(f"CADR-LDP ({loaded.name}): after {name}")

        def devices_joined(joined: int, expected: int) -> None:
            status.update(
                f"CADR-LDP ({loaded.name}): connecting the devices, "
                f"{joined:,} / {expected:,} joined"
            )

        from ldpfleet.collector.cadr_fleet import CadrFailed
        from ldpfleet.collector.readiness import DevicesMissing

        token = stage_listener.set(stage_done)
        joins = join_listener.set(devices_joined)
        try:
            results = _run_any(
                loaded,
                broker=broker,
                out_dir=out,
                seed=seed,
                run_id=run_id,
                credentials=credentials,
                stage_done=stage_done,
                **({"shard_brokers": shard_brokers} if shard_brokers else {}),
            )
        except (DevicesMissing, CadrFailed) as error:
            _stage_deadline_failed(error, loaded.spec.cadr.stage_timeout)
        finally:
            stage_listener.reset(token)
            join_listener.reset(joins)
    table = Table(title=f"{loaded.name} — run {results['run']}", show_header=False)
    rows_ = [
        ("broker", results["broker"]),
        ("devices / edges", f"{results['devices']:,} / {results['edges']:,}"),
        ("method, eps, alpha", f"{results['method']}, {results['eps']:g}, {results['alpha']:g}"),
        ("theta", _theta_line(results)),
        ("degree-sequence MAE / MSE", f"{results['mae']:.2f} / {results['mse']:.1f}"),
        ("degree distribution L1", f"{results['distribution_l1']:.3f}"),
        _kept_row(results),
        ("Thm 3.5 bound (mean)", f"{results['bound_mean']:.1f} (holds for "
                                 f"{results['bound_holds']:.1%} of devices)"),
        ("ledger per device", f"{results['ledger_min']:g} .. {results['ledger_max']:g}"),
        ("LPEA", f"at most {results['lpea_round_cap']} rounds (the relay keeps its counts)"
                 if results["lpea_round_cap"] is not None
                 else "none (method clip: no relay phase)"),
        ("device messages up / down", f"{results['device_messages_up']:,} / "
                                      f"{results['device_messages_down']:,}"),
        ("stages (s)", ", ".join(f"{k} {v:.1f}" for k, v in results["stage_seconds"].items())),
        ("wall time", f"{results['seconds']:.1f} s"),
    ]  # fmt: skip
    for key, value in rows_:
        table.add_row(key, value)
    console.print(table)
    _print_cadr_verdict(results)
    report = _write_report(out)
    console.print(
        f"outputs: {out}/results.json, {out}/ledger.json, {out}/collector.sqlite, "
        f"{out}/trace.sqlite{', ' + str(report) if report else ''}"
    )
    _print_trace_key(results)


def _print_cadr_verdict(results: dict) -> None:
    """The released sequence against knowing nothing (the constant true median, all
    zeros), one sentence under the summary: the table's MAE alone did not say that a
    karate-club run (n = 34, ε = 3) released MAE 10.03 where all zeros score 4.59."""
    from ldpfleet.app.cadr_report import released_verdict

    sentence = released_verdict(results)
    if sentence:
        console.print(sentence, highlight=False, markup=False)


def _run_any(loaded, *, progress=None, stage_done=None, **options) -> dict:
    """``ldpfleet run``'s engine: on a real broker the collector runs as its own process
    and the fleet as shards (``scenarios.split_run``); on the in-memory broker, or with an
    in-process attacker (``[faults] hostile_messages``), everything runs in this process
    (``scenarios.runner``). A collector process that wrote nothing (or a bulk run's
    collector that died, ``BulkRunFailed``): one sentence, exit 1."""
    from ldpfleet.scenarios import split_run
    from ldpfleet.scenarios.loop import run as run_loop

    if not split_run.runs_split(loaded, options.get("broker")):
        from ldpfleet.scenarios.runner import run_scenario

        if not loaded.bulk:
            return run_loop(run_scenario(loaded, progress=progress, **options))
        from ldpfleet.scenarios.bulk_run import BulkRunFailed

        try:  # a bulk collector that died: one sentence naming it, exit 1
            return run_loop(run_scenario(loaded, progress=progress, **options))
        except BulkRunFailed as error:
            _fail(error.sentence, "error")
    try:
        return run_loop(
            split_run.run_split(loaded, progress=progress, stage_done=stage_done, **options)
        )
    except split_run.SplitRunFailed as error:
        _fail(error.sentence, "error")


def _print_trace_key(results: dict) -> None:
    """The trace's public key: keep it apart from the outputs, ``trace verify`` checks the
    trace's signature against it (docs/reliability.md)."""
    key = (results.get("trace") or {}).get("public_key")
    if key:
        print(f"trace public key: {key}")


def _write_report(out: Path) -> Path | None:
    """OUT/report.html after a run (a failure to draw never fails the run: it says why)."""
    from ldpfleet.app.progress import job_progress
    from ldpfleet.app.report import SECTIONS, write_report

    try:
        with job_progress("writing report.html", len(SECTIONS), unit="sections") as step:
            return write_report(out, progress=lambda _section: step())
    except Exception as error:  # the run's outputs are written; the page is extra
        console.print(f"[yellow]warning:[/] report.html not written: {error}")
        return None
    except KeyboardInterrupt:  # was typer's silent exit 130, the page missing unsaid
        _say_interrupted(
            f"interrupted while writing report.html; the run's outputs are complete in {out} "
            f"(`ldpfleet report {out}` writes the page)"
        )
        raise typer.Exit(130) from None


@app.command("watch")
def watch_command(
    broker: Annotated[str, typer.Option("--broker", "-b", help="mqtt://host:port to watch.")],
    run_id: Annotated[
        str | None,
        typer.Option("--run", help="Only this run (default: every run).", callback=_run_id_option),
    ] = None,
    seconds: Annotated[
        float | None,
        typer.Option(
            help="Stop after this many seconds (> 0; default: Ctrl-C).", callback=_watch_seconds
        ),
    ] = None,
    until_closed: Annotated[
        bool, typer.Option("--until-closed", help="Stop when the watched run closes.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    credentials_path: CredentialsOption = None,
) -> None:
    """A live summary of the fleets on a broker: per run, stage, devices heard from,
    reports, acks, rejections, message rate (read-only; with --credentials it logs in as
    the run's recorder)."""
    import asyncio

    from ldpfleet.app.watch import FleetWatch, watch
    from ldpfleet.broker.mqtt import BrokerUrlError
    from ldpfleet.broker.select import open_broker
    from ldpfleet.scenarios.loop import run as run_loop
    from rich.live import Live

    with user_errors():
        if broker in ("memory", "embedded"):
            raise BrokerUrlError(
                f"watch reads a broker other processes use: give its mqtt://host:port, not "
                f"{broker!r} (a new, empty broker inside the watch itself)"
            )
        credentials = _credentials(credentials_path, run_id)
        run_id = run_id or (credentials.run if credentials else None)
        if until_closed and run_id is None:  # it stopped when any run on the broker closed
            raise BrokerUrlError(
                "--until-closed needs --run (or --credentials): which run's close to stop at"
            )
        board = FleetWatch()

        async def go() -> None:
            async with open_broker(broker, credentials=credentials) as (transport, _):
                task = asyncio.ensure_future(
                    watch(transport, board, run=run_id, seconds=seconds, until_closed=until_closed)
                )
                if as_json or not console.is_terminal:
                    await task
                    return
                with Live(board.render(), console=console, refresh_per_second=4) as live:
                    while not task.done():
                        await asyncio.wait({task}, timeout=0.5)
                        live.update(board.render())
                await task

        run_loop(go())
    if as_json:
        print(json.dumps(board.summary()))
    else:
        console.print(board.render())


@app.command("scenario-reference")
def scenario_reference_command() -> None:
    """Print the scenario file reference generated from the schema (Markdown; the
    committed copy is docs/scenario-reference.md)."""
    from ldpfleet.app.reference import reference_markdown

    print(reference_markdown(), end="")


@app.command("report")
def report_command(
    out: Annotated[
        Path, typer.Argument(help="A run's output directory (or a collector side's --out).")
    ],
    fleet_dirs: Annotated[
        list[Path] | None,
        typer.Argument(
            help="The fleet shards' --out directories of a run made of separate processes: "
            "merged with OUT into OUT/merged first (as `ldpfleet merge`)."
        ),
    ] = None,
) -> None:
    """Write OUT/report.html for an existing run: scenario, timing, messages, ledger,
    and a section per capability (plots inline; the page fetches nothing)."""
    from ldpfleet.app.report import write_report
    from ldpfleet.broker.trace import TraceError

    with user_errors():
        if out.is_file():
            raise TraceError(f"{out} is a file; give the run's output directory ({out.parent})")
        if not (out / "results.json").exists():
            raise TraceError(f"no results.json in {out} (run `ldpfleet run ... --out {out}`)")
        if fleet_dirs:
            from ldpfleet.scenarios.merge import merge_run

            out = merge_run(out, fleet_dirs, out / "merged")
        from ldpfleet.app.progress import job_progress
        from ldpfleet.app.report import SECTIONS

        with job_progress("writing report.html", len(SECTIONS), unit="sections") as step:
            path = write_report(out, progress=lambda _section: step())
        from ldpfleet.app.report import collector_side_note

        note = collector_side_note(out)
    console.print(f"wrote {path}")
    if note:  # a collector side alone: its devices' ledgers are the fleet shards'
        console.print(f"note: {note}", highlight=False, soft_wrap=True)


@app.command("merge")
def merge_command(
    collector_dir: Annotated[Path, typer.Argument(help="The collector side's --out directory.")],
    fleet_dirs: Annotated[list[Path], typer.Argument(help="Every fleet shard's --out directory.")],
    out: Annotated[
        Path | None,
        _out_dir_option("Where to write the merged run (default: DIR/merged)."),
    ] = None,
) -> None:
    """Merge the pieces of a run made of separate processes (``ldpfleet collector`` +
    ``ldpfleet fleet`` shards) into one run directory: the results.json and ledger.json
    ``ldpfleet run`` would have written, the trace and the store, and report.html."""
    from ldpfleet.scenarios.merge import merge_run

    with user_errors():
        target = merge_run(collector_dir, fleet_dirs, out or collector_dir / "merged")
        report = _write_report(target)
    console.print(f"merged run in {target}" + (f"; report {report}" if report else ""))
    merged = target / "results.json"
    if merged.is_file():
        _print_warnings(json.loads(merged.read_text()))


TlsFileOption = Annotated[Path | None, typer.Option(help="PEM file (see ldpfleet certs).")]


@app.command("broker")
def broker_command(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port (not 1883; 0 picks a free one).")
    ] = 1884,
    credentials_path: CredentialsOption = None,
    tls_cert: Annotated[
        Path | None, typer.Option(help="Listen with TLS (mqtts://): the server certificate.")
    ] = None,
    tls_key: Annotated[Path | None, typer.Option(help="The server certificate's key.")] = None,
    tls_ca: Annotated[
        Path | None,
        typer.Option(help="Require client certificates signed by this CA (PEM)."),
    ] = None,
) -> None:
    """Run the embedded amqtt broker standalone until Ctrl-C (with --credentials: only
    that run's identities, under its ACL; with --tls-cert/--tls-key: a TLS listener,
    docs/brokers.md "TLS")."""
    import asyncio

    from ldpfleet.broker.embedded import EmbeddedBroker
    from ldpfleet.broker.tls import TlsError, TlsServerSettings
    from ldpfleet.scenarios.loop import run as run_loop

    async def serve() -> None:
        credentials = _credentials(credentials_path)
        tls = None
        if tls_cert or tls_key or tls_ca:
            if not (tls_cert and tls_key):
                raise TlsError("TLS: --tls-cert and --tls-key are needed together")
            tls = TlsServerSettings(str(tls_cert), str(tls_key), str(tls_ca) if tls_ca else None)
        async with EmbeddedBroker(host, port, credentials=credentials, tls=tls) as embedded:
            hint = " (clients add ?ca=PATH: the CA that signed --tls-cert)" if tls else ""
            console.print(
                f"embedded broker listening on {embedded.url}{hint} (Ctrl-C to stop)",
                highlight=False,
            )
            print(embedded.url, flush=True)
            await asyncio.Event().wait()

    with user_errors():
        _check_listener_options(host, None, None)
        run_loop(serve())


ScenarioArgument = Annotated[
    Path,
    typer.Argument(help="Scenario file or built-in name (ldpfleet scenarios lists them)."),
]


@app.command()
def fleet(
    scenario: ScenarioArgument,
    broker: Annotated[str, typer.Option("--broker", "-b", help="mqtt://host:port of the broker.")],
    run_id: Annotated[
        str,
        typer.Option("--run", help="Run id shared with the collector.", callback=_run_id_option),
    ],
    shard: Annotated[
        str, typer.Option(help="Run slice i of k (devices whose index % k == i).")
    ] = "0/1",
    seed: SeedOption = None,
    out: Annotated[
        Path | None,
        _out_dir_option(
            "Where to write this shard's ledger and outcomes (default: runs/RUN/fleet-i-of-k)."
        ),
    ] = None,
    credentials_path: CredentialsOption = None,
    wait_timeout: Annotated[
        float,
        typer.Option(
            help="Seconds to wait for the collector to announce the run.",
            callback=lambda value: _positive_seconds(value, "--wait-timeout"),
        ),
    ] = 60.0,
) -> None:
    """Run the devices of a scenario (or one shard of them) once its collector (`ldpfleet
    collector`, started before or after) announces the run (docs/separate-processes.md)."""
    from ldpfleet.devices.fleet import parse_shard
    from ldpfleet.scenarios.schema import ScenarioError, load_scenario

    with user_errors():
        try:
            shard_index, shard_count = parse_shard(shard)
        except ValueError as error:
            raise ScenarioError(str(error)) from None
        _refuse_in_process_broker(broker, "fleet", "collector")
        loaded = load_scenario(scenario)
        credentials = _credentials(credentials_path, run_id, loaded)
        target = out or Path("runs") / run_id / f"fleet-{shard_index}-of-{shard_count}"

        def waiting() -> None:
            console.print(f"shard {shard}: waiting for the collector of run {run_id}")

        extra = {} if loaded.spec.cadr is not None else {"on_waiting": waiting}
        result = _run_side(
            "fleet_side",
            loaded,
            broker,
            run_id,
            (shard_index, shard_count),
            target,
            seed=seed,
            credentials=credentials,
            wait_timeout=wait_timeout,
            **extra,
        )
    _fleet_summary(shard, target, result)


def _refuse_in_process_broker(broker: str, side: str, other: str) -> None:
    """``ldpfleet fleet/collector -b memory`` or ``-b embedded``: the in-process broker
    lives inside this one process (embedded: on a free port it does not print), so the
    other side could never join (the side waited out its timeout)."""
    from ldpfleet.broker.mqtt import BrokerUrlError

    if broker == "memory":
        raise BrokerUrlError(
            f"'memory' is a broker inside this process: no other process can reach it, so "
            f"the {other} would never join this {side}; give the mqtt://host:port both use "
            "(or `ldpfleet run` for one process)"
        )
    if broker == "embedded":
        raise BrokerUrlError(
            f"'embedded' would start a new broker inside this {side} on a free port no "
            f"{other} can find: start one with `ldpfleet broker` and pass the mqtt://host:port "
            f"it prints to both sides (docs/separate-processes.md; or `ldpfleet run` for one "
            "process)"
        )


def _run_side(name, *args, **kwargs) -> dict:
    """Run ``scenarios.sides.<name>`` (or the coroutine function ``name``) in an event loop;
    SIGTERM cancels it (what it did so far is written); a missing or different other side
    is one sentence and exit 1."""
    import asyncio
    import signal

    from ldpfleet.devices.rendezvous import RendezvousError
    from ldpfleet.scenarios import sides
    from ldpfleet.scenarios.loop import run as run_loop

    side = getattr(sides, name) if isinstance(name, str) else name

    async def go() -> dict:
        task = asyncio.current_task()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        return await side(*args, **kwargs)

    stops: tuple[type[BaseException], ...] = (RendezvousError,)
    try:
        return run_loop(go())
    except Exception as error:
        cadr = sys.modules.get("ldpfleet.scenarios.cadr_sides")
        if cadr is not None:  # CADR-LDP sides stop with one sentence too
            stops += (cadr.CadrSideStopped,)
        if not isinstance(error, stops):
            raise
        _fail(error.sentence, "error")
    except asyncio.CancelledError:
        console.print("stopped")
        raise typer.Exit(1) from None


def _fleet_summary(shard: str, target: Path, result: dict) -> None:
    """One line per shard (stream and secure-sum kinds; CADR-LDP: its own result)."""
    outcomes = result.get("outcomes")
    if outcomes is None:  # CADR-LDP: its outcomes.json document
        status = result.get("status", "done")
        devices = len(result.get("devices", {}))
        console.print(f"shard {shard}: {devices} devices, {status}; outputs in {target}")
        if status != "done":
            raise typer.Exit(1)
        return
    done = sum(o.state == "done" for o in outcomes)
    if result.get("resumed"):
        console.print(
            f"shard {shard}: resumed {len(result['resumed'])} devices from {result['state_file']}",
            highlight=False,
        )
    console.print(
        f"shard {shard}: {done}/{len(outcomes)} devices delivered everything; ledger in {target}"
    )
    stopped = (result.get("secure_sum") or {}).get("stopped")
    if stopped:
        console.print(f"[bold red]{stopped}[/]", highlight=False, soft_wrap=True)
    if done != len(outcomes) or stopped:
        raise typer.Exit(1)


@app.command()
def collector(
    scenario: ScenarioArgument,
    broker: Annotated[str, typer.Option("--broker", "-b", help="mqtt://host:port of the broker.")],
    run_id: Annotated[
        str, typer.Option("--run", help="Run id shared with the fleet.", callback=_run_id_option)
    ],
    out: Annotated[
        Path | None,
        _out_dir_option("Output directory (default: runs/RUN)."),
    ] = None,
    credentials_path: CredentialsOption = None,
    seed: SeedOption = None,
    fleet_timeout: Annotated[
        float,
        typer.Option(
            help="Seconds to wait for the fleet's devices to join the run.",
            callback=lambda value: _positive_seconds(value, "--fleet-timeout"),
        ),
    ] = 60.0,
    coordinator: Annotated[
        bool,
        typer.Option("--coordinator", help="\\[collector] partitions > 1: run the coordinator."),
    ] = False,
    partition: Annotated[
        str | None,
        typer.Option(help="\\[collector] partitions > 1: run worker p/P (e.g. 0/2)."),
    ] = None,
) -> None:
    """Run the collector (and trace recorder) of a scenario against a broker; announce the
    run so that fleets started before or after it join (docs/separate-processes.md). With
    ``\\[collector] partitions = P > 1`` the collector side is one ``--coordinator`` and one
    ``--partition p/P`` per partition, on any hosts."""
    from ldpfleet.scenarios.schema import load_scenario

    with user_errors():
        _refuse_in_process_broker(broker, "collector", "fleet")
        loaded = load_scenario(scenario)
        credentials = _credentials(credentials_path, run_id, loaded)
        target = out or Path("runs") / run_id
        if _partitioned_side(loaded, coordinator, partition):
            results = _run_partitioned_side(
                loaded, broker, run_id, target, seed, credentials, fleet_timeout,
                coordinator=coordinator, partition=partition,
            )  # fmt: skip
            _collector_summary(results, target)
            return

        def listening(url: str) -> None:
            console.print(f"collector for run {run_id} listening on {url}")

        extra = {} if loaded.spec.cadr is not None else {"on_listening": listening}
        results = _run_side(
            "collector_side",
            loaded,
            broker,
            run_id,
            target,
            seed=seed,
            credentials=credentials,
            fleet_timeout=fleet_timeout,
            **extra,
        )
    _collector_summary(results, target)


def _partitioned_side(loaded, coordinator: bool, partition: str | None) -> bool:
    """Whether ``ldpfleet collector`` runs a coordinator or a worker; refuse flags that do
    not fit the scenario's ``[collector] partitions``."""
    from ldpfleet.protocol.errors import ParameterError

    count = loaded.spec.collector.partitions
    if coordinator and partition is not None:
        raise ParameterError(
            "give --coordinator or --partition p/P, not both",
            field="partition",
            limit="--coordinator or --partition p/P, not both",
            value=partition,
        )
    if count == 1 and (coordinator or partition is not None):
        raise ParameterError(
            "needs [collector] partitions > 1 in the scenario, which has 1",
            field="partition",
            limit="[collector] partitions > 1 in the scenario",
            value=count,
        )
    if count > 1 and not coordinator and partition is None:
        raise ParameterError(
            f"the scenario has [collector] partitions = {count}: run one --coordinator and "
            f"--partition p/{count} for each p in 0..{count - 1} (docs/separate-processes.md)",
            field="partition",
            limit=f"one --coordinator and --partition p/{count} for each p in 0..{count - 1}",
            value=partition,
        )
    return count > 1


def _run_partitioned_side(
    loaded, broker, run_id, target, seed, credentials, fleet_timeout, *, coordinator, partition
) -> dict:
    from ldpfleet.devices.fleet import parse_shard
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.scenarios.coordinator import coordinator_side, partition_side

    if coordinator:
        console.print(f"coordinator for run {run_id} ({loaded.spec.collector.partitions} workers)")
        return _run_side(
            coordinator_side, loaded, broker, run_id, target, seed=seed,
            credentials=credentials, fleet_timeout=fleet_timeout, workers_timeout=fleet_timeout,
        )  # fmt: skip
    try:
        which = parse_shard(partition)
    except ValueError as error:
        message = f"must be p/P, got {partition!r} ({error})"
        raise ParameterError(message, field="partition", limit="p/P", value=partition) from None
    console.print(f"partition worker {partition} for run {run_id}")
    # partition_side refuses a P other than the scenario's before it connects
    return _run_side(
        partition_side, loaded, broker, run_id, which, target, seed=seed,
        credentials=credentials,
    )  # fmt: skip


def _print_warnings(results: dict) -> None:
    """results.json ``warnings``, one ``warning:`` line each (e.g. scenarios.clipping's, a
    plugin's estimate_mean failing on the collector)."""
    from rich.markup import escape

    sentences = list(results.get("warnings") or [])
    reason = trace_incomplete_reason(results)
    if reason:
        sentences.append(
            f"the trace is incomplete: {reason}; `ldpfleet trace verify` cannot vouch for "
            "what the recorder did not see (results.json trace_complete)"
        )
    for sentence in sentences:
        console.print(f"[yellow]warning:[/] {escape(sentence)}", highlight=False, soft_wrap=True)


def _collector_summary(results: dict, target: Path) -> None:
    """One line; exit 1 when the run was aborted, lost reports or its secure sum failed."""
    aborted = results.get("aborted")
    if "reports_lost" in results:
        console.print(
            f"collector: {results['devices_complete']}/{results['devices']} devices complete, "
            f"{results['reports_lost']} reports lost, {results['reports_rejected']} rejected; "
            f"outputs in {target}"
        )
    else:
        console.print(f"collector: outputs in {target}")
    _print_trace_key(results)
    _print_warnings(results)
    secure = results.get("secure_sum") or {}
    if aborted:
        console.print(f"[bold red]aborted:[/] {aborted['detail']}", highlight=False, soft_wrap=True)
    elif secure.get("aborted"):
        console.print(
            f"[bold red]secure sum aborted:[/] {secure['aborted']}", highlight=False, soft_wrap=True
        )
    if results.get("device_rejections"):
        from rich.markup import escape

        console.print(
            f"[bold red]rejected:[/] {escape(_rejection_sentence(results))}",
            highlight=False,
            soft_wrap=True,
        )
    if (
        aborted
        or secure.get("aborted")
        or results.get("reports_lost")
        or results.get("device_rejections")
    ):
        raise typer.Exit(1)


# a Unix account name ('user' line of mosquitto.conf)
_ACCOUNT = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?")


def _check_listener_options(host: str, tls_host: str | None, run_as: str | None) -> None:
    """``mosquitto-config --host/--tls-host/--run-as``: an empty value or one with spaces
    was written into mosquitto.conf (which Mosquitto then refuses) and into the printed
    broker URL (``mqtt://a b:1884``): now one sentence (``AuthError``)."""
    from ldpfleet.app.certs import broker_host
    from ldpfleet.broker.auth import AuthError
    from ldpfleet.protocol.errors import ParameterError

    for name, value in (("--host", host), ("--tls-host", tls_host)):
        if value is None:
            continue
        try:
            broker_host(value)
            ok = not value.startswith("*")
        except ParameterError:
            ok = False
        if not ok:
            raise AuthError(f"{name} must be an IP address or a host name, got {value!r}")
    if run_as is not None and not _ACCOUNT.fullmatch(run_as):
        raise AuthError(
            f"--run-as must be a Unix account name (a letter or _, then letters, digits, "
            f"_ . -; at most 32), got {run_as!r}"
        )


@app.command("mosquitto-config")
def mosquitto_config(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (its devices get accounts).")],
    out: Annotated[
        Path,
        _out_dir_option("Directory to write into."),
    ],
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port Mosquitto listens on.")] = 1884,
    host: Annotated[str, typer.Option(help="Address Mosquitto listens on.")] = "127.0.0.1",
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run", help="Run id (default: name + random suffix).", callback=_run_id_option
        ),
    ] = None,
    run_as: Annotated[
        str | None,
        typer.Option(
            "--run-as", help="Account Mosquitto drops to when started by root ('user' line)."
        ),
    ] = None,
    tls_port: Annotated[
        int | None,
        typer.Option(
            min=1, max=65535, help="Add a TLS listener on this port (needs --tls-cert ...)."
        ),
    ] = None,
    tls_host: Annotated[
        str | None, typer.Option(help="Address of the TLS listener (default: --host).")
    ] = None,
    tls_cert: TlsFileOption = None,
    tls_key: TlsFileOption = None,
    tls_ca: TlsFileOption = None,
    require_certificate: Annotated[
        bool, typer.Option(help="TLS clients must present a certificate signed by --tls-ca.")
    ] = False,
    tls_only: Annotated[bool, typer.Option(help="No plain listener: only the TLS one.")] = False,
    bulk_gateways: Annotated[
        int,
        typer.Option(
            min=0,
            help="Accounts gateway-g0 .. g{N-1} for bulk gateways (docs/scaling.md "
            '"Bulk gateways"): each may publish only on its own gw/g{g}/up topics.',
        ),
    ] = 0,
) -> None:
    """Write a Mosquitto password file, ACL and config for one run, with per-device
    credentials (no anonymous access), and print how to start it (docs/reliability.md);
    with --tls-port a TLS listener too (docs/brokers.md "TLS"); with --bulk-gateways N
    the bulk gateways' own accounts and ACL blocks."""
    from ldpfleet.broker.auth import AuthError, Credentials, write_mosquitto_files
    from ldpfleet.broker.tls import TlsError, TlsListener
    from ldpfleet.scenarios.runner import new_run_id
    from ldpfleet.scenarios.schema import load_scenario

    with user_errors():
        _check_listener_options(host, tls_host, run_as)
        loaded = load_scenario(scenario)
        run = run_id or new_run_id(loaded)
        if loaded.spec.cadr is not None:
            from ldpfleet.scenarios.cadr_run import device_names, load_scenario_graph

            devices = device_names(load_scenario_graph(loaded)[0])
        else:
            devices = loaded.device_ids()
        try:
            credentials = Credentials.generate(
                run, devices, partitions=loaded.spec.collector.partitions, gateways=bulk_gateways
            )
        except ValueError as error:
            raise AuthError(str(error)) from None
        tls = None
        if tls_port is not None:
            if not (tls_cert and tls_key and tls_ca):
                raise TlsError("TLS: --tls-port needs --tls-cert, --tls-key and --tls-ca")
            if tls_port == port and (tls_host or host) == host and not tls_only:
                raise TlsError(
                    f"TLS: --tls-port {tls_port} is the plain listener's --port on the same "
                    "host: Mosquitto cannot open both on the same port (pick another, or "
                    "--tls-only)"
                )
            tls = TlsListener(
                tls_port, str(tls_cert), str(tls_key), str(tls_ca), tls_host or host,
                require_certificate,
            )  # fmt: skip
        else:
            given = [name for name, value in (
                ("--tls-only", tls_only), ("--require-certificate", require_certificate),
                ("--tls-host", tls_host), ("--tls-cert", tls_cert), ("--tls-key", tls_key),
                ("--tls-ca", tls_ca),
            ) if value]  # fmt: skip
            if given:  # were ignored: a config without the TLS listener asked for
                raise TlsError(f"TLS: {', '.join(given)} need --tls-port (the TLS listener)")
        paths = write_mosquitto_files(
            out, credentials, port=port, host=host, user=run_as, tls=tls, plain=not tls_only
        )
    console.print(
        f"run {run}: {len(devices)} device accounts + collector, recorder, relay, gateway, "
        f"admin" + (f", {bulk_gateways} bulk gateway accounts" if bulk_gateways else "") + "\n"
        f"  {paths['passwords']} (0600), {paths['acl']}, {paths['conf']}, "
        f"{paths['credentials']} (0600: what ldpfleet logs in with), "
        f"{paths['plugin']} (client-id binding plugin)"
    )
    if run_as is None and hasattr(os, "geteuid") and os.geteuid() == 0:
        console.print(
            "[yellow]warning:[/] started by root, Mosquitto drops to the 'mosquitto' account, "
            f'which cannot read the 0600 {paths["passwords"]} ("Unable to open pwfile"): '
            "write the files again with --run-as root, or start it as the files' owner",
            highlight=False,
            soft_wrap=True,
        )
    print(f"mosquitto -c {paths['conf'].resolve()}")
    url = f"mqtt://{host}:{port}"
    if tls is not None:  # the client's own certificate: CLIENT_CERT / CLIENT_KEY
        client = "&cert=CLIENT_CERT&key=CLIENT_KEY" if require_certificate else ""
        url = f"mqtts://{tls.host}:{tls.port}?ca={Path(tls_ca).resolve()}{client}"
    print(f"ldpfleet run {scenario} --broker '{url}' --credentials {paths['credentials']}")


@app.command("certs")
def certs_command(
    out: Annotated[
        Path,
        _out_dir_option("Directory to write into."),
    ],
    host: Annotated[
        list[str] | None,
        typer.Option(
            "--host",
            help="A name or IP address the broker is reached at (repeat; default "
            "127.0.0.1 and localhost).",
        ),
    ] = None,
    days: Annotated[int, typer.Option(help="Validity in days (1 .. 36,500).")] = 365,
) -> None:
    """Write a test deployment's TLS certificates (a CA, a broker certificate for every
    --host, a client certificate; keys 0600) and print how to use them (docs/brokers.md
    "TLS"). For tests and private deployments: a production broker's comes from its
    operator's CA."""
    from ldpfleet.app.certs import DEFAULT_HOSTS, write_test_certificates
    from ldpfleet.broker.tls import TlsError

    with user_errors():
        try:
            paths = write_test_certificates(out, host or DEFAULT_HOSTS, days)
        except ValueError as error:
            raise TlsError(str(error)) from None
    names = ", ".join(host or DEFAULT_HOSTS)
    console.print(
        f"CA {paths['ca']}, broker certificate {paths['server']} (for {names}), client "
        f"certificate {paths['client']}; keys 0600, valid {days} days",
        highlight=False,
    )
    server, key = paths["server"], paths["server_key"]
    print(f"ldpfleet broker --port 8884 --tls-cert {server} --tls-key {key}")
    print(f"--broker 'mqtts://{(host or DEFAULT_HOSTS)[0]}:8884?ca={paths['ca']}'")


# ---- trace --------------------------------------------------------------------------------

TracePath = Annotated[Path, typer.Argument(help="A trace.sqlite file or a run's output directory.")]
DeviceOpt = Annotated[str | None, typer.Option(help="Only messages from or to this device.")]
KindOpt = Annotated[
    str | None, typer.Option(help="Only this kind (sw_report, ack, hello, reject, stage, invalid).")
]
TopicOpt = Annotated[str | None, typer.Option(help="Only topics matching this MQTT filter (+, #).")]
SinceOpt = Annotated[float | None, typer.Option(help="Seconds after the first message.")]
UntilOpt = Annotated[float | None, typer.Option(help="Seconds after the first message.")]


PROTOCOL_MODULES = (
    "messages", "cadr_messages", "rendezvous", "readiness", "secagg.messages", "lpea",
    "peer_relay", "partition", "bulk",
)  # fmt: skip


def protocol_kinds() -> set[str]:
    """Every message kind (payload ``type`` tag) the protocol defines, and ``invalid``."""
    import importlib

    import msgspec

    kinds = {"invalid"}
    for name in PROTOCOL_MODULES:
        module = importlib.import_module(f"ldpfleet.protocol.{name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, msgspec.Struct):
                tag = value.__struct_config__.tag
                if isinstance(tag, str) and tag[:1].islower():
                    kinds.add(tag)
    return kinds


def check_kind(db, kind: str | None, path: Path) -> None:
    """Refuse a ``--kind`` that is neither recorded in the trace nor a kind of the protocol
    (a typo would otherwise select nothing and look like an empty result)."""
    import difflib

    from ldpfleet.broker.trace import TraceError

    if not kind:
        return
    recorded = {row[0] for row in db.execute("SELECT DISTINCT kind FROM messages")}
    if kind in recorded or kind in protocol_kinds():
        return
    close = difflib.get_close_matches(kind, sorted(recorded | protocol_kinds()), n=1)
    raise TraceError(
        f"--kind {kind!r} is not a message kind"
        + (f" (did you mean {close[0]!r}?)" if close else "")
        + f"; recorded in {path}: {', '.join(sorted(recorded)) or 'nothing'}"
    )


def check_bulk_device(db, device: str | None, path: Path) -> None:
    """Refuse a device a bulk-gateway trace cannot name: its rows are gateway messages
    (sender or recipient ``g{g}``), each carrying many devices' batches."""
    from ldpfleet.broker.trace import TraceError

    if not device:
        return
    known = db.execute(
        "SELECT 1 FROM messages WHERE sender = ? OR recipient = ? LIMIT 1", (device, device)
    ).fetchone()
    bulk = db.execute("SELECT 1 FROM messages WHERE family = 'gw' LIMIT 1").fetchone()
    if known is None and bulk is not None:
        raise TraceError(
            f"{path} is a bulk-gateway trace: one row per gateway message, not per device, "
            f"so name a gateway (g0, g1, ...), not {device!r}"
        )


def check_device(db, device: str | None, path: Path) -> None:
    """``--device`` names a party of the trace (``check_bulk_device`` first); a device that
    sent and received nothing is refused, as by ``trace follow``, instead of an empty
    answer that reads like a silent device."""
    from ldpfleet.broker.trace import TraceError

    check_bulk_device(db, device, path)
    if not device:
        return
    known = db.execute(
        "SELECT 1 FROM messages WHERE sender = ? OR recipient = ? LIMIT 1", (device, device)
    ).fetchone()
    if known is None:
        raise TraceError(f"device {device!r} sent and received nothing in {path}")


def open_filtered_trace(path: Path, kind: str | None, device: str | None):
    """The trace at ``path`` opened read-only, once ``--kind`` and ``--device`` are known to
    select something in it (``check_kind``, ``check_device``)."""
    from ldpfleet.broker.trace import open_readonly

    db = open_readonly(path)
    check_kind(db, kind, path)
    check_device(db, device, path)
    return db


def trace_filter(device, kind, topic, since, until):
    """The ``TraceFilter`` of ``trace stats/show/export``, its options checked: an empty
    ``--device``/``--kind``/``--topic`` was taken for "no constraint", a NaN, infinite or
    negative ``--since``/``--until`` and a malformed MQTT filter (``ldp/#/up``) selected
    nothing, both silently (``TraceError``, one sentence)."""
    from ldpfleet.broker.auth import valid_filter
    from ldpfleet.broker.trace import TraceError, TraceFilter

    for name, value in (("--device", device), ("--kind", kind)):
        if value is not None and not value:
            raise TraceError(f"{name} must not be empty (leave the option out for every one)")
    if topic is not None and not valid_filter(topic):
        raise TraceError(
            f"--topic must be an MQTT filter ('+' a whole level, '#' only the whole last "
            f"level, e.g. ldp/+/dev/d0001/#), got {topic!r}"
        )
    for name, value in (("--since", since), ("--until", until)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            raise TraceError(
                f"{name} must be a number of seconds >= 0 after the first message, got {value}"
            )
    if since is not None and until is not None and since > until:
        raise TraceError(f"--since {since:g} is after --until {until:g}: nothing lies between")
    return TraceFilter(device, kind, topic, since, until)


@trace_app.command("stats")
def trace_stats(
    path: TracePath,
    device: DeviceOpt = None,
    kind: KindOpt = None,
    topic: TopicOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Counts, bytes and rates per kind and topic family."""
    from ldpfleet.broker.trace import stats
    from rich.table import Table

    with user_errors():
        selection = trace_filter(device, kind, topic, since, until)
        db = open_filtered_trace(path, kind, device)
        result = stats(db, selection)
    if as_json:
        print(json.dumps(result, indent=2))
        return
    table = Table(
        title=f"{result['messages']} messages, {result['bytes']} bytes, {result['seconds']:.2f} s"
    )
    for column in ("kind", "messages", "bytes", "per second"):
        table.add_column(column, justify="right" if column != "kind" else "left")
    for name, entry in result["by_kind"].items():
        rate = entry["per_second"]
        table.add_row(
            name, str(entry["messages"]), str(entry["bytes"]), f"{rate:.1f}" if rate else "-"
        )
    Console().print(table)


@trace_app.command("show")
def trace_show(
    path: TracePath,
    device: DeviceOpt = None,
    kind: KindOpt = None,
    topic: TopicOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
    limit: Annotated[int, typer.Option(min=0, help="At most this many messages (0: all).")] = 200,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per line.")] = False,
) -> None:
    """One line per message, decoded; rejections show their reason."""
    from ldpfleet.broker.trace import as_record, format_line, rows

    with user_errors():
        selection = trace_filter(device, kind, topic, since, until)
        db = open_filtered_trace(path, kind, device)
        for index, row in enumerate(rows(db, selection)):
            if limit and index >= limit:
                console.print("... (more; use --limit 0 for all)")
                break
            print(json.dumps(as_record(row)) if as_json else format_line(row))


@trace_app.command("follow")
def trace_follow(
    path: TracePath,
    device: Annotated[str, typer.Argument(help="The device whose conversation to show.")],
    limit: Annotated[int, typer.Option(min=0, help="At most this many messages (0: all).")] = 0,
) -> None:
    """One device's protocol conversation in order, decoded: who sent what to whom, with a
    header per protocol round (stream, secure-aggregation rounds)."""
    import itertools

    from ldpfleet.broker.trace import TraceError, conversation, open_readonly, sequence_lines

    with user_errors():
        db = open_readonly(path)
        known = db.execute(
            "SELECT 1 FROM messages WHERE sender = ? OR recipient = ? LIMIT 1", (device, device)
        ).fetchone()
        if known is None:
            check_bulk_device(db, device, path)
            raise TraceError(f"device {device!r} sent and received nothing in {path}")
        messages = conversation(db, device)
        if limit:
            messages = itertools.islice(messages, limit)
        for line in sequence_lines(messages, device):
            print(line)


@trace_app.command("export")
def trace_export(
    path: TracePath,
    fmt: Annotated[str, typer.Option("--format", "-f", help="jsonl or csv.")] = "jsonl",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="File (default: stdout).",
            parser=_out_path("--output"),
            metavar="PATH",
        ),
    ] = None,
    device: DeviceOpt = None,
    kind: KindOpt = None,
    topic: TopicOpt = None,
    since: SinceOpt = None,
    until: UntilOpt = None,
) -> None:
    """Export messages as JSON lines or CSV."""
    from ldpfleet.broker.trace import TraceError, export, rows

    with user_errors():
        selection = trace_filter(device, kind, topic, since, until)
        if fmt not in ("jsonl", "csv"):  # before -o FILE is opened (it was truncated)
            raise TraceError(f"export format {fmt!r} must be jsonl or csv")
        db = open_filtered_trace(path, kind, device)
        lines = export(rows(db, selection), fmt)
        if output is None:
            for line in lines:
                print(line)
        else:
            with _export_file(output, path) as handle:
                for line in lines:
                    handle.write(line + "\n")


# the first bytes of an SQLite database and of its write-ahead log (big- and little-endian)
_SQLITE_MAGIC = (b"SQLite format 3\x00", b"\x37\x7f\x06\x82", b"\x37\x7f\x06\x83")


def _export_file(output: Path, source: Path | None = None):
    """``trace export -o FILE`` opened for writing; ``TraceError`` (one sentence) for a
    directory or a path that cannot be written (were tracebacks), and for an existing
    SQLite database or log: ``-o RUN/trace.sqlite`` truncated the signed trace being
    exported to 0 bytes before reading it (an OperationalError traceback, the run's trace
    lost), and a store or another trace would be overwritten the same way."""
    from ldpfleet.broker.trace import TraceError

    if output.is_dir():
        raise TraceError(f"--output {output} is a directory; give a file to write the export to")
    if output.is_file():
        trace = source / "trace.sqlite" if source is not None and source.is_dir() else source
        if trace is not None and trace.exists() and output.samefile(trace):
            raise TraceError(
                f"--output {output} is the trace being exported: writing it would erase it "
                "before it is read; give another file"
            )
        try:
            with output.open("rb") as handle:
                head = handle.read(16)
        except OSError:
            head = b""
        if head.startswith(_SQLITE_MAGIC):
            raise TraceError(
                f"--output {output} is an SQLite database or log (a trace or a store?): an "
                "export does not overwrite it; give another file"
            )
    try:
        return output.open("w")
    except OSError as error:
        raise TraceError(f"--output: cannot write {output} ({error.strerror or error})") from None


@trace_app.command("verify")
def trace_verify(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="The run's output directory (trace.sqlite, results.json, ledger.json) or "
            "its trace.sqlite, or the collector side's directory and the fleet shards' "
            "directories; another file is refused (verify reads the files beside the trace)."
        ),
    ],
    public_key: Annotated[
        str | None,
        typer.Option(
            "--public-key",
            help="The trace's Ed25519 public key (hex), as printed by the run "
            "(default: results.json trace.public_key).",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
) -> None:
    """Check that the trace is the one the recorder signed (hash chain + Ed25519 signature
    under results.json's key) and every privatized value in it against the scenario, the
    ledgers and the collector's store: exit 0 clean, 1 on any mismatch (naming the first
    broken row), 2 if an input cannot be read (docs/reliability.md)."""
    from ldpfleet.app.trace_verify import verify_run

    with user_errors():
        report = verify_run(paths, public_key=public_key)
    if as_json:
        print(json.dumps(report.to_dict(), indent=2))
    else:
        checked = ", ".join(f"{k} {v}" for k, v in sorted(report.checked.items())) or "nothing"
        print(f"key: {report.public_key or 'none'}")
        print(f"ledgers: {', '.join(report.ledgers)}")
        print(f"checked: {checked}")
        for note in report.notes:
            print(f"not checked: {note}")
        for m in report.mismatches:
            print(m.line())
        verdict = (
            "trace is signed and agrees with the scenario and the ledgers"
            if report.ok
            else "MISMATCHES"
        )
        print(f"{verdict}: {len(report.mismatches)} mismatch(es)")
    if not report.ok:
        raise typer.Exit(1)


# ---- bench --------------------------------------------------------------------------------


@bench_app.command("fleet")
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
    from ldpfleet.app.bench import bench_fleet
    from ldpfleet.app.progress import as_callback, job_progress
    from ldpfleet.scenarios.loop import run as run_loop

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
    with (
        user_errors(),
        _bench_fleet_options(),
        job_progress(f"bench fleet ({devices:,} devices)", unit="reports") as step,
    ):
        result = run_loop(
            bench_fleet(
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
                progress=as_callback(step),
                partitions=partitions,
                reconstruct=reconstruct,
                gateway_devices=gateway_devices,
                step_seconds=step_seconds,
            )
        )
    print(json.dumps(result, indent=None if as_json else 2))
    if result["lost"]:
        _fail(f"{result['lost']} reports lost; the measurement is of an incomplete run")


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


@bench_app.command("cpr")
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
    from ldpfleet.app.bench_cpr import COSINE_EPS, DETECTION_EPS, DETECTION_W, bench_cpr, markdown
    from ldpfleet.devices.periodic import DATASETS

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
        from ldpfleet.app.bench_cpr import bench_period_grid, grid_markdown

        with user_errors(), _cpr_options():
            found = bench_period_grid(
                trials=40 if grid_trials is None else grid_trials,
                aperiodic_trials=200 if aperiodic_trials is None else aperiodic_trials,
                seed=seed,
                shapes=None if grid_shape is None else _grid_shapes(grid_shape),
                sources=grid_source,
                eps0=grid_eps0,
                templates=grid_template,
            )
        command = "ldpfleet " + " ".join(sys.argv[1:])
        print(json.dumps(found) if as_json else grid_markdown(found, command))
        return
    from ldpfleet.app.progress import as_callback, job_progress

    with user_errors(), _cpr_options(), job_progress("bench cpr", unit="cells") as step:
        result = bench_cpr(
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


@bench_app.command("secagg")
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
            result = run_loop(
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
    print(json.dumps(result))
    _print_warnings(result)  # stderr: stdout stays the JSON
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


def _fail(sentence: str, label: str = "failed", style: str = "bold red") -> NoReturn:
    """``label: sentence`` (the label in ``style``, the sentence printed verbatim) and exit
    status 1: a command that ran but whose result is not what it should be (a bench that is
    not exact, a run that lost reports, was aborted or rejected) or that stopped on an
    error its one sentence explains."""
    from rich.markup import escape

    console.print(f"[{style}]{label}:[/] {escape(sentence)}", highlight=False, soft_wrap=True)
    raise typer.Exit(1) from None


@bench_app.command("cadr")
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
    from ldpfleet.collector.cadr_reference import private_run, summarise
    from ldpfleet.collector.projection import evaluate
    from ldpfleet.protocol.cadr_budget import (
        CADR_EPS_MAX,
        CADR_EPS_MIN,
        resolve_degree_bound,
        resolve_method,
    )
    from ldpfleet.scenarios.cadr_run import scenario_graph_source
    from ldpfleet.scenarios.schema import ScenarioError

    with user_errors():
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
        rule: str | int = int(theta) if theta.isdigit() else theta
        if rule not in ("auto-sum", "auto-dev") and not isinstance(rule, int):
            raise ScenarioError(f"--theta {theta!r} must be an integer, auto-sum or auto-dev")
        bound: str | int = int(degree_bound) if degree_bound.isdigit() else degree_bound
        resolve_degree_bound(bound, pipeline, 2, 1)  # one sentence naming degree_bound if bad
        graph = scenario_graph_source(graph, None)  # ~ expanded, data/... found
        g = _bench_graph(graph)
        started = _time.perf_counter()
        bar = job_progress("bench cadr", None if non_private else runs, unit="runs")
    with user_errors(), bar as advance:  # runs done / runs (one tick at the end: non-private)
        if transport != "reference":
            if non_private or method == "er":
                raise ScenarioError(
                    "--transport: the fleet runs the private ll, lh, ra and clip; --non-private "
                    "and er are centralised: use --transport reference"
                )
            result = _bench_cadr_fleet(
                g, graph, transport, method, rule, eps, alpha, runs, fanout, spacing, processes,
                pipeline, advance, bound,
            )  # fmt: skip
        elif non_private:
            if method == "clip":  # no projection to measure: clip only clips each degree
                raise ScenarioError("--non-private measures a projection: ll, lh, ra or er")
            if not isinstance(rule, int):
                raise ScenarioError("--non-private needs an integer --theta")
            score = evaluate(g, method.upper(), rule, list(range(runs)))
            result = {
                "mode": "non-private",
                "degree_sequence_mae": score.seq_mae,
                "degree_sequence_mse": score.seq_mse,
                "degree_distribution_l1": score.dist_l1,
                "kept_edge_ratio": score.kept_ratio,
                "theta": rule,
            }
        else:
            done = []
            for seed in range(runs):
                done.append(private_run(g, method, rule, eps, alpha, seed, pipeline, bound))
                advance()
            result = {"mode": "private", **summarise(done)}
        if "dsr" in (result.get("spent") or {}):  # a private release: can it place the fleet?
            from ldpfleet.protocol.cadr_budget import release_warnings

            searched = result["spent"].get("theta", 0.0) > 0.0  # the DP θ search ran
            result["warnings"] = release_warnings(result["spent"]["dsr"], g.n, searched=searched)
    print(json.dumps({
        "bench": "cadr", "graph": g.name or graph, "nodes": g.n, "edges": g.edges(),
        "method": method, "eps": eps, "alpha": alpha, "runs": runs, "transport": transport,
        **result, "seconds": round(_time.perf_counter() - started, 2),
    }))  # fmt: skip


def _bench_graph(graph: str):
    """``bench cadr``'s graph: a refusal names the option (``--graph: ...``, it said
    ``graph: ...``) and the nearest named graph (``facebok``: did you mean 'facebook'?)."""
    from ldpfleet.app.suggest import near_miss
    from ldpfleet.devices.graphs import NAMED_GRAPHS, load_graph
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.scenarios.schema import ScenarioError

    try:
        return load_graph(graph)
    except ParameterError as error:
        reason = error.reason if error.field == "graph" else str(error)
        raise ScenarioError(f"--graph: {reason}{near_miss(graph, NAMED_GRAPHS)}") from None


def _one_line_command(group: typer.Typer, name: str, function) -> None:
    """Register ``function`` as ``name`` in ``group``; its line in the listing is its
    docstring's first paragraph joined into one line (not broken where the docstring is)."""
    line = " ".join(inspect.cleandoc(function.__doc__).split("\n\n")[0].split())
    group.command(name, short_help=line)(function)


# the command lines of app/audit_cli.py and app/bench_commands.py: their benches import
# numpy or scipy when they run
_one_line_command(bench_app, "cadr-sweep", bench_cadr_sweep)  # counts its own cells
_one_line_command(bench_app, "gcdp", bench_gcdp_command)
_one_line_command(app, "audit", audit_command)
_one_line_command(bench_app, "gcdp-timing", bench_gcdp_timing_command)
_one_line_command(bench_app, "mechanisms", bench_mechanisms_command)
_one_line_command(bench_app, "gcdp-scaling", bench_gcdp_scaling_command)


def _bench_cadr_fleet(
    g, graph, transport, method, rule, eps, alpha, runs, fanout, spacing, processes, pipeline,
    advance=lambda: None, degree_bound: str | int = "auto",
) -> dict:  # fmt: skip
    """``bench cadr`` over a transport: ``runs`` fleet runs (seeds 0..runs-1), means."""
    import numpy as np
    from ldpfleet.protocol.cadr_budget import PART_NAMES
    from ldpfleet.scenarios.cadr_run import run_cadr_fleet
    from ldpfleet.scenarios.loop import run as run_loop

    broker = "mqtt://127.0.0.1:1883" if transport == "mqtt" else transport
    per_run = []
    for seed in range(runs):
        result = run_loop(
            run_cadr_fleet(
                g, broker=broker, method=method, theta=rule, eps=eps, alpha=alpha,
                seed=seed, fanout=fanout, spacing=spacing,
                processes=processes if broker != "memory" else 1, graph_spec=graph,
                pipeline=pipeline, degree_bound=degree_bound,
            )
        )  # fmt: skip
        for key in ("released", "histogram", "ledgers", "theta_queries", "per_device"):
            result.pop(key)
        result.pop("estimate_histogram", None)
        per_run.append(result)
        advance()
    means = {
        key: float(np.mean([r[key] for r in per_run]))
        for key in ("mae", "mse", "distribution_l1", "histogram_emd", "kept_edge_ratio",
                    "bound_mean", "seconds")
    }  # fmt: skip
    for part in ("raw", "postprocessed"):
        means[part] = {k: float(np.mean([r[part][k] for r in per_run])) for k in per_run[0][part]}
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


def _one_line_listings() -> None:
    """Every command's line in its group's listing is its docstring's first paragraph
    joined into one line (as ``_one_line_command`` does): a docstring's hard line breaks
    put "the name `ldpfleet run NAME` takes and" and "the scenario's description." on two
    lines of ``ldpfleet --help`` at any terminal width."""
    for group in (app, trace_app, bench_app):
        for info in group.registered_commands:
            doc = info.help or (info.callback.__doc__ if info.callback else None)
            if info.short_help is None and doc:
                info.short_help = " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())


_one_line_listings()


def main() -> None:
    """Console-script entry point. Typer ends a command that Ctrl-C stopped with exit status
    130 and no word; "interrupted" says it stopped (once: ``user_errors`` says it itself)."""
    _state["interrupted_said"] = False  # per invocation (tests call main() repeatedly)
    try:
        app()
    except SystemExit as stopped:
        if stopped.code == 130 and not _state.get("interrupted_said"):
            _say_interrupted("interrupted")
        raise


if __name__ == "__main__":
    sys.exit(main())
