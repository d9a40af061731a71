"""The scenario file (TOML) schema, its loader, and the plans built from it.

A scenario is validated completely when it is loaded: unknown keys, wrong types and bad
values raise ``ScenarioError`` with one sentence naming the key (``stream.eps``), the
value and the limit. ``docs/scenarios.md`` documents every key.
"""

from __future__ import annotations

import difflib
import functools
import json
import math
import os
import re
import typing
from dataclasses import dataclass
from pathlib import Path
from types import UnionType
from typing import Annotated, Literal

import msgspec
from ldpfleet.collector.cpr import CprConfig
from ldpfleet.collector.gcdp.evaluation import check_date_order
from ldpfleet.collector.period import DEFAULT_MIN_CYCLES
from ldpfleet.collector.reconstruct import compatible
from ldpfleet.devices.sources import (
    CsvSpec,
    SourceError,
    SyntheticSpec,
    dropped_columns,
    table_columns,
)
from ldpfleet.protocol.bulk import BULK_MECHANISMS, MAX_BULK_W
from ldpfleet.protocol.cadr_budget import (
    ALPHA_DEFAULT,
    CADR_EPS_MAX,
    CADR_EPS_MIN,
    THETA_EPS_MIN,
    THETA_FRACTION,
    theta_search_min_eps,
)
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanism_contract import EPS_MIN
from ldpfleet.protocol.mechanisms import check_mechanism_name
from ldpfleet.protocol.messages import MAX_BATCH, MAX_MECHANISM_NAME, MAX_RELEASE
from ldpfleet.protocol.secagg import graph as graphs
from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.protocol.secagg.messages import MAX_PARTICIPANTS, MAX_STAGE_TIMEOUT
from ldpfleet.protocol.secagg.server import SecAggServer
from ldpfleet.protocol.stream import RAW, StreamConfig
from ldpfleet.protocol.topics import MAX_PARTITIONS
from ldpfleet.scenarios.builtin import DATA_ENV, data_root, find_scenario
from ldpfleet.scenarios.plugin_load import mechanism_in_time
from ldpfleet.scenarios.schema_graph import (
    broker_url_problem,
    cadr_budget_problem,
    cadr_theta_problem,
    generator_problem,
    graph_nodes,
    graph_source_rule,
    missing_source_problem,
)
from msgspec import Meta

Ident = Annotated[str, Meta(pattern=r"^[A-Za-z0-9_.-]{1,40}$")]
Positive = Annotated[float, Meta(gt=0)]
Period = Annotated[int, Meta(ge=2)]  # a synthetic period in steps (devices.sources.SyntheticSpec)


def _on_load(rule: str) -> Meta:
    """A field's limits checked when the file loads beyond its own type and range (they
    involve other fields): docs/scenario-reference.md shows them in the field's row."""
    return Meta(description=f"on load: {rule}")


# [source] bounds, every kind; [secure_sum] clip (``_check_source_bounds``, FixedPoint)
BOUNDS_RULE = "finite lo < hi, and hi - lo finite"
# [scenario] seed, and the seed a library caller gives ldpfleet.run (scenarios.runner); the
# CLI's --seed (app/cli.py) and the audits' (collector.audit.stats) keep the same number
# without importing this module (the CLI starts without it; collector is a lower layer)
SEED_MAX = 2**63 - 1
# [broker] url (``scenarios.schema_graph.broker_url_problem``, ``broker.mqtt.parse_broker_url``)
BROKER_URL_RULE = '"embedded", "memory", mqtt://host[:port] or mqtts://host[:port]'


SHARD_AUTO_DEVICES = 1_000  # from this fleet size "auto" runs one device process per core
# up to this fleet size connection "auto" gives every device its own MQTT connection;
# larger fleets go through gateways (10,000 per-device connections are measured on
# Mosquitto, docs/scaling.md; beyond, file-descriptor limits of the device processes and
# of the broker decide)
DEVICE_CONNECTIONS_AUTO_MAX = 10_000
# [cadr] eps: [CADR_EPS_MIN, CADR_EPS_MAX] (protocol.cadr_budget.check_run_eps, "Range of eps");
# `bench cadr`, `bench cadr-sweep` and the in-process reference take the same range


