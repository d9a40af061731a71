"""The scenario file's sections: the msgspec structs that are the schema proper.

Each ``[section]`` of a scenario file is one struct here; msgspec checks every key's type
and range when the file is decoded (``scenarios.schema.parse_scenario``), and
``ldpfleet scenario-reference`` documents them from these structs (app/reference.py). A
limit that involves other keys is stated with ``_on_load`` and enforced by the checks
(``scenarios.schema_checks``). ``docs/scenarios.md`` documents every key.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from ldpfleet.collector.period_constants import DEFAULT_MIN_CYCLES
from ldpfleet.protocol.bulk import MAX_BULK_W
from ldpfleet.protocol.cadr_budget import (
    ALPHA_DEFAULT,
    CADR_EPS_MAX,
    CADR_EPS_MIN,
    THETA_EPS_MIN,
    THETA_FRACTION,
    theta_search_min_eps,
)
from ldpfleet.protocol.mechanism_contract import EPS_MIN
from ldpfleet.protocol.messages import MAX_BATCH, MAX_MECHANISM_NAME, MAX_RELEASE
from ldpfleet.protocol.secagg.messages import MAX_PARTICIPANTS, MAX_STAGE_TIMEOUT
from ldpfleet.protocol.topics import MAX_PARTITIONS
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
# of the broker decide). A real broker's rule: on the in-memory broker "auto" is per
# device at any size (no socket to save; plans.run_connection, docs/scaling.md "Auto on
# the memory transport")
DEVICE_CONNECTIONS_AUTO_MAX = 10_000
# [cadr] eps: [CADR_EPS_MIN, CADR_EPS_MAX] (protocol.cadr_budget.check_run_eps, "Range of eps");
# `bench cadr`, `bench cadr-sweep` and the in-process reference take the same range


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
    # devices connecting, or waiting for the collector's first answer, at once (each holds
    # its place until then or retransmit_after seconds: devices/agent.py)
    connect_concurrency: Annotated[int, Meta(ge=1, le=10_000)] = 64
    # device processes (docs/scaling.md): "auto" = one per core for fleets of at least
    # SHARD_AUTO_DEVICES devices on a network broker, else 1 (in the runner's process)
    shards: Annotated[int, Meta(ge=1, le=256)] | Literal["auto"] = "auto"
    # one MQTT connection per device, or gateways carrying gateway_devices devices each
    # over one connection (devices/gateway.py; ACL per device enforced at the gateway);
    # "auto": per device up to DEVICE_CONNECTIONS_AUTO_MAX devices, else gateways (on the
    # memory broker per device at any size, plans.run_connection);
    # "bulk": bulk gateways of gateway_devices devices each, many devices' batches in one
    # message (protocol/bulk.py, scenarios/bulk_run.py; docs/scaling.md "Bulk gateways";
    # what they cannot do is refused on load, ``schema_checks._check_bulk_*``)
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
    # the decimal mark of the file's numbers: "." (3.14) or "," (3,14, a European
    # spreadsheet's export: fields then separated by semicolons or tabs; a number written
    # with a point is not read there, so "1.234" is never taken for 1.234)
    decimal: Literal[".", ","] = "."


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
    # a seeded fraction of the devices crash for good at ``dropout_stage`` of the θ
    # search's secure sum and release nothing after it (docs/cadr.md, "Dropouts");
    # the stages are [secure_sum]'s
    dropout: Annotated[
        float,
        Meta(ge=0, lt=1),
        _on_load(
            "round(dropout x n) >= 1 device (else 0), and leaves at least noise_parties(n) = "
            'ceil(0.9 n) devices; needs pipeline "dp", '
            'method "clip" (or "auto"), a θ search (theta "auto-dev" on a fleet the small-'
            "fleet rule does not exempt) and one collector partition"
        ),
    ] = 0.0
    dropout_stage: Literal[
        "before_keys", "after_keys", "after_shares", "after_masked", "during_unmask"
    ] = "after_shares"


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


class PrivacySection(_Section):
    """``[privacy]``: where the devices' noise comes from (``devices.noise_entropy``):
    "seeded" derives every device's noise generator from the run's seed (reproducible;
    whoever holds the seed can replay the noise: the claims carry a trust row), "os" seeds
    each device's from its own OS entropy, never written anywhere (overridden by
    ``--device-noise``; a fleet side's own choice in a split run, not a run term)."""

    device_noise: Literal["seeded", "os"] = "seeded"


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
    privacy: PrivacySection = msgspec.field(default_factory=PrivacySection)
    broker: BrokerSection = msgspec.field(default_factory=BrokerSection)
