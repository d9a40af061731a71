"""The ``ldpfleet scenarios``, ``scenario-reference`` and ``run`` commands: list the built-in
scenarios, print the scenario reference, and run a scenario in one command (a stream run,
or a CADR-LDP run with its own table and verdict).

The command functions are registered on the typer ``app`` in app/cli.py.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from ldpfleet.app.cli_common import _fail, _say_interrupted, console, user_errors
from ldpfleet.app.cli_options import (
    BrokerOption,
    CredentialsOption,
    DeviceNoiseOption,
    SeedOption,
    ShardBrokerOption,
    _credentials,
    _out_dir_option,
    _run_id_option,
)
from ldpfleet.app.cli_summary import (
    _deadline_clause,
    _device_errors_clause,
    _print_trace_key,
    _print_warnings,
    _rejection_sentence,
    _summary_table,
    _write_report,
)


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
    device_noise: DeviceNoiseOption = None,
) -> None:
    """Run a scenario: broker + collector + recorder + fleet; write results, trace, ledger."""
    with _no_folder_left_on_refusal(out), user_errors():
        # inside: a plugin file of the user's hiding a module numpy imports (secrets.py)
        # fails this import, which user_errors then names (cli_common.stdlib_shadow)
        from ldpfleet.scenarios.schema import load_scenario

        loaded = load_scenario(scenario).with_device_noise(device_noise)
        _warn_shadowed_file(scenario)
        credentials = _credentials(credentials_path, run_id, loaded)
        loaded.check_shard_brokers(broker, shard_broker or None)
        if loaded.spec.cadr is not None:
            _run_cadr(loaded, broker, out, seed, run_id, credentials, shard_broker or None)
            return
        _warn_embedded_at_scale(loaded, broker)
        try:
            results = _run_stream(
                loaded, broker, out, seed, run_id, credentials, shard_broker or None
            )
        except KeyboardInterrupt:
            _say_interrupted(interrupted_sentence(out))
            raise typer.Exit(130) from None
    _print_stream_run(results, out)
    _fail_unless_complete(results, loaded.spec.collector.stage_timeout)


def interrupted_sentence(out: Path) -> str:
    """The line a Ctrl-C prints: where the stopped run's outputs are (before: only
    "interrupted", while OUT had no results.json and ``report``/``trace verify OUT``
    refused it)."""
    if (out / "results.json").exists():  # an earlier run's, not this one's
        return "interrupted"
    if (out / "collector" / "results.json").exists():
        return (
            f"interrupted: no {out}/results.json; what the collector stored before the stop "
            f"is in {out}/collector/ (its results.json says aborted) and the device shards' "
            f"ledgers in {out}/fleet-*/; `ldpfleet trace verify {out}/collector "
            f"{out}/fleet-*` checks them"
        )
    if any(out.glob("p*/reports.bin")):
        return (
            f"interrupted: no {out}/results.json; the bulk collectors' stores "
            f"({out}/p*/reports.bin) hold what arrived before the stop, without a summary"
        )
    return "interrupted"


def _warn_shadowed_file(scenario: Path) -> None:
    """A warning: a bare name ran the built-in scenario, not the user's NAME.toml here."""
    from ldpfleet.scenarios.builtin import shadowed_file

    mine = shadowed_file(scenario)
    if mine is not None:
        console.print(
            f"[yellow]warning:[/] {scenario} is the built-in scenario; this folder's "
            f"{mine} is not run (write `ldpfleet run {mine}` to run it)"
        )


def _warn_embedded_at_scale(loaded, broker: str | None) -> None:
    """A warning: the embedded broker slows down beyond ~1,000 devices."""
    if (broker or loaded.spec.broker.url) == "embedded" and loaded.spec.fleet.devices > 1000:
        console.print(
            "[yellow]warning:[/] the embedded amqtt broker slows down beyond ~1,000 devices; "
            "use --broker mqtt://127.0.0.1:1883 (Mosquitto) for large fleets (docs/brokers.md)"
        )