class ScenarioError(ValueError):
    """A scenario that cannot run; the message is one sentence with the fix.

    For programmatic handling (docs/api.md, "Errors"): ``field`` is the dotted path of the
    key at fault (``"stream.eps"``, ``"source.period[1]"``, a section ``"source"``), None
    when no key is (invalid TOML, a missing file); ``value`` what the scenario gave there
    (None when the key is absent or is a whole section); ``limit`` the rule the value
    broke, in short machine-readable form (``"> 0.0"``, ``'one of "all", "control",
    "none"'``, ``"<= stream.steps (200)"``, ``"finite lo < hi"``, ``"valid TOML"``). A
    scenario refused while loading (``parse_scenario``, ``load_scenario``) always has
    ``limit`` set, and ``field`` when its message starts with a key (``stream.eps: ...``);
    other callers may leave ``limit`` None."""

    def __init__(
        self, message: str, *, field: str | None = None, limit: str | None = None,
        value: object = None,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self._field_given = field is not None
        self.field = field if field is not None else _section_key_of(message)
        self.limit = limit
        self.value = value


# a message's leading key: ``stream.eps: ...``, ``source.period[1]: ...``, ``cpr: ...``
_LEADING_KEY = re.compile(r"(\w+)((?:\.\w+|\[\d+\])*): ")


def _section_key_of(message: str) -> str | None:
    """The key a message starts with, when its first part is a section of the scenario
    file (not a file name such as ``s.toml: ...``)."""
    match = _LEADING_KEY.match(message)
    if match is None or match.group(1) not in Scenario.__struct_fields__:
        return None
    return match.group(1) + match.group(2)


def _stated_limit(reason: str) -> str | None:
    """The limit msgspec's (or ``explain_invalid``'s) wording states: ``> 0.0``,
    ``length 2``, ``matching regex '...'``, ``one of "a", "b"``; else None."""
    bound = re.search(r"Expected `[^`]*` (of length )?((?:>=|<=|>|<) )?([^\s,]+)", reason)
    if bound is not None and (bound.group(1) or bound.group(2)):
        return ("length " if bound.group(1) else "") + (bound.group(2) or "") + bound.group(3)
    regex = re.search(r"(matching regex '[^']*')", reason)
    if regex is not None:
        return regex.group(1)
    allowed = re.search(r"; allowed: (.*?)(?: \(did you mean [^)]*\))?$", reason)
    if allowed is not None:
        return f"one of {allowed.group(1)}"
    return None


def _validation_limit(reason: str, explained: str) -> str:
    """The limit of a msgspec refusal (``reason``, as ``explain_invalid`` put it:
    ``explained``): a bound, a pattern or the allowed values (``_stated_limit``),
    ``required``, the valid keys of a section, else the expected type."""
    stated = _stated_limit(explained)
    if stated is not None:
        return stated
    if "missing required field" in reason:
        return "required"
    if "unknown field" in reason:
        valid = re.search(r"; (?:did you mean `[^`]*`\? )?valid: (.*?) \(docs/", explained)
        return f"one of {valid.group(1)}" if valid else "a key inside its [section]"
    expected = re.search(r"Expected `([^`]*)`", reason)
    if expected is not None:  # TOML's names for msgspec's object and array
        kind = expected.group(1).removesuffix(" | null")  # an optional section or key
        return {"object": "a table ([section])", "array": "an array"}.get(kind, f"type {kind}")
    return "the schema's type (docs/scenario-reference.md)"


def _schema_rule(owner: type, name: str) -> str | None:
    """The rule of field ``name`` of the schema struct ``owner`` as the schema states it:
    its bounds (``> 0; <= 50``) and its on-load rule (``_on_load``); None if it has none."""
    hint = typing.get_type_hints(owner, include_extras=True).get(name)
    rules: list[str] = []

    def walk(option) -> None:
        if typing.get_origin(option) is Annotated:
            base, *metas = typing.get_args(option)
            walk(base)
            for meta in metas:
                if not isinstance(meta, Meta):
                    continue
                for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
                    if getattr(meta, attr) is not None:
                        rules.append(f"{sign} {getattr(meta, attr)}")
                if meta.description and meta.description.startswith("on load: "):
                    rules.append(meta.description.removeprefix("on load: "))
        elif typing.get_origin(option) in (typing.Union, UnionType):
            for each in typing.get_args(option):
                walk(each)

    walk(hint)
    return "; ".join(dict.fromkeys(rules)) or None


def _name_the_field(error: ScenarioError, where: str, text: str) -> None:
    """Fill ``error``'s ``field`` (the key its message names after ``where``, the file's
    prefix), ``value`` (the scenario text's value there) and ``limit`` (``_stated_limit``)
    when the raise did not give them; the message stays as it is."""
    message = str(error)
    body = message[len(where) :] if message.startswith(where) else message
    match = _LEADING_KEY.match(body)
    if not error._field_given:  # this module sets it
        error.field = None if match is None else match.group(1) + match.group(2)
    if error.field is None:
        return
    if error.limit is None and match is not None:
        error.limit = _stated_limit(body[match.end() :])
    if error.value is None:
        import tomllib

        try:
            value = _raw_value(_key_parts(error.field), tomllib.loads(text))
        except (tomllib.TOMLDecodeError, TypeError):
            return
        if value is not _MISSING and not isinstance(value, dict):
            error.value = value


class _Section(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    pass


class ScenarioMeta(_Section):
    """``[scenario]``: name and seed."""

    name: Ident
    seed: Annotated[int, Meta(ge=0, le=SEED_MAX)] = 0
    description: str = ""
    # the whole run's deadline (seconds); None: derived (``LoadedScenario.run_timeout``)
    run_timeout: Annotated[float, Meta(gt=0)] | None = None


class FleetSection(_Section):
    """``[fleet]``: how many devices and how they connect."""

    devices: Annotated[
        int,
        Meta(ge=1, le=1_000_000),
        _on_load(
            f"with [secure_sum] 2 .. {MAX_PARTICIPANTS:,}; with [gcdp] <= {MAX_RELEASE:,}; "
            "with source.columns a multiple of the number of columns"
        ),
    ]
    id_prefix: Annotated[str, Meta(pattern=r"^[A-Za-z][A-Za-z0-9_-]{0,20}$")] = "d"
    connect_concurrency: Annotated[int, Meta(ge=1, le=10_000)] = 64
    # device processes (docs/scaling.md): "auto" = one per core for fleets of at least
    # SHARD_AUTO_DEVICES devices on a network broker, else 1 (in the runner's process)
    shards: Annotated[int, Meta(ge=1, le=256)] | Literal["auto"] = "auto"
    # one MQTT connection per device, or gateways carrying gateway_devices devices each
    # over one connection (devices/gateway.py; ACL per device enforced at the gateway);
    # "auto": per device up to DEVICE_CONNECTIONS_AUTO_MAX devices, else gateways;
    # "bulk": bulk gateways of gateway_devices devices each, many devices' batches in one
    # message (protocol/bulk.py, scenarios/bulk_run.py; docs/scaling.md "Bulk gateways";
    # what they cannot do is refused on load, ``_check_bulk``)
    connection: Literal["auto", "device", "gateway", "bulk"] = "auto"
    gateway_devices: Annotated[int, Meta(ge=1, le=1_000_000)] = 1000
    # where a fleet process's devices save their state before they publish, so that a
    # killed shard started again with the same command resumes them (devices/state_file.py):
    # "auto" = in the shard's output directory for fleet processes (ldpfleet fleet, the
    # shards of ldpfleet run), never for devices in the one-process runner; "off"; or a
    # directory (one file per run and shard)
    state_dir: Annotated[str, Meta(min_length=1, max_length=4096)] = "auto"


class StreamSection(_Section):
    """``[stream]``: the SW stream-reporting stage."""

    steps: Annotated[int, Meta(ge=1, le=10_000_000)]
    eps: Annotated[  # required unless mechanism raw
        Annotated[float, Meta(gt=0, le=50)] | None,
        _on_load(
            f'eps / w >= {EPS_MIN:g}; required, except with mechanism "raw", which refuses it'
        ),
    ] = None
    w: Annotated[  # required unless mechanism raw
        Annotated[int, Meta(ge=1, le=100_000)] | None,
        _on_load(
            f'<= steps; required, except with mechanism "raw", which refuses it; with '
            f'fleet.connection = "bulk" <= {MAX_BULK_W:,}'
        ),
    ] = None
    # a built-in (sw, sw01, laplace, duchi, piecewise, hybrid, raw), "package.module:Class"
    # or an entry point of the group ldpfleet.mechanisms (docs/mechanisms.md); checked on load
    mechanism: Annotated[str, Meta(min_length=1, max_length=MAX_MECHANISM_NAME)] = "sw"
    reconstruct: Literal["none", "cpr", "sw", "sw_moving", "sw_filter", "laplace"] = "none"
    batch_steps: Annotated[
        Annotated[int, Meta(ge=1, le=MAX_BATCH)] | None,
        _on_load(
            f'<= steps; default min(w, steps, {MAX_BATCH:,}); with fleet.connection = "bulk" '
            "steps must be a multiple of it"
        ),
    ] = None
    step_seconds: Annotated[float, Meta(ge=0, le=3600)] = 0.0
    retransmit_after: Annotated[float, Meta(gt=0, le=3600)] = 5.0


class SyntheticSource(_Section, tag="synthetic", tag_field="kind"):
    """``[source] kind = "synthetic"``: periodic waveforms."""

    bounds: Annotated[tuple[float, float], _on_load(BOUNDS_RULE)]
    shape: Literal["sine", "square", "sawtooth", "composite"] = "sine"
    # a period in steps, or a [min, max] range drawn per device (min <= max). A list, not
    # tuple[Period, Period]: msgspec 0.23 garbles a union of a constrained int and a tuple
    # ("Expected `array` of length 140022809579728", then a segfault)
    period: Annotated[
        Period | Annotated[list[Period], Meta(min_length=2, max_length=2)],
        _on_load("a [min, max] range needs min <= max"),
    ] = 24
    amplitude: Annotated[float, Meta(gt=0)] = 1.0
    # the level the waveform swings around, or a [min, max] range drawn uniformly per device
    offset: Annotated[
        float | Annotated[list[float], Meta(min_length=2, max_length=2)],
        _on_load("a [min, max] range needs min <= max"),
    ] = 0.0
    noise: Annotated[float, Meta(ge=0)] = 0.0  # standard deviation of Gaussian noise
    jitter: Annotated[float, Meta(ge=0)] = 0.0  # standard deviation, in steps
    phase: Annotated[float, Meta(ge=0, lt=1)] | Literal["random"] = "random"  # of a period


class CsvSource(_Section, tag="csv", tag_field="kind"):
    """``[source] kind = "csv"``: replay a data-set column or rows, or several columns
    (``columns``: device i = channel i % C of room i // C, each channel with its own
    ``column_bounds``; ``bounds`` is then not used)."""

    path: Annotated[str, Meta(min_length=1)]  # "" was the scenario's own folder
    bounds: Annotated[  # required unless columns
        tuple[float, float] | None, _on_load(f"{BOUNDS_RULE}; required unless columns")
    ] = None
    column: str | int | None = None  # default 0
    columns: Annotated[list[str | int], Meta(min_length=1, max_length=64)] | None = None
    column_bounds: Annotated[
        list[tuple[float, float]] | None,
        _on_load(f"one [lo, hi] per column (only with columns), each {BOUNDS_RULE}"),
    ] = None
    layout: Literal["column", "rows"] = "column"
    stride: Annotated[int, Meta(ge=0)] = 0
    true_period: Annotated[
        Annotated[int, Meta(ge=2)] | None,
        _on_load('with stream.reconstruct = "cpr": <= stream.steps // cpr.min_cycles'),
    ] = None
    # is the first line a header? "auto": yes unless every field is a number (a header
    # of numbers, such as years or sensor ids, needs true)
    header: Literal["auto"] | bool = "auto"
    # a missing value ("", NA, NaN, null, None or -, any case) in a column the source reads:
    # refuse it, carry the previous reading forward, interpolate linearly, or drop the time
    # step for every device (devices.sources.CsvSpec; docs/scenarios.md, "Gaps")
    missing: Literal["refuse", "previous", "interpolate", "drop"] = "refuse"


class PeriodicSource(_Section, tag="periodic", tag_field="kind"):
    """``[source] kind = "periodic"``: seed 003's data-set cycles repeated with jitter."""

    dataset: Literal["darwin", "music", "raisin", "synthetic"]
    bounds: Annotated[tuple[float, float], _on_load(BOUNDS_RULE)] = (0.0, 1.0)
    jitter: Annotated[float, Meta(ge=0, le=1)] = 0.02


class CollectorSection(_Section):
    """``[collector]``: flow control and deadlines."""

    max_in_flight: Annotated[int, Meta(ge=1, le=100_000), _on_load(">= credit_window")] = 256
    credit_window: Annotated[int, Meta(ge=1, le=4096), _on_load("<= max_in_flight")] = 2
    stage_timeout: Annotated[float, Meta(gt=0)] = 600.0
    idle_timeout: Annotated[float, Meta(gt=0)] = 30.0
    # after the collector finishes: how long the recorder and the fleet may take to end
    finish_grace: Annotated[float, Meta(gt=0)] = 5.0
    # what the trace recorder keeps: every message, or the control plane only (stage,
    # rejections, releases: for very large fleets, where recording every report and ack
    # costs as much CPU as collecting them; docs/scaling.md); "none": no recorder, only
    # with fleet.connection = "bulk" (whose "all" records one row per bulk report and
    # acknowledgement, not per device: docs/scaling.md "Bulk gateways")
    trace: Literal["all", "control", "none"] = "all"
    # collector partitions (DESIGN.md "Scale", docs/scaling.md): a worker process per
    # partition, devices assigned by SHA-256 of their id; 1 = one collector process
    partitions: Annotated[int, Meta(ge=1, le=MAX_PARTITIONS)] = 1


class FaultsSection(_Section):
    """``[faults]``: faults injected into a stream run (docs/reliability.md, "Faults
    scenario"). Crashes need a paced stream (``stream.step_seconds > 0``)."""

    # devices that crash mid-stream (chosen from the seed); a crashed device loses its RAM,
    # keeps its storage (privatised values, ledger, generator) and comes back
    crash_fraction: Annotated[
        float,
        Meta(ge=0, le=1),
        _on_load(
            "crashing devices (round(crash_fraction x fleet.devices) > 0) need "
            "stream.step_seconds > 0"
        ),
    ] = 0.0
    # of the crashed devices, how many never come back (their data is reported missing)
    never_return: Annotated[
        int, Meta(ge=0), _on_load("<= round(crash_fraction x fleet.devices)")
    ] = 0
    # each crash happens after a step drawn uniformly in this fraction of the stream
    crash_between: Annotated[tuple[float, float], _on_load("0 <= low <= high <= 1")] = (
        0.2,
        0.6,
    )
    down_seconds: Annotated[float, Meta(ge=0, le=3600)] = 0.5
    # a hostile client floods the collector with about this many bad messages
    hostile_messages: Annotated[int, Meta(ge=0, le=1_000_000)] = 0
    # extra seconds of work per delivery at the collector (a slow disk): a slow collector
    collector_delay: Annotated[float, Meta(ge=0, le=10)] = 0.0


class CprSection(_Section):
    """``[cpr]``: the admissible period range of CPR's cycle recovery."""

    min_period: Annotated[
        int,
        Meta(ge=2),
        _on_load("<= stream.steps // min_cycles unless 2 (at least min_cycles cycles)"),
    ] = 2
    max_period: Annotated[
        Annotated[int, Meta(ge=2)] | None,
        _on_load("min_period <= max_period <= stream.steps // min_cycles"),
    ] = None
    period_tolerance: Annotated[int, Meta(ge=0)] = 0
    # detect_period's fewest whole cycles of a claimed period (docs/cpr.md): the default
    # range is periods up to stream.steps // min_cycles; 2 reaches periods seen 2-3 times
    min_cycles: Annotated[int, Meta(ge=2, le=1_000)] = DEFAULT_MIN_CYCLES


class SecureSumSection(_Section):
    """``[secure_sum]``: a secure-aggregation stage after the stream stage. Each device's
    vector is the first ``dim`` readings of its clean stream, clipped to ``clip``."""

    dim: Annotated[int, Meta(ge=1, le=100_000), _on_load("<= stream.steps")] = 10
    graph: Literal["harary", "full"] = "harary"
    neighbors: Annotated[
        Annotated[int, Meta(ge=1)] | None,
        _on_load(
            'graph "harary": 2 .. fleet.devices - 1 (1 only with 2 devices); '
            '"full": fleet.devices - 1'
        ),
    ] = None
    threshold: Annotated[
        Annotated[int, Meta(ge=1)] | None,
        _on_load("s < 2 threshold <= 2 s, s = share holders per device (neighbors + 1)"),
    ] = None
    clip: Annotated[
        tuple[float, float] | None, _on_load(f"{BOUNDS_RULE}; default source.bounds")
    ] = None
    scale: Annotated[
        float,
        Meta(gt=0),
        _on_load(
            "round(clip width x scale) in [1, 2^53], and fleet.devices x it < 2^bits (the "
            "sum never wraps)"
        ),
    ] = 65536.0
    bits: Literal[32, 64] = 64
    # at most what the devices accept in the session's setup (SaSetup)
    stage_timeout: Annotated[float, Meta(gt=0, le=MAX_STAGE_TIMEOUT)] = 30.0
    dropout: Annotated[
        float,
        Meta(ge=0, lt=1),
        _on_load("leaves at least the session's threshold t of the fleet.devices"),
    ] = 0.0
    dropout_stage: Literal[
        "before_keys", "after_keys", "after_shares", "after_masked", "during_unmask"
    ] = "after_shares"


class GraphSection(_Section):
    """``[graph]``: the graph whose nodes are the devices (CADR-LDP scenarios)."""

    # facebook | wiki-vote | a SNAP edge-list path | kind:n=..,..,seed=.. ("" was a folder)
    source: Annotated[str, Meta(min_length=1)]


class CadrSection(_Section):
    """``[cadr]``: the CADR-LDP degree-release stage over the fleet."""

    # "clip": no negotiation, each device's own clipped degree (protocol.cadr_budget)
    # "auto": the pipeline's default — "clip" under "dp" (no negotiation; the whole view is
    # ε-node-LDP), "ll" (the paper's LPEA-LOW) under "paper" (docs/cadr.md, "Method clip")
    method: Literal["auto", "ll", "lh", "ra", "clip"] = "auto"
    # below 0.001 every CADR release is noise (docs/cadr.md, "Range of eps")
    eps: Annotated[
        float,
        Meta(ge=CADR_EPS_MIN, le=CADR_EPS_MAX),
        _on_load(
            'with pipeline = "dp" and a θ rule (theta "auto-dev" / "auto-sum"): eps >= '
            f"theta_search_min_eps(alpha) ({theta_search_min_eps(ALPHA_DEFAULT)} at alpha = "
            f"{ALPHA_DEFAULT}), except on a fleet the small-fleet rule runs with no θ search "
            '("auto-dev", degree_bound not "graph-max"); above 240,000 devices an eps > 0.5 '
            f"with alpha x eps < {THETA_EPS_MIN / THETA_FRACTION:.6g} may be refused too"
        ),
    ] = 3.0
    alpha: Annotated[float, Meta(gt=0, lt=1)] = 0.1
    theta: Annotated[
        Annotated[int, Meta(ge=1)] | Literal["auto-dev", "auto-sum"],
        _on_load(
            'a given θ <= the degree bound D (with degree_bound "graph-max", or "auto" under '
            'pipeline "paper", checked by the run); "auto-sum" needs pipeline "paper"'
        ),
    ] = "auto-dev"
    fanout: Annotated[int, Meta(ge=1, le=64)] = 1
    spacing: Literal["linear", "geometric"] = "linear"
    ndoe_parts: Annotated[int, Meta(ge=1, le=1000)] = 16
    # the public degree bound D: "auto" (dp: "devices", paper: "graph-max"), "devices"
    # (n - 1), "graph-max" (the graph's maximum degree: NOT private), or an integer; a
    # degree above D is clipped to D (docs/cadr.md, "The degree bound")
    degree_bound: Annotated[int, Meta(ge=1)] | Literal["auto", "devices", "graph-max"] = "auto"
    max_rounds: Annotated[int, Meta(ge=1, le=10_000)] = 100
    # the θ search's secure sums use it too: at most what their devices accept (SaSetup)
    stage_timeout: Annotated[float, Meta(gt=0, le=MAX_STAGE_TIMEOUT)] = 120.0
    connect_concurrency: Annotated[int, Meta(ge=1, le=10_000)] = 64
    processes: Annotated[int, Meta(ge=1, le=64)] = 2
    trace: Literal["control", "all", "none"] = "control"
    # "dp": θ aimed at the post-processed error + the post-processed release (docs/cadr.md);
    # "paper": the paper's exact pipeline (θ objective and raw Laplace release)
    pipeline: Literal["dp", "paper"] = "dp"
    # a public wall-clock deadline per relay phase (NDOE, LPEA), seconds; 0 = none. The
    # relay ends no phase before it, closing the phases' duration as a timing channel to
    # the collector (docs/cadr.md, "Padding"); every phase then lasts at least this long
    peer_deadline_seconds: Annotated[float, Meta(ge=0, le=86_400)] = 0.0


class GcdpSection(_Section):
    """``[gcdp]``: the collector's GC-DP central release of window means (docs/gcdp-fleet.md).

    Devices stream clipped readings in the clear (``stream.mechanism = "raw"``); the
    collector calibrates on the PUBLIC ``calibration_path`` (eps_cal = 0) and releases the
    M node means of every complete, non-overlapping window of ``window`` steps with
    eps_rel-DP under "one clipped channel value at one timestamp" adjacency."""

    eps_rel: Annotated[float, Meta(gt=0, le=50)]
    calibration_path: Annotated[str, Meta(min_length=1)]
    window: Annotated[int, Meta(ge=1, le=100_000), _on_load("<= stream.steps")] = 30
    method: Literal["gcdp", "lap"] = "gcdp"
    tau: Annotated[float, Meta(ge=0, le=1)] = 0.15
    calibration_stride: Annotated[int, Meta(ge=0)] = 0
    calibration_steps: Annotated[
        Annotated[int, Meta(ge=2, le=10_000_000)] | None,
        _on_load(
            "at least max(window, 8) records and at most the calibration file's (default: "
            "the file's)"
        ),
    ] = None
    utility_column: str | None = None


class BrokerSection(_Section):
    """``[broker]``: where to run (overridden by ``--broker``), and whether connections
    authenticate and the broker enforces the run's ACL (``broker.auth``): "auto" = yes on
    the embedded and in-memory brokers, no on an external URL unless credentials are given
    (docs/reliability.md, "Authentication and ACLs")."""

    url: str = "embedded"
    auth: bool | Literal["auto"] = "auto"
    # seconds between repeats of the collector's run announcement while the run is open
    # (0: retained once). For clustered brokers that keep a retained message on its node
    # only (RabbitMQ 3.10): a fleet on another node gets the next repeat live.
    announce_every: Annotated[float, Meta(ge=0, le=3600)] = 0.0


class Scenario(_Section):
    """A whole scenario file."""

    scenario: ScenarioMeta
    fleet: FleetSection | None = None
    stream: StreamSection | None = None
    source: SyntheticSource | CsvSource | PeriodicSource | None = None
    graph: GraphSection | None = None
    cadr: CadrSection | None = None
    collector: CollectorSection = msgspec.field(default_factory=CollectorSection)
    cpr: CprSection = msgspec.field(default_factory=CprSection)
    secure_sum: SecureSumSection | None = None
    gcdp: GcdpSection | None = None
    faults: FaultsSection | None = None
    broker: BrokerSection = msgspec.field(default_factory=BrokerSection)


def _path_of(text: str) -> str:
    """Turn msgspec's ``$.stream.eps`` / unknown-field wording into ``stream.eps``."""
    import re

    at = re.search(r"- at `\$\.?([^`]*)`", text)
    named = re.search(r"field `([^`]*)`", text)
    parts = [p for p in ((at.group(1) if at else ""), (named.group(1) if named else "")) if p]
    return ".".join(parts) or "(top level)"


# names a key is often written as (no near miss finds them): key -> the scenario's name
_ALIASES = {"window": "w", "epsilon": "eps", "num_devices": "devices", "n_devices": "devices"}
# a [stream] key or a section that looks like a plugin's parameters
_PARAMETER_WORDS = ("param", "option", "arg", "kwarg")


def _parameter_hint(parts: list[str]) -> str:
    """``; a mechanism takes no parameters from the scenario ...`` for an unknown key of
    [stream] or an unknown section that looks like a mechanism's parameters
    (``mechanism_params``, ``[mechanism]``), else ''. Every side builds ``Cls(eps)`` from
    the name alone (docs/mechanisms.md, "Parameters: a subclass per setting")."""
    name = parts[-1].lower()
    in_stream = len(parts) == 2 and parts[0] == "stream"
    looks = any(word in name for word in _PARAMETER_WORDS) or name.startswith("mechanism_")
    section = len(parts) == 1 and (looks or name.startswith("mechanism"))
    if not ((in_stream and looks) or section):
        return ""
    return (
        "; a mechanism takes no parameters from the scenario (the device and the collector "
        "each build Cls(eps) from stream.mechanism alone): fix them in a subclass whose "
        "constructor takes eps alone and name that class, a subclass per setting "
        '(docs/mechanisms.md, "Parameters: a subclass per setting")'
    )


def explain_invalid(message: str, key: str, toml_text: str) -> str:
    """msgspec's validation ``message`` about ``key`` made helpful: an unknown key or
    section gets "did you mean" and the valid names, an enum its allowed values, a range
    or type error the value given."""
    import tomllib

    try:
        raw = tomllib.loads(toml_text)
    except tomllib.TOMLDecodeError:  # msgspec parsed it: not expected
        raw = {}
    parts = [part for part in re.split(r"\.|\[\d+\]", key) if part]
    if "unknown field" in message and parts:
        owner = _struct_at(parts[:-1], raw)
        if owner is None:
            return message
        if len(parts) == 1 and not isinstance(raw.get(parts[0]), dict):
            return _top_level_key(parts[0], raw.get(parts[0]))
        names = list(owner.__struct_fields__)
        if owner.__struct_config__.tag_field:  # [source]: its kind
            names.insert(0, owner.__struct_config__.tag_field)
        where = f"[{'.'.join(parts[:-1])}]" if len(parts) > 1 else "the scenario file"
        what = "key" if len(parts) > 1 else "section"
        close = (
            [_ALIASES[parts[-1]]]
            if parts[-1] in _ALIASES and _ALIASES[parts[-1]] in names
            else difflib.get_close_matches(parts[-1], names, n=1, cutoff=0.6)
        )
        hint = _parameter_hint(parts)  # then `mechanism_params` is not a typo of `mechanism`
        guess = f"did you mean `{close[0]}`? " if close and not hint else ""
        return (
            f"unknown {what} `{parts[-1]}` in {where}; {guess}valid: {', '.join(names)} "
            f"(docs/scenarios.md lists every key){hint}"
        )
    value = _raw_value(_key_parts(key), raw)
    if message.startswith("Invalid") and "value" in message:
        allowed, numeric = _allowed_values(parts, raw)
        if allowed:
            close = difflib.get_close_matches(str(value), [str(a) for a in allowed], n=1)
            listed = ", ".join(json.dumps(a) for a in allowed)
            return (
                f"{value!r} is not allowed; allowed: {listed}"
                + (" or a number" if numeric else "")
                + (f" (did you mean {json.dumps(close[0])}?)" if close else "")
            )
        return message
    if message.startswith("Expected") and value is not _MISSING:
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        typed = re.fullmatch(r"(Expected .*), got `(\w+)`", message)
        if typed:  # a wrong type: show the value too ('eps = "2"' said only "got `str`")
            kind = typed.group(2)
            return f"{typed.group(1)}, got {shown} ({'an' if kind[0] in 'aeiou' else 'a'} {kind})"
        if ", got" not in message:
            return f"{message}, got {shown}"
    return message


_MISSING = object()


def _key_parts(key: str) -> list[str | int]:
    """``source.bounds[0]`` -> ``["source", "bounds", 0]``."""
    return [int(index) if index else name for name, index in re.findall(r"(\w+)|\[(\d+)\]", key)]


def _raw_value(parts: list[str], raw: dict):
    """The value at ``key`` in the parsed TOML, or ``_MISSING``; ``parts`` may hold list
    indices (``["source", "bounds", 0]``: the bad item, not the whole list)."""
    node = raw
    for part in parts:
        index = isinstance(part, int) and isinstance(node, list) and 0 <= part < len(node)
        if not (index or (isinstance(part, str) and isinstance(node, dict) and part in node)):
            return _MISSING
        node = node[part]
    return node


def _field_type(owner: type, name: str):
    """A struct field's type without ``Annotated`` and ``None``."""
    hint = typing.get_type_hints(owner, include_extras=True).get(name)
    if typing.get_origin(hint) is Annotated:  # a union with its on-load rule (_on_load)
        hint = typing.get_args(hint)[0]
    union = typing.get_origin(hint) in (typing.Union, UnionType)
    return [o for o in (typing.get_args(hint) if union else (hint,)) if o is not type(None)]


def _top_level_key(key: str, value: object) -> str:
    """A ``key = value`` above every section header (TOML's top level), which msgspec
    calls an unknown field of the file: name it as a key and the sections that have it
    (``seed = 3`` above ``[scenario]`` was an "unknown section `seed`")."""
    shown = json.dumps(value) if isinstance(value, str | int | float | bool) else repr(value)
    owners = []
    for section in Scenario.__struct_fields__:
        for struct in _field_type(Scenario, section):
            if isinstance(struct, type) and issubclass(struct, _Section):
                fields = (*struct.__struct_fields__, struct.__struct_config__.tag_field)
                if key in fields and f"[{section}]" not in owners:
                    owners.append(f"[{section}]")
    where = (
        f"it belongs under {' or '.join(owners)}: move it below that header"
        if owners
        else "no section has that key (docs/scenarios.md lists every key)"
    )
    return (
        f"`{key} = {shown}` is a key outside any section (above the first [section] "
        f"header); {where}"
    )


def _struct_at(parts: list[str], raw: dict) -> type | None:
    """The schema struct of the section at ``parts`` (the tagged ``[source]`` chosen by
    its ``kind``); None when it cannot be told."""
    owner: type = Scenario
    for depth, part in enumerate(parts):
        if part not in owner.__struct_fields__:
            return None
        structs = [
            o for o in _field_type(owner, part) if isinstance(o, type) and issubclass(o, _Section)
        ]
        if len(structs) > 1:
            kind = _raw_value([*parts[: depth + 1], "kind"], raw)
            structs = [o for o in structs if o.__struct_config__.tag == kind]
        if len(structs) != 1:
            return None
        owner = structs[0]
    return owner


def _allowed_values(parts: list[str], raw: dict) -> tuple[list, bool]:
    """The literal values the field at ``parts`` allows, and whether a number is allowed
    too (``shards = 2`` or ``"auto"``). A tagged section's ``kind``: its tags."""
    if not parts:
        return [], False
    if parts[-1] == "kind":
        owner_field = _struct_at(parts[:-2], raw) if len(parts) > 1 else None
        if owner_field is not None and parts[-2] in owner_field.__struct_fields__:
            tags = [
                o.__struct_config__.tag
                for o in _field_type(owner_field, parts[-2])
                if isinstance(o, type) and issubclass(o, _Section) and o.__struct_config__.tag
            ]
            if tags:
                return tags, False
    owner = _struct_at(parts[:-1], raw)
    if owner is None or parts[-1] not in owner.__struct_fields__:
        return [], False
    allowed, numeric = [], False
    for option in _field_type(owner, parts[-1]):
        base = typing.get_args(option)[0] if typing.get_origin(option) is Annotated else option
        if typing.get_origin(base) is Literal:
            allowed += list(typing.get_args(base))
        elif base is bool:
            allowed += [True, False]
        elif base in (int, float):
            numeric = True
    return allowed, numeric


@dataclass(frozen=True)
class LoadedScenario:
    """A validated scenario and where it came from (relative data paths resolve there)."""

    spec: Scenario
    path: Path | None
    text: str | None = None  # the TOML it was parsed from (device shards re-read it)

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
        """The connection model ``[fleet] connection`` asks for ("auto": one connection
        per device up to ``DEVICE_CONNECTIONS_AUTO_MAX`` devices, gateways beyond)."""
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
        bases += [scenario_path.parent, scenario_path.parent.parent]
    bases.append(Path.cwd())
    found = next((base / candidate for base in bases if (base / candidate).exists()), None)
    if found is None and inside is not None and (data_root() / inside).exists():
        found = data_root() / inside
    return found or candidate


def _looked_in(path: str, scenario_path: Path | None) -> str:
    """`` (looked in A, B, C)``: where ``resolve_data_path`` looked for a relative ``path``
    it did not find, in its order; "" for an absolute one."""
    candidate = Path(path).expanduser()
    if candidate.is_absolute():
        return ""
    inside = _inside_data(candidate)
    if inside is not None and os.environ.get(DATA_ENV):
        return f" (looked in {data_root() / inside}, as {DATA_ENV} is set)"
    bases = [scenario_path.parent, scenario_path.parent.parent] if scenario_path else []
    places = [base / candidate for base in (*bases, Path.cwd())]
    if inside is not None:
        places.append(data_root() / inside)
    return f" (looked in {', '.join(str(place) for place in places)})"


def _inside_data(path: Path) -> Path | None:
    """``uci-occupancy/x.txt`` for ``data/uci-occupancy/x.txt``; None outside ``data/``."""
    parts = path.parts
    return Path(*parts[1:]) if len(parts) > 1 and parts[0] == "data" else None


# the session's ParameterError fields, as [secure_sum] names them
SECAGG_FIELDS = {"k": "neighbors", "degree": "neighbors"}
# the fixed point's fields that are one item of [secure_sum] clip
CLIP_FIELDS = ("clip_low", "clip_high")


def _check_secagg_session(loaded: LoadedScenario, devices: int) -> None:
    """Build the ``[secure_sum]`` session's server once, as the stage will (its graph,
    neighbours and threshold for ``devices`` devices): a bad ``neighbors`` or
    ``threshold`` is refused when the scenario loads, not as a traceback after the
    stream stage. The SecAgg+ graph's degrees, hence the threshold's limits, depend on n
    and k only, not on the random labelling."""
    section = loaded.spec.secure_sum
    assert section is not None
    # the full graph's server is O(n^2): check its two settings on a 2-node graph's terms
    if section.graph == "full":
        _check_full_graph(section.neighbors, section.threshold, devices)
        threshold = section.threshold or graphs.default_threshold(devices)
    else:
        threshold = SecAggServer(
            "check",
            "s0",
            [f"d{i}" for i in range(devices)],
            section.dim,
            loaded.fixed_point(),
            graph=section.graph,
            degree=section.neighbors,
            threshold=section.threshold,
        ).threshold
    graphs.check_dropout_survivors(section.dropout, devices, threshold)


def _check_full_graph(neighbors: int | None, threshold: int | None, devices: int) -> None:
    """``SecAggServer``'s refusals for the full graph on ``devices`` nodes (every device
    holds n shares: its n - 1 neighbours' and its own), without building the graph."""
    if neighbors is not None and neighbors != devices - 1:
        raise ParameterError(
            f"the full graph has degree n - 1 = {devices - 1}, got {neighbors}",
            field="degree",
            limit=f"n - 1 = {devices - 1} (the full graph)",
            value=neighbors,
        )
    if threshold is not None and not devices < 2 * threshold <= 2 * devices:
        raise ParameterError(
            f"must be an integer with {devices} < 2t and t <= {devices} (share holders "
            f"per device: neighbours + itself), got {threshold!r}",
            field="threshold",
            limit=f"an integer with {devices} < 2t and t <= {devices}",
            value=threshold,
        )


def _check_collector(collector: CollectorSection, where: str) -> None:
    """``credit_window <= max_in_flight``: the stream collector refused it when the run
    started, with a traceback (found by the boundary sweep: credit_window = 4096, the
    reference's limit, against the default max_in_flight = 256)."""
    if collector.credit_window > collector.max_in_flight:
        raise ScenarioError(
            f"{where}collector.credit_window: must be <= collector.max_in_flight "
            f"({collector.max_in_flight}: a device's credits are reports in flight at the "
            f"collector), got {collector.credit_window}",
            limit=f"<= collector.max_in_flight ({collector.max_in_flight})",
        )


def _check_faults(spec: Scenario, where: str) -> None:
    faults = spec.faults
    assert faults is not None and spec.fleet is not None and spec.stream is not None
    crashing = round(faults.crash_fraction * spec.fleet.devices)
    if faults.never_return > crashing:
        raise ScenarioError(
            f"{where}faults.never_return: {faults.never_return} exceeds the {crashing} "
            "crashing devices (crash_fraction x fleet.devices)",
            limit=f"<= {crashing} (crash_fraction x fleet.devices)",
        )
    low, high = faults.crash_between
    if not 0 <= low <= high <= 1:
        raise ScenarioError(
            f"{where}faults.crash_between: need 0 <= low <= high <= 1 (fractions of the "
            f"stream), got [{low:g}, {high:g}]",
            limit="0 <= low <= high <= 1",
        )
    if crashing and spec.stream.step_seconds <= 0:
        raise ScenarioError(
            f"{where}faults.crash_fraction: crashes need a paced stream (stream.step_seconds "
            "> 0): an unpaced device reports its whole stream at once; got crash_fraction = "
            f"{faults.crash_fraction:g} ({crashing} of {spec.fleet.devices} devices) with "
            f"stream.step_seconds = {spec.stream.step_seconds:g}",
            limit="round(crash_fraction x fleet.devices) = 0 unless stream.step_seconds > 0",
        )


def _check_finite(spec: Scenario, where: str) -> None:
    """Every number of a scenario is finite: TOML's ``inf`` passed the one-sided limits
    (``run_timeout > 0``) and results.json, which records the scenario, then held
    ``Infinity``, which is not JSON. Lists (bounds, clip) have their own checks."""
    for section in Scenario.__struct_fields__:
        value = getattr(spec, section)
        if not isinstance(value, _Section):
            continue
        for name in value.__struct_fields__:
            number = getattr(value, name)
            if isinstance(number, float) and not math.isfinite(number):
                raise ScenarioError(
                    f"{where}{section}.{name}: must be a finite number (TOML's inf and nan "
                    f"are refused; a long deadline is a large number such as 1e6), got {number}",
                    limit="a finite number",
                )


def parse_scenario(text: str, path: Path | None = None) -> LoadedScenario:
    """Validate scenario TOML text; ``ScenarioError`` says which key is wrong and why (in
    its message, and as ``field``, ``value`` and ``limit``: ``_name_the_field``)."""
    where = f"{path}: " if path else ""
    try:
        return _parse_scenario(text, path, where)
    except ScenarioError as error:
        _name_the_field(error, where, text if isinstance(text, str) else "")
        raise


def _parse_scenario(text: str, path: Path | None, where: str) -> LoadedScenario:
    """``parse_scenario``'s checks, in order (the first refusal raises)."""
    if not isinstance(text, str):  # a Path was "'PosixPath' object has no attribute 'encode'"
        raise ScenarioError(
            f"{where}parse_scenario takes the scenario's TOML text (a str), got "
            f"{type(text).__name__} {text!r:.60}; for a file or a built-in name use "
            "load_scenario(path_or_name)",
            limit="TOML text (a str)",
        )
    try:
        spec = msgspec.toml.decode(text.encode(), type=Scenario)
    except msgspec.ValidationError as error:
        key = _path_of(str(error))
        reason = str(error).split(" - at")[0]
        explained = explain_invalid(reason, key, text)
        limit = _validation_limit(reason, explained)
        raise ScenarioError(f"{where}{key}: {explained}", limit=limit) from None
    except msgspec.DecodeError as error:
        raise ScenarioError(f"{where}not valid TOML: {error}", limit="valid TOML") from None
    _check_finite(spec, where)
    url_problem = broker_url_problem(spec.broker.url)
    if url_problem is not None:
        raise ScenarioError(f"{where}broker.url: {url_problem}", limit=BROKER_URL_RULE)
    loaded = LoadedScenario(spec, path, text)
    if spec.cadr is not None or spec.graph is not None:
        return _check_cadr(loaded, where)
    missing = [name for name in ("fleet", "stream", "source") if getattr(spec, name) is None]
    if missing:
        raise ScenarioError(
            f"{where}{missing[0]}: a stream scenario needs [fleet], [stream] and [source] "
            "(a CADR-LDP scenario needs [graph] and [cadr] instead)",
            limit="required: [fleet], [stream] and [source]",
        )
    _check_source_bounds(spec, where)
    _check_mechanism(spec, where)
    try:
        loaded.stream_config("check")
    except ParameterError as error:
        limit = _stream_rule(error.field)
        raise ScenarioError(f"{where}stream.{error.field}: {error.reason}", limit=limit) from None
    _check_collector(spec.collector, where)
    cpr = spec.cpr
    if cpr != CprSection() and spec.stream.reconstruct != "cpr":  # set keys: what a user wrote
        raise ScenarioError(
            f'{where}cpr: [cpr] configures reconstruct = "cpr" only; stream.reconstruct is '
            f"{spec.stream.reconstruct!r}, so it would be ignored (remove [cpr] or set "
            'reconstruct = "cpr")',
            limit='stream.reconstruct = "cpr"',
        )
    longest = spec.stream.steps // cpr.min_cycles
    if cpr.min_period > max(2, longest):  # 2: the default, always allowed
        raise ScenarioError(
            f"{where}cpr.min_period: need min_period <= steps / min_cycles = {longest} "
            f"(CPR claims a period only with at least {cpr.min_cycles} cycles), "
            f"got {cpr.min_period}",
            limit=f"<= steps / min_cycles = {longest}",
        )
    if cpr.max_period is not None and not cpr.min_period <= cpr.max_period <= longest:
        raise ScenarioError(
            f"{where}cpr.max_period: need min_period <= max_period <= steps / min_cycles = "
            f"{longest} (at least {cpr.min_cycles} cycles), got {cpr.max_period}",
            limit=f"min_period <= max_period <= steps / min_cycles = {longest}",
        )
    true_period = getattr(spec.source, "true_period", None)
    if spec.stream.reconstruct == "cpr" and true_period is not None and true_period > longest:
        raise ScenarioError(
            f"{where}source.true_period: CPR claims periods of at most steps / "
            f"cpr.min_cycles = {longest} ({cpr.min_cycles} whole cycles in "
            f"{spec.stream.steps} steps), so every device would score as wrong; run more "
            f"steps or lower cpr.min_cycles (>= 2), got {true_period}",
            limit=f"<= steps / cpr.min_cycles = {longest}",
        )
    if spec.faults is not None:
        _check_faults(spec, where)
    if spec.secure_sum is not None:
        if not 2 <= spec.fleet.devices <= MAX_PARTICIPANTS:
            raise ScenarioError(
                f"{where}fleet.devices: [secure_sum] needs 2..{MAX_PARTICIPANTS} devices, "
                f"got {spec.fleet.devices}",
                limit=f"2 .. {MAX_PARTICIPANTS}",
            )
        if spec.secure_sum.dim > spec.stream.steps:
            raise ScenarioError(
                f"{where}secure_sum.dim: {spec.secure_sum.dim} exceeds stream.steps "
                f"({spec.stream.steps}); the vector is the first dim readings",
                limit=f"<= stream.steps ({spec.stream.steps})",
            )
        try:
            loaded.fixed_point().check_capacity(spec.fleet.devices)
            _check_secagg_session(loaded, spec.fleet.devices)
        except ParameterError as error:
            if error.field in CLIP_FIELDS:  # "secure_sum.clip: clip_high must exceed ..."
                raise ScenarioError(
                    f"{where}secure_sum.clip: {error.field} {error.reason}", limit=BOUNDS_RULE
                ) from None
            field = SECAGG_FIELDS.get(error.field, error.field)
            limit = _schema_rule(SecureSumSection, field) or "a session the stage can run"
            raise ScenarioError(f"{where}secure_sum.{field}: {error.reason}", limit=limit) from None
    if spec.fleet.connection == "bulk":
        _check_bulk(loaded, where)
    elif spec.collector.trace == "none":
        raise ScenarioError(
            f'{where}collector.trace: "none" (no trace recorder) is only for fleet.connection '
            f'= "bulk"; every other run records its trace ("all" or "control"), got "none"',
            limit='one of "all", "control" (unless fleet.connection = "bulk")',
        )
    if not compatible(spec.stream.reconstruct, spec.stream.mechanism):
        raise ScenarioError(
            f"{where}stream.reconstruct: {spec.stream.reconstruct!r} cannot reconstruct "
            f"{spec.stream.mechanism!r} reports (cpr/sw/sw_moving/sw_filter need sw or sw01; "
            "laplace needs laplace)",
            limit=_reconstruct_rule(spec.stream.mechanism),
        )
    try:
        loaded.source_spec()
    except SourceError as error:
        looked = _looked_in(spec.source.path, loaded.path) if "not found" in str(error) else ""
        limit = _source_rule(type(spec.source), error.field)
        raise ScenarioError(f"{where}{error}{looked}", limit=limit) from None
    if spec.gcdp is not None:
        _check_gcdp(loaded, where)
    _check_stream_lengths(spec.stream, where)  # after [gcdp]'s own window rule
    return loaded


def _check_stream_lengths(stream: StreamSection, where: str) -> None:
    """``batch_steps`` and ``w`` at most ``steps`` (any run kind). A batch longer than the
    stream cannot be filled (the one batch would hold fewer steps than it says); a w-event
    window longer than the stream is legal DP but gives each report only eps / w where
    w = steps gives eps / steps with the same guarantee (every window of a stream of
    ``steps`` readings is the whole stream): a typo, refused with the value to use."""
    steps = stream.steps
    if stream.batch_steps is not None and stream.batch_steps > steps:
        raise ScenarioError(
            f"{where}stream.batch_steps: at most stream.steps ({steps}): a report carries "
            f"at most the whole stream, got {stream.batch_steps}",
            limit=f"<= stream.steps ({steps})",
        )
    if stream.w is not None and stream.w > steps:
        eps = stream.eps
        spent = (
            f" (each report would get eps / w = {eps:g} / {stream.w} = {eps / stream.w:g} "
            f"instead of eps / steps = {eps / steps:g})"
            if eps is not None
            else ""
        )
        raise ScenarioError(
            f"{where}stream.w: at most stream.steps ({steps}): a window longer than the "
            f"stream protects no more than w = {steps}, the whole stream{spent}; set "
            f"w = {steps} for one budget over the whole stream, got {stream.w}",
            limit=f"<= stream.steps ({steps})",
        )


def _check_bulk(loaded: LoadedScenario, where: str) -> None:
    """``[fleet] connection = "bulk"``: refuse, naming the key, the limit and the value,
    everything bulk gateways cannot do (docs/scenario-reference.md, "Bulk gateways")."""
    spec = loaded.spec
    stream, source = spec.stream, spec.source
    why = 'with fleet.connection = "bulk"'
    if stream.mechanism not in BULK_MECHANISMS:
        raise ScenarioError(
            f"{where}stream.mechanism: bulk gateways privatise with "
            f"{' or '.join(BULK_MECHANISMS)} (vectorised), got {stream.mechanism!r}",
            limit=f"one of {', '.join(json.dumps(m) for m in BULK_MECHANISMS)}",
        )
    if stream.w > MAX_BULK_W:
        raise ScenarioError(
            f"{where}stream.w: at most {MAX_BULK_W} {why} (the gateway's ledger keeps w "
            f"floats per device), got {stream.w}",
            limit=f"<= {MAX_BULK_W}",
        )
    _check_stream_lengths(stream, where)  # before "a multiple of batch_steps"
    batch = loaded.stream_config("check").batch_steps
    if stream.steps % batch:
        raise ScenarioError(
            f"{where}stream.batch_steps: {why} stream.steps ({stream.steps}) must be a "
            f"multiple of batch_steps, got {batch}",
            limit=f"a divisor of stream.steps ({stream.steps})",
        )
    for section in ("secure_sum", "gcdp"):
        if getattr(spec, section) is not None:
            raise ScenarioError(
                f"{where}{section}: a bulk run is a stream stage only; remove [{section}] {why}",
                limit='absent with fleet.connection = "bulk"',
            )
    if spec.faults is not None:
        defaults = FaultsSection()
        for name in FaultsSection.__struct_fields__:
            value = getattr(spec.faults, name)
            if value != getattr(defaults, name):
                raise ScenarioError(
                    f"{where}faults.{name}: bulk gateways inject no faults (crashes, hostile "
                    f"clients, a slow collector); leave it at {getattr(defaults, name)!r} "
                    f"{why}, got {value!r}",
                    limit=f"== {json.dumps(getattr(defaults, name))}",
                )
    if spec.fleet.state_dir != "auto":
        raise ScenarioError(
            f'{where}fleet.state_dir: bulk gateways keep no device state files; leave it "auto" '
            f"{why}, got {spec.fleet.state_dir!r}",
            limit='"auto"',
        )
    if not isinstance(source, SyntheticSource):
        kind = "csv" if isinstance(source, CsvSource) else "periodic"
        raise ScenarioError(
            f'{where}source.kind: bulk gateways generate their readings (kind = "synthetic", '
            f'shape = "sine"), got {kind!r}',
            limit='"synthetic"',
        )
    synthetic = (("shape", "sine"), ("jitter", 0.0), ("phase", "random"))
    for name, allowed in synthetic:
        value = getattr(source, name)
        if value != allowed:
            raise ScenarioError(
                f"{where}source.{name}: bulk gateways' readings are sines with a random phase "
                f"per device: only {allowed!r} {why}, got {value!r}",
                limit=f"== {json.dumps(allowed)}",
            )


def _check_source_bounds(spec: Scenario, where: str) -> None:
    """``source.bounds`` for one column; ``columns`` + ``column_bounds`` for several."""
    src = spec.source
    if isinstance(src, CsvSource) and src.columns is not None:
        if src.bounds is not None:
            raise ScenarioError(
                f"{where}source.bounds: with source.columns each channel has its own "
                "bounds; give source.column_bounds instead",
                limit="absent with source.columns",
            )
        if src.column is not None:
            raise ScenarioError(
                f"{where}source.column: give either source.column or source.columns, not both",
                limit="absent with source.columns",
            )
        channels = len(src.columns)
        if spec.fleet.devices % channels:
            raise ScenarioError(
                f"{where}fleet.devices: {spec.fleet.devices} is not a whole number of rooms "
                f"of {channels} channels (device i = channel i % {channels} of room "
                f"i // {channels})",
                limit=f"a multiple of {channels} (len(source.columns))",
            )
        return
    if isinstance(src, CsvSource) and src.column_bounds is not None:
        raise ScenarioError(
            f"{where}source.column_bounds: only with source.columns", limit="with source.columns"
        )
    if src.bounds is None:
        raise ScenarioError(
            f"{where}source.bounds: required (fixed public [lo, hi])", limit="required: [lo, hi]"
        )
    lo, hi = src.bounds
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        raise ScenarioError(
            f"{where}source.bounds: need finite [lo, hi] with lo < hi, got [{lo}, {hi}]",
            limit="finite lo < hi",
        )
    if not math.isfinite(hi - lo):
        raise ScenarioError(
            f"{where}source.bounds: hi - lo overflows to infinity (the width must be "
            f"finite), got [{lo}, {hi}]",
            limit="hi - lo finite",
        )


def _check_mechanism(spec: Scenario, where: str) -> None:
    """``raw`` (central model) needs ``[gcdp]`` and takes no LDP options; the LDP
    mechanisms need ``eps`` and ``w``."""
    stream = spec.stream
    if stream.mechanism != RAW:
        for name in ("eps", "w"):
            if getattr(stream, name) is None:
                raise ScenarioError(
                    f"{where}stream.{name}: required for mechanism {stream.mechanism!r}",
                    limit=f"required for mechanism {json.dumps(stream.mechanism)}",
                )
        _check_plugin(stream.mechanism, stream.eps, stream.w, where)
        if spec.gcdp is not None:
            raise ScenarioError(
                f"{where}stream.mechanism: [gcdp] is a central release from readings sent in "
                f'the clear; set mechanism = "raw" (got {stream.mechanism!r})',
                limit='"raw" with [gcdp]',
            )
        return
    if spec.gcdp is None:
        raise ScenarioError(
            f'{where}stream.mechanism: "raw" sends readings unprivatised to the collector; '
            "it is only allowed with a [gcdp] section, whose central release is accounted",
            limit='not "raw" without [gcdp]',
        )
    for name in ("eps", "w"):
        if getattr(stream, name) is not None:
            raise ScenarioError(
                f'{where}stream.{name}: mechanism "raw" spends no local budget and has no '
                "w-event window; remove it (the budget is gcdp.eps_rel)",
                limit='absent with mechanism "raw"',
            )
    if stream.reconstruct != "none":
        raise ScenarioError(
            f"{where}stream.reconstruct: {stream.reconstruct!r} reconstructs LDP reports; "
            'mechanism "raw" reports are not privatised (use reconstruct = "none")',
            limit='"none" with mechanism "raw"',
        )


def _check_plugin(name: str, eps: float, w: int, where: str) -> None:
    """The mechanism resolves, takes the per-report budget eps0 = eps / w and passes the
    contract's sample check (``protocol.mechanism_contract``). A constructor refusing eps0
    is told where that number comes from (the user wrote eps, not eps0), and so is a
    mechanism failing its sample check there (``eps = 1e-20``: the estimate overflowed)."""
    import warnings

    from ldpfleet.protocol.mechanisms import UnresolvedMechanism

    eps0 = eps / w
    try:
        check_mechanism_name(name)
    except ParameterError as error:
        raise ScenarioError(
            f"{where}stream.mechanism: {error.reason}", limit=_mechanism_name_rule()
        ) from None
    if eps0 < EPS_MIN:  # every mechanism refuses it: name the key the user wrote
        raise ScenarioError(
            f"{where}stream.eps: each report spends stream.eps / stream.w = {eps:g} / {w} = "
            f"{eps0:g}, below {EPS_MIN:g}, the smallest budget per report the mechanisms "
            f"compute without degenerating (p == q or an overflowing estimate); need "
            f"stream.eps >= {EPS_MIN * w:g} at w = {w}, got {eps!r}",
            limit=f">= {EPS_MIN * w:g} (stream.eps / stream.w >= {EPS_MIN:g})",
        )
    try:
        with warnings.catch_warnings():  # the check's verdict says it: no numpy warnings
            warnings.simplefilter("ignore", RuntimeWarning)
            mechanism_in_time(name, eps0)  # a plugin that blocks: refused past a limit
    except ParameterError as error:
        reason = error.reason
        names = _mechanism_name_rule()
        if "is not a built-in" in reason:  # a name, not a budget problem: a near miss?
            message = f"{where}stream.mechanism: {reason}{_near_miss(name)}"
            raise ScenarioError(message, limit=names) from None
        if isinstance(error, UnresolvedMechanism):  # no class yet: no budget involved
            raise ScenarioError(f"{where}stream.mechanism: {reason}", limit=names) from None
        if f"refused eps = {eps0:g}" in reason:
            reason += f" (the budget of one report, stream.eps / stream.w = {eps:g} / {w})"
        else:
            reason += (
                f" (checked at the budget of one report, stream.eps / stream.w = {eps:g} / {w}"
                f" = {eps0:g})"
            )
        limit = f"a mechanism that accepts eps0 = stream.eps / stream.w = {eps0:g}"
        raise ScenarioError(f"{where}stream.mechanism: {reason}", limit=limit) from None


def _mechanism_name_rule() -> str:
    """The accepted mechanism names, as a limit."""
    from ldpfleet.protocol.mechanisms import STREAM_MECHANISMS

    return (
        f"one of {', '.join(json.dumps(m) for m in STREAM_MECHANISMS)}, "
        '"package.module:Class" or an ldpfleet.mechanisms entry point'
    )


def _stream_rule(field: str | None) -> str:
    """The limit of a ``StreamConfig`` refusal naming ``field``."""
    if field == "bounds":
        return BOUNDS_RULE
    if field == "mechanism":
        return _mechanism_name_rule()
    rule = _schema_rule(StreamSection, field) if field else None
    return rule or "the stream stage's rule (protocol.stream.StreamConfig)"


def _reconstruct_rule(mechanism: str) -> str:
    """The ``stream.reconstruct`` values that can read ``mechanism``'s reports, as a limit."""
    options = typing.get_args(_field_type(StreamSection, "reconstruct")[0])
    allowed = [option for option in options if compatible(option, mechanism)]
    return f"one of {', '.join(json.dumps(option) for option in allowed)}"


# what a source setting must be when the data refuses it (``SourceError.field``)
_SOURCE_RULES = {
    "source.path": "an existing, readable data file",
    "source.column": "a numeric column of the file",
    "source.columns": "numeric columns of the file",
}


def _source_rule(owner: type, field: str | None) -> str:
    """The limit of a ``SourceError`` naming ``field`` (a source setting)."""
    if field in _SOURCE_RULES:
        return _SOURCE_RULES[field]
    name = (field or "").removeprefix("source.")
    return _schema_rule(owner, name) or "readable data matching the [source] settings"


def _near_miss(name: str) -> str:
    """`` (did you mean "laplace"?)`` for a mechanism name close to a built-in's (case
    ignored: "SW") or to a name an installed package registers ("krr-gredy"), else ""."""
    from ldpfleet.protocol.mechanisms import mechanism_names

    try:
        known = list(mechanism_names())  # the built-ins first, then the entry points
    except Exception:  # a broken installed distribution: the built-ins only
        from ldpfleet.protocol.mechanisms import STREAM_MECHANISMS

        known = list(STREAM_MECHANISMS)
    close = [b for b in known if b == name.lower()] or difflib.get_close_matches(
        name.lower(), known, n=1, cutoff=0.6
    )
    return f" (did you mean {json.dumps(close[0])}?)" if close else ""


def _check_gcdp(loaded: LoadedScenario, where: str) -> None:
    """``[gcdp]``: a csv source (layout "column", or "rows": one node per row), at least one
    window, a readable calibration file laid out like the fleet (the fleet's columns and the
    utility column; in the "rows" layout a row per node)."""
    from ldpfleet.devices.sources import replay_cycles

    spec = loaded.spec
    section = spec.gcdp
    if not isinstance(spec.source, CsvSource):
        raise ScenarioError(
            f"{where}source.kind: [gcdp] calibrates on a data file laid out like the fleet: "
            'needs kind = "csv" (layout = "column": a column per channel, or "rows": a row '
            "per node)",
            limit='"csv" with [gcdp]',
        )
    if spec.fleet.devices > MAX_RELEASE:
        raise ScenarioError(
            f"{where}fleet.devices: a GC-DP release has one coordinate per device, at most "
            f"{MAX_RELEASE}; got {spec.fleet.devices}",
            limit=f"<= {MAX_RELEASE} with [gcdp]",
        )
    if spec.stream.steps < section.window:
        raise ScenarioError(
            f"{where}gcdp.window: {section.window} exceeds stream.steps ({spec.stream.steps}); "
            "no window would be released",
            limit=f"<= stream.steps ({spec.stream.steps})",
        )
    if section.utility_column is not None and spec.source.missing == "drop":
        raise ScenarioError(
            f'{where}source.missing: "drop" removes the calibration file\'s time steps with a '
            "gap from the channels but not from gcdp.utility_column's labels, which would no "
            'longer line up; use "previous" or "interpolate"',
            limit='one of "refuse", "previous", "interpolate" with gcdp.utility_column',
        )
    try:
        calibration = loaded.calibration_spec()
    except SourceError as error:  # the file itself, or a setting of the fleet's source
        whose = "" if error.field == "source.path" else f" ({error.field} of the fleet)"
        raise ScenarioError(
            f"{where}gcdp.calibration_path: {error.reason}{whose}",
            limit="a readable data file laid out like the fleet's source",
        ) from None
    source_path = resolve_data_path(spec.source.path, loaded.path)  # as the devices read it
    for field, path in (("source.path", source_path), ("gcdp.calibration_path", calibration.path)):
        try:  # windows are consecutive records: a shuffled file averaged unrelated minutes
            check_date_order(path)
        except ValueError as error:
            raise ScenarioError(f"{where}{field}: {error}", limit="records in date order") from None
    if spec.source.layout == "rows":
        _check_gcdp_rows(loaded, calibration, where)
    names, _ = table_columns(calibration.path, calibration.header)
    records = replay_cycles(calibration, 1)["records"]
    length = section.calibration_steps or records
    if length > records:  # a cycled public file adds no information, only M x length floats
        raise ScenarioError(
            f"{where}gcdp.calibration_steps: {calibration.path} holds {records} records "
            f"(time steps) per node; more would replay them again, adding nothing but memory "
            f"(devices x steps values): need at most {records}, got {length}",
            limit=f"<= {records} (the calibration file's records)",
        )
    if length < max(section.window, 8):
        raise ScenarioError(
            f"{where}gcdp.calibration_steps: need at least max(window, 8) = "
            f"{max(section.window, 8)} calibration records, got {length}",
            limit=f">= max(window, 8) = {max(section.window, 8)}",
        )
    if section.utility_column is not None and section.utility_column not in names:
        dropped = dropped_columns(calibration.path, calibration.header)
        if section.utility_column in dropped:  # there, but not numbers ("yes" / "no")
            value, line, _ = dropped[section.utility_column]
            raise ScenarioError(
                f"{where}gcdp.utility_column: {section.utility_column!r} of "
                f"{calibration.path} holds {value!r} on line {line}: the labels must be the "
                "numbers 0 and 1 (recode the column)",
                limit="a column of the numbers 0 and 1",
            )
        raise ScenarioError(
            f"{where}gcdp.utility_column: {section.utility_column!r} is not a column of "
            f"{calibration.path} (columns: {', '.join(names)})",
            limit=f"one of {', '.join(json.dumps(n) for n in names)}",
        )
    if section.utility_column is not None:
        try:  # every value of the label column must be a number (the others' are checked)
            CsvSpec(calibration.path, section.utility_column, header=calibration.header)
        except SourceError as error:
            reason = error.reason
            if reason.startswith("missing value ") and ": set source.missing" in reason:
                # source.missing fills the channels, never the labels (the refusal's hint
                # named a setting that does not apply to this column)
                reason = (
                    reason.split(": set source.missing", 1)[0] + ": the labels are never "
                    "filled (source.missing applies to the channels): give every "
                    "calibration row its label, or remove the row from the file"
                )
            raise ScenarioError(
                f"{where}gcdp.utility_column: {reason}",
                limit="a column of the numbers 0 and 1, on every row",
            ) from None


def _check_gcdp_rows(loaded: LoadedScenario, calibration: CsvSpec, where: str) -> None:
    """``[gcdp]`` over a "rows" source: node i is row i of ``source.path`` and is
    calibrated on row i of ``gcdp.calibration_path`` (the same sensor in the same order), so
    each file needs a row per device; the rows hold no time-aligned label column and are
    replayed from their first value (no calibration stride)."""
    spec, section = loaded.spec, loaded.spec.gcdp
    devices = spec.fleet.devices
    if section.utility_column is not None:
        raise ScenarioError(
            f'{where}gcdp.utility_column: a "rows" file (a row per node) has no label column '
            f"lined up with its time steps; got {section.utility_column!r}: leave it unset "
            '(mu = 1) or use layout = "column" with the labels as a column',
            limit='unset with source.layout = "rows"',
        )
    if section.calibration_stride:
        raise ScenarioError(
            f'{where}gcdp.calibration_stride: the "rows" layout replays each row from its '
            f"first value, so a stride would be ignored; need 0, got {section.calibration_stride}",
            limit='0 with source.layout = "rows"',
        )
    source = loaded.source_spec()
    for field, spec in (("source.path", source), ("gcdp.calibration_path", calibration)):
        rows = table_columns(spec.path, spec.header)[1]
        if rows < devices:
            field = "fleet.devices" if field == "source.path" else field
            raise ScenarioError(
                f'{where}{field}: {spec.path} has {rows} rows and the "rows" layout makes '
                f"row i node i, so at most {rows} devices (a device past the last row would "
                f"replay another node's row); got fleet.devices = {devices}",
                limit=f"fleet.devices <= {rows} (the file's rows)",
            )
        _refuse_sensor_ids(spec, min(rows, devices), f"{where}{field}")


def _refuse_sensor_ids(spec: CsvSpec, rows: int, where: str) -> None:
    """A "rows" file whose first column numbers its first ``rows`` rows (the nodes':
    0..n-1 or 1..n) holds sensor ids, and one whose first row numbers its columns a header
    of time steps detected as data: the layout would replay them as readings. Refused."""
    from ldpfleet.devices.sources import csv_stream, replay_cycles

    def numbered(values: list[float]) -> int | None:
        if len(values) >= 3:  # two values 0, 1 could be readings
            for start in (0, 1):
                if values == [float(start + i) for i in range(len(values))]:
                    return start
        return None

    first = [float(csv_stream(spec, i, rows, 1)[0][0]) for i in range(rows)]
    start = numbered(first)
    if start is not None:
        raise ScenarioError(
            f"{where}: the first column of {spec.path} holds {start}, {start + 1}, ..., "
            f'{start + rows - 1} down its first {rows} rows: a sensor id, which the "rows" '
            "layout would replay as each node's first reading; remove it (for a "
            "comma-separated file: cut -d, -f2- FILE > NEW)",
            limit="no sensor-id column",
        )
    records = replay_cycles(spec, 1)["records"]
    start = numbered([float(v) for v in csv_stream(spec, 0, rows, records)[0]])
    if start is not None:
        raise ScenarioError(
            f"{where}: the first line of {spec.path} holds {start}, {start + 1}, ..., "
            f"{start + records - 1}: a header of time-step numbers, read as data (node 0's "
            "readings); remove the line, or set source.header = true, which applies to "
            "gcdp.calibration_path too (both files then need the header line)",
            limit="no line of time-step numbers read as data",
        )


def _check_cadr(loaded: LoadedScenario, where: str) -> LoadedScenario:
    """A CADR-LDP scenario: [graph] and [cadr], none of the stream sections."""
    spec = loaded.spec
    if spec.graph is None or spec.cadr is None:
        raise ScenarioError(
            f"{where}a CADR-LDP scenario needs both [graph] and [cadr]",
            field="graph" if spec.graph is None else "cadr",
            limit="required: [graph] and [cadr]",
        )
    stream_only = ("fleet", "stream", "source", "secure_sum", "faults", "gcdp")
    extra = [name for name in stream_only if getattr(spec, name)]
    if spec.cpr != CprSection():  # [cpr] has defaults: set keys are what a user wrote
        extra.append("cpr")
    if extra:
        raise ScenarioError(
            f"{where}{extra[0]}: a CADR-LDP scenario's fleet is its graph and it runs no "
            f"stream stage; remove [{extra[0]}] (it would be ignored)",
            limit="absent in a CADR-LDP scenario",
        )
    _check_graph_source(loaded, where)
    return loaded


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


def _builtin_near_miss(path: Path) -> str:
    """``; did you mean the built-in `quickstart`?`` for a missing ``quickstrat`` (bare or
    under ``scenarios/``), else ""."""
    from ldpfleet.scenarios.builtin import builtin_scenarios

    if len(path.parts) > 2 or (len(path.parts) == 2 and path.parts[0] != "scenarios"):
        return ""
    names = [scenario.name for scenario in builtin_scenarios()]
    close = difflib.get_close_matches(path.stem.replace("_", "-"), names, n=1, cutoff=0.75)
    return f"; did you mean the built-in `{close[0]}`?" if close else ""


def load_scenario(path: str | Path) -> LoadedScenario:
    """Read and validate a scenario file, or the built-in scenario of that name
    (``quickstart``; ``ldpfleet scenarios`` lists them)."""
    path = find_scenario(path)
    if not path.exists():
        raise ScenarioError(
            f"scenario file {path} does not exist{_builtin_near_miss(path)} (`ldpfleet "
            "scenarios` lists the built-in ones, which run by name: `ldpfleet run quickstart`)",
            limit="an existing file or a built-in scenario's name",
        )
    if not path.is_file():
        raise ScenarioError(
            f"{path} is a directory, not a scenario file (a .toml file)",
            limit="a file, not a directory",
        )
    try:
        text = path.read_text(encoding="utf-8-sig")  # a byte-order mark (Windows) dropped
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(
            f"scenario file {path} cannot be read: {exc}", limit="a readable UTF-8 file"
        ) from None
    return parse_scenario(text, path)
