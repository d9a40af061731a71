"""``LoadedScenario``: a validated scenario, where it came from, and the plans the
stages build from it (stream configuration, data source, CPR settings, fixed point, fleet
shards and connections); ``resolve_data_path``: where a scenario's relative data path is
read from.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import msgspec
from ldpfleet.collector.cpr import CprConfig
from ldpfleet.devices.noise_entropy import DEVICE_NOISE
from ldpfleet.devices.sources import CsvSpec, SyntheticSpec
from ldpfleet.protocol.messages import MAX_BATCH
from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.protocol.stream import RAW, StreamConfig
from ldpfleet.scenarios.builtin import DATA_ENV, data_root
from ldpfleet.scenarios.schema_errors import ScenarioError
from ldpfleet.scenarios.schema_sections import (
    DEVICE_CONNECTIONS_AUTO_MAX,
    SHARD_AUTO_DEVICES,
    CsvSource,
    PeriodicSource,
    Scenario,
    SyntheticSource,
)


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario and where it came from (relative data paths resolve there)."""

    spec: Scenario
    path: Path | None
    # the TOML it was parsed from (device shards re-read it); left out of the repr: a
    # notebook showing a scenario printed its whole file after the spec
    text: str | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        """The scenario's name."""
        return self.spec.scenario.name

    def run_timeout(self) -> float:
        """``[scenario] run_timeout``, or by default 1.5 x ``[collector] stage_timeout`` +
        ``finish_grace`` + 60 s (+ 6 x ``[secure_sum] stage_timeout`` with that stage): the
        stream stage, its analytics and the shutdown, with room to spare. A bulk run does
        not read this default (``scenarios.bulk_run.run_bulk_scenario``: only a
        ``run_timeout`` the file sets bounds it; the derived one would cut a large run's
        reconstruction)."""
        if self.spec.scenario.run_timeout is not None:
            return self.spec.scenario.run_timeout
        collector = self.spec.collector
        total = 1.5 * collector.stage_timeout + collector.finish_grace + 60.0
        if self.spec.secure_sum is not None:
            total += 6 * self.spec.secure_sum.stage_timeout
        return total

    def fleet_shards(self, broker_kind: str) -> int:
        """How many device processes ``[fleet] shards`` asks for on this broker (the
        in-memory broker lives in one process: always 1)."""
        shards = self.spec.fleet.shards
        if broker_kind == "memory" or self.spec.secure_sum is not None:
            return 1  # the secure-sum stage drives the fleet's devices in-process
        if shards == "auto":
            devices = self.spec.fleet.devices
            return (os.cpu_count() or 1) if devices >= SHARD_AUTO_DEVICES else 1
        return shards

    def check_shard_brokers(self, broker: str | None, shard_brokers: list[str] | None) -> None:
        """Refuse ``--shard-broker`` for a run whose devices run in one shard: every device
        would use ``--broker`` and the option would be silently ignored."""
        if not shard_brokers:
            return
        spec = broker or self.spec.broker.url
        kind = spec if spec in ("memory", "embedded") else "mqtt"
        if self.spec.cadr is not None:  # CADR-LDP shards: [cadr] processes on a real broker
            shards = 1 if kind == "memory" else self.spec.cadr.processes
        else:
            shards = self.fleet_shards(kind)
        if shards == 1:
            raise ScenarioError(
                f"--shard-broker: this run's devices run in one shard ([fleet] shards = "
                f"{self.spec.fleet.shards if self.spec.fleet else 1!r} on the {kind} broker), "
                "which uses --broker; set [fleet] shards to 2 or more (bench fleet: --shards) "
                "or leave --shard-broker out",
                limit="[fleet] shards >= 2 (CADR-LDP: [cadr] processes >= 2)",
            )

    @property
    def bulk(self) -> bool:
        """``[fleet] connection = "bulk"``: the run goes through ``scenarios.bulk_run``."""
        return self.spec.fleet is not None and self.spec.fleet.connection == "bulk"

    def refuse_bulk(self, what: str) -> None:
        """``ScenarioError`` when ``what`` (a per-device run path) is given a bulk scenario:
        bulk gateways run from ``ldpfleet run`` and the bench only (scenarios/bulk_run.py)."""
        if self.bulk:
            raise ScenarioError(
                f'fleet.connection: "bulk" runs with `ldpfleet run` (scenarios/bulk_run.py); '
                f"{what} takes per-device fleets only (device, gateway or auto)",
                limit='one of "auto", "device", "gateway"',
            )

    def fleet_connection(self) -> Literal["device", "gateway", "bulk"]:
        """The connection model ``[fleet] connection`` asks for on a real broker ("auto":
        one connection per device up to ``DEVICE_CONNECTIONS_AUTO_MAX`` devices, gateways
        beyond); ``plans.run_connection`` gives a run's model on its broker (the memory
        broker: per device at any size)."""
        connection = self.spec.fleet.connection
        if connection == "auto":
            fleet_size = self.spec.fleet.devices
            return "device" if fleet_size <= DEVICE_CONNECTIONS_AUTO_MAX else "gateway"
        return connection

    def device_ids(self) -> list[str]:
        """Every device id of the fleet, in index order."""
        n = self.spec.fleet.devices
        width = max(4, len(str(n - 1)))
        return [f"{self.spec.fleet.id_prefix}{i:0{width}d}" for i in range(n)]

    @property
    def multi_column(self) -> bool:
        """A csv source with ``columns``: devices normalise per channel before reporting."""
        return isinstance(self.spec.source, CsvSource) and self.spec.source.columns is not None

    def stream_bounds(self) -> tuple[float, float]:
        """The bounds every report is normalised from: ``source.bounds``, or [0, 1] when
        each device has already mapped its channel's ``column_bounds`` to [0, 1]."""
        if self.multi_column:
            return (0.0, 1.0)
        lo, hi = self.spec.source.bounds
        return float(lo), float(hi)

    def node_bounds(self, index: int) -> tuple[float, float]:
        """Device ``index``'s FIXED public clipping bounds in physical units."""
        src = self.spec.source
        if self.multi_column:
            lo, hi = src.column_bounds[index % len(src.columns)]
            return float(lo), float(hi)
        lo, hi = src.bounds
        return float(lo), float(hi)

    def stream_config(self, run: str) -> StreamConfig:
        """The stream-stage parameters for run ``run`` (``raw``: eps and w are the GC-DP
        release's eps_rel and window, eps0 = 0; batches of one window, at most ``MAX_BATCH``
        steps, by default)."""
        s = self.spec.stream
        lo, hi = self.stream_bounds()
        if s.mechanism == RAW and self.spec.gcdp is not None:
            # nothing is spent on the device (eps0 = 0); eps and w declare the central
            # release that protects the readings
            eps, w = self.spec.gcdp.eps_rel, self.spec.gcdp.window
            default_batch = min(w, s.steps, MAX_BATCH)
        else:
            eps, w = s.eps, s.w
            # at most MAX_BATCH: w = 5,000 without batch_steps was refused as batch_steps
            default_batch = min(s.w, s.steps, MAX_BATCH)
        return StreamConfig(
            run=run,
            mechanism=s.mechanism,
            eps=eps,
            w=w,
            steps=s.steps,
            batch_steps=s.batch_steps or default_batch,
            lo=lo,
            hi=hi,
            retransmit_after=s.retransmit_after,
            partitions=self.spec.collector.partitions,
        )

    def source_spec(self) -> SyntheticSpec | CsvSpec | PeriodicSource:
        """The data-source description with paths resolved."""
        src = self.spec.source
        if isinstance(src, PeriodicSource):
            return src
        if isinstance(src, SyntheticSource):
            return SyntheticSpec(
                shape=src.shape,
                period=src.period,
                amplitude=src.amplitude,
                offset=src.offset,
                noise=src.noise,
                jitter=src.jitter,
                phase=src.phase,
            )
        return self._csv_spec(src.path, src.stride)

    def _csv_spec(self, path: str, stride: int) -> CsvSpec:
        src = self.spec.source
        return CsvSpec(
            path=str(resolve_data_path(path, self.path)),
            column=0 if src.column is None else src.column,
            layout=src.layout,
            stride=stride,
            columns=tuple(src.columns) if src.columns is not None else None,
            column_bounds=tuple(tuple(pair) for pair in src.column_bounds)
            if src.column_bounds is not None
            else None,
            header=None if src.header == "auto" else src.header,
            missing=src.missing,
            decimal=src.decimal,
        )

    def calibration_spec(self) -> CsvSpec:
        """``[gcdp]``'s public calibration data laid out like the fleet (same columns and
        bounds, rooms at ``calibration_stride`` offsets)."""
        section = self.spec.gcdp
        assert section is not None
        return self._csv_spec(section.calibration_path, section.calibration_stride)

    def cpr_config(self) -> CprConfig:
        """CPR's settings from ``[cpr]``."""
        cpr = self.spec.cpr
        return CprConfig(
            min_period=cpr.min_period, max_period=cpr.max_period, min_cycles=cpr.min_cycles
        )

    def fixed_point(self) -> FixedPoint:
        """The secure-sum stage's fixed-point encoding (clip defaults to the source bounds)."""
        section = self.spec.secure_sum
        assert section is not None
        low, high = section.clip or self.stream_bounds()
        return FixedPoint(low, high, section.scale, section.bits)

    def with_device_noise(self, mode: str | None) -> LoadedScenario:
        """This scenario with ``[privacy] device_noise = mode`` (``--device-noise``; None:
        as it is). The processes a run starts are told it again (``--device-noise``)."""
        if mode is None or mode == self.spec.privacy.device_noise:
            return self
        if mode not in DEVICE_NOISE:
            allowed = [f'"{name}"' for name in DEVICE_NOISE]
            raise ScenarioError(
                f"privacy.device_noise: {mode!r} is not allowed; allowed: {', '.join(allowed)}",
                field="privacy.device_noise",
                limit=" or ".join(allowed),
                value=mode,
            )
        privacy = msgspec.structs.replace(self.spec.privacy, device_noise=mode)
        return replace(self, spec=msgspec.structs.replace(self.spec, privacy=privacy))

    def to_dict(self) -> dict:
        """The scenario as plain data (for results.json)."""
        return msgspec.to_builtins(self.spec)