def _run_stream(
    loaded,
    broker: str | None,
    out: Path,
    seed: int | None,
    run_id: str | None,
    credentials,
    shard_brokers: list[str] | None,
) -> dict:
    """``ldpfleet run`` of a stream scenario (``_run_any``) behind a progress bar of the
    reports received (and, while devices connect, of those that joined)."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

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

        return _run_any(
            loaded,
            broker=broker,
            out_dir=out,
            seed=seed,
            run_id=run_id,
            progress=progress,
            credentials=credentials,
            shard_brokers=shard_brokers,
        )


def _print_stream_run(results: dict, out: Path) -> None:
    """A finished stream run: the summary table, the report written, the output files,
    the trace key and the warnings."""
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


def _fail_unless_complete(results: dict, stage_timeout: float) -> None:
    """Exit 1 with one sentence for a stream run that was aborted, whose secure sum
    aborted, whose reports a device rejected, or that lost reports (naming the devices,
    their errors and ``[collector] stage_timeout`` when the stage ran out of time)."""
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
            + _deadline_clause(results, stage_timeout)
            + "; results.json missing_batches lists them (exit code 1).",
            "incomplete",
            "bold yellow",
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
    console.print(_cadr_table(loaded.name, results))
    _print_cadr_verdict(results)
    report = _write_report(out)
    console.print(
        f"outputs: {out}/results.json, {out}/ledger.json, {out}/collector.sqlite, "
        f"{out}/trace.sqlite{', ' + str(report) if report else ''}"
    )
    _print_trace_key(results)


def _cadr_table(name: str, results: dict):
    """The summary table of a CADR-LDP run (``name``: the scenario's)."""
    from rich.table import Table

    table = Table(title=f"{name} — run {results['run']}", show_header=False)
    rows_ = [
        ("broker", results["broker"]),
        ("devices / edges", f"{results['devices']:,} / {results['edges']:,}"),
        ("method, eps, alpha", f"{results['method']}, {results['eps']:g}, {results['alpha']:g}"),
        ("theta", _theta_line(results)),
        *_dropped_rows(results),
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
    return table


def _dropped_rows(results: dict) -> list[tuple[str, str]]:
    """The row of a run with ``[cadr] dropout``: how many dropped out at which stage, and
    that the figures below cover the released devices (none without a dropout)."""
    dropped = results.get("dropped")
    if not isinstance(dropped, dict):
        return []
    # the release's own count: a device that refused its budget released nothing either
    # (an empty ``released`` is 0 released, not "unknown": reviewer R, 2026-12-07)
    released_map = results.get("released")
    released = (
        len(released_map) if isinstance(released_map, dict)
        else results["devices"] - dropped["count"]
    )  # fmt: skip
    return [
        ("dropped out", f"{dropped['count']} at {dropped['stage']} (errors over the "
                        f"{released:,} released devices)"),
    ]  # fmt: skip


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
            try:
                return run_loop(run_scenario(loaded, progress=progress, **options))
            except Exception as error:
                _fail_stopped_run(error)
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


def _fail_stopped_run(error: Exception) -> NoReturn:
    """An error that stopped an in-process run once it started: a user error (a broker
    that refused or went away: ``user_errors``' one sentence, exit 2) or one no part of the
    run raised is raised on; another (a full disk, a bug) is one sentence naming the part
    that raised it (``runner.stopped_by``), exit 1, its traceback with --verbose."""
    from ldpfleet.app.cli_common import _state, user_error_types
    from ldpfleet.scenarios.runner import stopped_by

    part = stopped_by(error)
    if part is None or isinstance(error, user_error_types()):
        raise error
    if _state["verbose"]:
        console.print_exception()
    _fail(f"{type(error).__name__}: {error} ({part}; --verbose shows where)", "error")


def check_command(
    scenario: Annotated[
        Path,
        typer.Argument(help="Scenario file or built-in name (ldpfleet scenarios lists them)"),
    ],
) -> None:
    """Check a scenario without running it: every refusal on its own line (exit 2), or
    one line saying it loads."""
    with user_errors():
        from ldpfleet.scenarios.schema import load_scenario

        loaded = load_scenario(scenario)
    kind = "CADR-LDP" if loaded.spec.cadr is not None else "stream"
    print(f"ok: {scenario} loads ({kind} scenario {loaded.name!r})")


def scenario_reference_command() -> None:
    """Print the scenario file reference generated from the schema (Markdown; the
    committed copy is docs/scenario-reference.md)."""
    from ldpfleet.app.reference import reference_markdown

    print(reference_markdown(), end="")
