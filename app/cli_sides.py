"""The ``ldpfleet fleet`` and ``collector`` commands: the two sides of a run made of
separate processes (docs/separate-processes.md), each side one process or, with
``[collector] partitions``, a coordinator and its partition workers.

The command functions are registered on the typer ``app`` in app/cli.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from ldpfleet.app.cli_common import _fail, console, user_errors
from ldpfleet.app.cli_options import (
    CredentialsOption,
    DeviceNoiseOption,
    SeedOption,
    _credentials,
    _out_dir_option,
    _positive_seconds,
    _run_id_option,
)
from ldpfleet.app.cli_summary import _print_trace_key, _print_warnings, _rejection_sentence

ScenarioArgument = Annotated[
    Path,
    typer.Argument(help="Scenario file or built-in name (ldpfleet scenarios lists them)."),
]


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
    device_noise: DeviceNoiseOption = None,
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
        loaded = load_scenario(scenario).with_device_noise(device_noise)
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