def resolve_data_path(path: str, scenario_path: Path | None) -> Path:
    """A scenario's data path: as given if absolute. A ``data/...`` path reads
    ``$LDPFLEET_DATA/...`` when that is set. Otherwise the path is looked up beside the
    scenario file (or one folder up), then in the current directory, then, for ``data/...``,
    in the shipped data sets (``ldpfleet.data``). The first that exists wins; if none
    does, the path comes back unchanged and its reader reports it missing."""
    candidate = Path(path).expanduser()  # "~/data/x.csv", as a [graph] source may be
    if candidate.is_absolute():
        return candidate
    inside = _inside_data(candidate)
    if inside is not None and os.environ.get(DATA_ENV):
        return data_root() / inside
    bases = []
    if scenario_path is not None:
        # absolute first: "my.toml" run from its own folder has a parent "." and no
        # parent above it, so "one folder up" was the current folder again
        folder = Path(os.path.abspath(scenario_path)).parent
        bases += [folder, folder.parent]
    bases.append(Path.cwd())
    found = next((base / candidate for base in bases if (base / candidate).exists()), None)
    if found is None and inside is not None and (data_root() / inside).exists():
        found = data_root() / inside
    return found or candidate


def _looked_in(path: str, scenario_path: Path | None) -> str:
    """`` (looked in A, B, C)``: where ``resolve_data_path`` looked for a relative ``path``
    it did not find, in its order; "" for an absolute one. A path naming an environment
    variable (``$HOME/x.csv``, ``${DATA}/x.csv``, ``%USERPROFILE%\\x.csv``) adds that it is
    not expanded (helper E's user trial, round 4: only ``~`` is)."""
    return variable_hint(path) + _places(path, scenario_path)


