"""The plain configuration objects the lower layers run on, built from a scenario.

Devices, the collector and the broker never see the scenario schema (DESIGN.md,
"Layers"); they take dataclasses they define themselves. The functions here translate a
validated ``LoadedScenario`` into them: a ``FleetConfig`` for ``devices.fleet.Fleet`` (and
the sharded fleet), a ``CrashConfig`` for the fault plan, a ``GcdpStageConfig`` for the
collector's GC-DP release stage.
"""

from __future__ import annotations

from pathlib import Path

from ldpfleet.collector.gcdp_stage import GcdpStageConfig
from ldpfleet.devices.faults import CrashConfig
from ldpfleet.devices.fleet import DeviceSourceConfig, FleetConfig
from ldpfleet.devices.periodic import PeriodicSpec
from ldpfleet.scenarios.schema import CsvSource, LoadedScenario, PeriodicSource

__all__ = [
    "crash_config",
    "device_source_config",
    "fleet_config",
    "gcdp_stage_config",
    "run_connection",
]


def run_connection(scenario: LoadedScenario, broker_kind: str | None = None) -> str:
    """The connection model a run of ``scenario`` uses on a broker of ``broker_kind``
    ("memory", "embedded", "mqtt"; None: a real broker). ``[fleet] connection = "auto"``
    is one connection per device on the in-memory broker at any size — there is no socket
    to save, and a gateway costs a second ACL check and a hop (docs/scaling.md, "Auto on
    the memory transport": 20,000-40,000 devices per device used less CPU and memory, no
    loss); on a real broker it is ``LoadedScenario.fleet_connection``'s rule (gateways
    past ``DEVICE_CONNECTIONS_AUTO_MAX`` devices). Explicit settings are kept."""
    if broker_kind == "memory" and scenario.spec.fleet.connection == "auto":
        return "device"
    return scenario.fleet_connection()


def device_source_config(scenario: LoadedScenario) -> DeviceSourceConfig:
    """Where the devices' readings come from: ``[source]`` with paths resolved."""
    spec = scenario.spec
    source = scenario.source_spec()
    if isinstance(source, PeriodicSource):
        source = PeriodicSpec(source.dataset, tuple(source.bounds), source.jitter)
    true_period = spec.source.true_period if isinstance(spec.source, CsvSource) else None
    return DeviceSourceConfig(
        source=source,
        steps=spec.stream.steps,
        devices=spec.fleet.devices,
        true_period=true_period,
    )


def crash_config(scenario: LoadedScenario) -> CrashConfig | None:
    """``[faults]``'s crash settings, or None without the section."""
    faults = scenario.spec.faults
    if faults is None:
        return None
    return CrashConfig(
        crash_fraction=faults.crash_fraction,
        never_return=faults.never_return,
        crash_between=tuple(faults.crash_between),
        down_seconds=faults.down_seconds,
    )


def fleet_state_file(
    scenario: LoadedScenario, run: str, shard: tuple[int, int], out_dir: str | Path | None
) -> str | None:
    """Where shard ``shard`` of a fleet process saves its devices' states (``[fleet]
    state_dir``: "auto" = ``out_dir/device-state.sqlite``, "off" = nowhere, else a file
    per run and shard in that directory)."""
    setting = scenario.spec.fleet.state_dir
    if setting == "off":
        return None
    if setting == "auto":
        return None if out_dir is None else str(Path(out_dir) / "device-state.sqlite")
    index, count = shard
    # "~/state": the home folder (it made a folder named "~" in the current one)
    return str(Path(setting).expanduser() / f"{run}-shard-{index}-of-{count}.sqlite")


def fleet_config(
    scenario: LoadedScenario,
    run: str,
    seed: int | None = None,
    *,
    state_file: str | None = None,
    broker_kind: str | None = None,
) -> FleetConfig:
    """The fleet of run ``run`` (``seed`` overrides the scenario's; ``state_file``: where a
    fleet process's devices persist their state, ``fleet_state_file``; ``broker_kind``: the
    run's broker, which decides what ``connection = "auto"`` means, ``run_connection``)."""
    scenario.refuse_bulk("a per-device fleet (devices/fleet.py)")
    spec = scenario.spec
    collector = spec.collector
    return FleetConfig(
        stream=scenario.stream_config(run),
        device_ids=tuple(scenario.device_ids()),
        source=device_source_config(scenario),
        seed=spec.scenario.seed if seed is None else seed,
        # longer than any wait for credit (the collector's stage deadline) plus the finish
        # grace
        silence_timeout=collector.stage_timeout + collector.finish_grace,
        connect_concurrency=spec.fleet.connect_concurrency,
        step_seconds=spec.stream.step_seconds,
        connection=run_connection(scenario, broker_kind),
        gateway_devices=spec.fleet.gateway_devices,
        crashes=crash_config(scenario),
        state_file=state_file,
        device_noise=spec.privacy.device_noise,
    )


def gcdp_stage_config(scenario: LoadedScenario) -> GcdpStageConfig:
    """The collector's GC-DP release stage from ``[gcdp]`` (the scenario must have it)."""
    section = scenario.spec.gcdp
    if section is None:
        raise ValueError(f"scenario {scenario.name!r} has no [gcdp] section")
    devices = scenario.spec.fleet.devices
    source = scenario.source_spec()  # the file the fleet replays (its sampling is compared)
    return GcdpStageConfig(
        calibration=scenario.calibration_spec(),
        node_bounds=tuple(scenario.node_bounds(i) for i in range(devices)),
        steps=scenario.spec.stream.steps,
        window=section.window,
        eps_rel=section.eps_rel,
        method=section.method,
        tau=section.tau,
        calibration_steps=section.calibration_steps,
        utility_column=section.utility_column,
        source_path=getattr(source, "path", None),
        release_noise=scenario.spec.privacy.device_noise,
    )