_VARIABLE = re.compile(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%[A-Za-z_][A-Za-z0-9_]*%")


def variable_hint(path: str) -> str:
    """`` ($HOME is not expanded: ...)`` for a path naming an environment variable, else ""."""
    found = _VARIABLE.search(path)
    if found is None:
        return ""
    return (
        f" ({found.group()} is not expanded: a scenario's paths are taken as written, "
        "except a leading ~ for the home folder; write the folder itself)"
    )


def _places(path: str, scenario_path: Path | None) -> str:
    candidate = Path(path).expanduser()
    if candidate.is_absolute():
        return ""
    inside = _inside_data(candidate)
    if inside is not None and os.environ.get(DATA_ENV):
        root = data_root()
        if not root.is_dir():  # the tutorial's /srv/ldp-data, copied as it stands
            return (
                f" (looked in {root / inside}, as {DATA_ENV} is set; {DATA_ENV}={root} is "
                "not a folder: set it to a copy of data/, or unset it for the shipped data)"
            )
        return f" (looked in {root / inside}, as {DATA_ENV} is set)"
    folder = Path(os.path.abspath(scenario_path)).parent if scenario_path else None
    bases = [folder, folder.parent] if folder else []
    places = [base / candidate for base in (*bases, Path.cwd())]
    if inside is not None:
        places.append(data_root() / inside)
    # each place once, absolute: a scenario given as "bad.toml" listed "nope.csv" twice
    # (its folder and the folder above are both "." relative; helper P, 2026-12-06)
    unique = list(dict.fromkeys(place.absolute() for place in places))
    return f" (looked in {', '.join(str(place) for place in unique)})"


def _inside_data(path: Path) -> Path | None:
    """``uci-occupancy/x.txt`` for ``data/uci-occupancy/x.txt``; None outside ``data/``."""
    parts = path.parts
    return Path(*parts[1:]) if len(parts) > 1 and parts[0] == "data" else None
