"""The collector's GC-DP release stage: calibration, then the pump wiring.

Theory of operation (docs/gcdp-fleet.md). In a ``[gcdp]`` scenario the devices are sensor
nodes (device i = channel i % C of room i // C) that stream readings clipped to FIXED public
per-channel bounds and normalised to [0, 1], in the clear (``mechanism = "raw"``, the
central model: the collector is trusted with the readings and is the one that releases).

* The stage takes a plain ``GcdpStageConfig`` (the scenarios layer builds it from
  ``[gcdp]``: ``scenarios.plans.gcdp_stage_config``).
* At construction, ``load_calibration`` lays the PUBLIC calibration file out exactly like
  the fleet (same columns, same bounds, rooms at ``calibration_stride`` offsets) and
  ``collector.gcdp.calibrate_fleet`` runs Algorithms 1-3 on it (eps_cal = 0): theta is
  fixed before any protected reading arrives.
* The ``CollectorService`` calls ``on_persisted`` with every batch of reports it has
  committed to its store (so only persisted, validated, deduplicated values are released),
  and publishes the machine's outbox (``flush``). The pure ``GcdpReleaser`` decides
  everything: window completion, order, the ledger charge before each noise draw, the
  ``GcdpRelease`` on ``ldp/{run}/rel/gcdp``.
* ``before_publish`` (set by its owner) is called before releases are published, so the
  owner can persist the ledger charges first (the partitioned coordinator writes its
  results.json): nothing published is missing from the persisted account.
* When the stream stage closes, ``finish`` releases the complete windows still queued and
  ``summary`` gives the results.json entry; the collector ledger goes to ledger.json.

Partitions (``[collector] partitions = P > 1``, DESIGN.md "Scale"): each partition worker
runs a ``GcdpShare`` instead of the stage: it files its devices' persisted batches into
windows (the same ``WindowAssembler``) and sends each complete window's node means to the
coordinator (``protocol.partition.GcdpWindowMeans``, on the status topic, so they arrive
before the worker's ``closed``). The coordinator's ``GcdpStage`` (``given_means``) holds the
calibration, the ledger and the releaser: ``receive_means`` hands them to the releaser,
which admits or refuses each message (run, window layout, nodes), files them and
releases window k once every node's mean is in, in window order, with the same generator:
the same means, charges and noise as one collector's. The means, not the readings, cross
the broker: one value per node and window, what the release publishes anyway.

The release generator derives from the scenario seed only (``release_rng``), so a seed
gives the same releases on the in-memory transport, amqtt and Mosquitto.

Limitation: the collector ledger is held in memory. A restarted collector does not feed
the reports it restores from its store to this stage, so windows holding restored data
never complete and are never released a second time; windows entirely after the restart
are released once. The first process's ledger is lost with it (see the docs).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from ldpfleet.broker.pump import publish_outbound
from ldpfleet.broker.transport import Connection
from ldpfleet.collector.gcdp.evaluation import STEP_RATIO, record_timing
from ldpfleet.collector.gcdp.fleet_calibration import FleetTheta, calibrate_fleet
from ldpfleet.collector.gcdp.windows import (
    RELEASE_ACCOUNT,
    GcdpReleaser,
    WindowAssembler,
    WindowReleased,
)
from ldpfleet.devices.noise_entropy import noise_rng
from ldpfleet.devices.sources import (
    CsvSpec,
    closest_name,
    column_name,
    csv_stream,
    missing_summary,
    replay_cycles,
    table_columns,
)
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.ledger import PrivacyLedger
from ldpfleet.protocol.partition import MEANS_CHUNK, GcdpWindowMeans, status_topic
from ldpfleet.protocol.sw import normalise

__all__ = [
    "GcdpShare",
    "GcdpStage",
    "GcdpStageConfig",
    "load_calibration",
    "release_rng",
    "release_warnings",
    "sampling_entry",
    "utility_column",
]

LEDGER_OWNER = "collector"


def release_rng(seed: int, noise: str = "seeded") -> np.random.Generator:
    """The release's generator: a function of the scenario seed only, or with ``noise``
    "os" one seeded from fresh OS entropy (privacy review V, 2026-12-07: the seed is in
    results.json, so a seeded release's noise can be replayed and subtracted): the devices'
    choice of generator (``devices.noise_entropy.noise_rng``) applied to the release."""
    tag = zlib.crc32(b"gcdp_release")
    return noise_rng(noise, lambda: np.random.default_rng(np.random.SeedSequence((int(seed), tag))))


RELEASE_NOISE_NOTE = {
    "seeded": "the release's Laplace noise is drawn from the run's seed (reproducible); "
    "whoever holds the seed and the release can remove the noise, so eps_rel holds only "
    'against an observer without the seed; [privacy] device_noise = "os" draws it from '
    "OS entropy",
    "os": "the release's Laplace noise is drawn from fresh OS entropy, never written",
}


@dataclass(frozen=True)
class GcdpStageConfig:
    """The release stage's settings (``[gcdp]``) and the fleet layout it calibrates on."""

    calibration: CsvSpec  # the PUBLIC calibration file, laid out like the fleet
    node_bounds: tuple[tuple[float, float], ...]  # device i's fixed public bounds
    steps: int  # the stream's length
    window: int
    eps_rel: float
    method: str = "gcdp"
    tau: float = 0.15
    calibration_steps: int | None = None  # default: every record of the file
    utility_column: str | None = None  # the room label column (0/1), if any
    source_path: str | None = None  # the fleet's source file (its sampling is compared)
    # where the release's Laplace noise comes from: "seeded" (``release_rng``: reproducible,
    # so whoever holds the seed can remove it from the published release) or "os"
    # (``[privacy] device_noise = "os"``: fresh OS entropy, never written)
    release_noise: str = "seeded"

    @property
    def nodes(self) -> int:
        """M: the fleet's devices, one released coordinate each."""
        return len(self.node_bounds)


def load_calibration(config: GcdpStageConfig) -> tuple[np.ndarray, np.ndarray | None]:
    """The public calibration matrix (time x M nodes, [0, 1] units, laid out like the
    fleet) and, with ``utility_column``, each node's room labels (time x M, 0/1)."""
    spec = config.calibration
    # default: every record once (rows of the file in the "column" layout, columns in
    # "rows", after missing = "drop"; the file's row count cut a "rows" series short)
    length = config.calibration_steps or replay_cycles(spec, 1)["records"]
    m = config.nodes
    data = np.empty((length, m))
    for i in range(m):
        series, _ = csv_stream(spec, i, m, length)
        data[:, i] = normalise(series, *config.node_bounds[i])
    if config.utility_column is None:
        return data, None
    column = utility_column(config)
    channels = spec.channels
    rooms = -(-m // channels)
    label_spec = CsvSpec(
        path=spec.path,
        column=column,
        stride=spec.stride,
        header=spec.header,
        decimal=spec.decimal,
    )
    room_labels = [
        _room_labels(config, csv_stream(label_spec, r, rooms, length)[0], r, column)
        for r in range(rooms)
    ]
    labels = np.column_stack([room_labels[i // channels] for i in range(m)])
    return data, labels


def utility_column(config: GcdpStageConfig) -> str:
    """``config.utility_column`` as the calibration file's header spells it, matched as
    every column name a scenario gives is (``devices.sources.column_name``: Unicode normal
    form, spaces around it; it was matched exactly, so " Occupancy " copied from the header
    line was "not a column" while ``source.column`` took it). A name that is not a numeric
    column of the file is refused with the same "did you mean" hint as ``source.column``'s
    (``devices.sources.closest_name``)."""
    spec = config.calibration
    names, _ = table_columns(spec.path, spec.header, spec.decimal)
    column = column_name(config.utility_column, names)
    if column not in names:
        raise ParameterError(
            f"{config.utility_column!r} is not a numeric column of {spec.path}"
            f"{closest_name(config.utility_column, names)} (columns: {', '.join(names)})",
            field="gcdp.utility_column",
            limit="a numeric column of the calibration file",
            value=config.utility_column,
        )
    return column


def _room_labels(config: GcdpStageConfig, values: np.ndarray, room: int, column: str) -> np.ndarray:
    """Room ``room``'s calibration labels, checked: 0/1 values (``>= 0.5`` binarised labels
    0/2 or a sensor column silently), and window majorities of both classes (one class gave
    mu_k = 0 for the room's nodes, an allocation on exposure alone, silently)."""
    path = config.calibration.path
    bad = np.flatnonzero((values != 0.0) & (values != 1.0))
    if bad.size:
        raise ParameterError(
            f"{column!r} of {path} must hold 0/1 labels, got {float(values[bad[0]])!r} "
            f"(room {room}'s calibration record {int(bad[0])})",
            field="gcdp.utility_column",
            limit="0/1 labels (value: the first other)",
            value=float(values[bad[0]]),
        )
    window = config.window
    whole = values[: values.size // window * window].reshape(-1, window)
    majority = whole.mean(axis=1) >= 0.5  # window_means' rule (ties -> occupied)
    if majority.size and (majority.all() or not majority.any()):
        raise ParameterError(
            f"every calibration window of room {room} ({majority.size} windows of {window} "
            f"records of {path}) has {column} {int(majority[0])} (the majority of each "
            "window): mu_k = |corr(window mean, label)| needs both classes",
            field="gcdp.utility_column",
            limit="both classes among the window majorities (value: the one class)",
            value=int(majority[0]),
        )
    return values.astype(float)


class GcdpStage:
    """One run's GC-DP release stage on the collector side (a partitioned run's
    coordinator: ``given_means``, fed by ``receive_means``)."""

    def __init__(
        self,
        config: GcdpStageConfig,
        run: str,
        devices: list[str],
        *,
        seed: int,
        given_means: bool = False,
    ) -> None:
        started = time.perf_counter()
        data, labels = load_calibration(config)
        self.theta: FleetTheta = calibrate_fleet(
            data,
            window=config.window,
            eps_rel=config.eps_rel,
            method=config.method,
            tau=config.tau,
            labels=labels,
        )
        self.calibration_seconds = time.perf_counter() - started
        self.calibration_records = data.shape[0]
        # the calibration file's gaps, filled or dropped by ``source.missing`` as the
        # release file's are (results.json ``missing_values`` counts only the latter:
        # before, 450 blanks of a calibration file were carried forward unsaid)
        self.calibration_missing = calibration_missing(config.calibration)
        self.public_baseline = public_baseline(data, self.theta)
        self.sampling = sampling_entry(config.calibration.path, config.source_path, config.window)
        self.ledger = PrivacyLedger(LEDGER_OWNER)
        self.seed = seed
        self.release_noise = config.release_noise
        self.machine = GcdpReleaser(
            run,
            devices,
            self.theta,
            config.steps,
            self.ledger,
            release_rng(seed, config.release_noise),
            given_means=given_means,
        )
        self.releases: dict[int, WindowReleased] = {}
        # called (with the stage) before releases are published, once per batch: where the
        # owner persists their ledger charges (a stopped or killed collector had published
        # releases whose charges were written nowhere)
        self.before_publish: Callable[[GcdpStage], None] | None = None
        self._persisted = 0  # releases the owner persisted (``flush``)

    def on_persisted(self, accepted: list[tuple[str, int, int, list[float], float]]) -> None:
        """Feed (device, seq, t0, values, received) rows that are committed to the store."""
        self.machine.add_many((device, t0, values) for device, _seq, t0, values, _ in accepted)
        self._take_events()

    def receive_means(self, message: GcdpWindowMeans) -> None:
        """A partition worker's node means of one window (``given_means``): the machine
        admits and files them (``GcdpReleaseMachine.receive_means``); a message that does
        not fit (another window layout, an unknown node, a mean given twice) is refused
        there (``RemoteProtocolError``) and counted in ``means_refused``."""
        self.machine.receive_means(message)
        self._take_events()

    @property
    def means_refused(self) -> int:
        """``GcdpWindowMeans`` the machine refused (wrong window, node given twice)."""
        return self.machine.means_refused

    def _take_events(self) -> None:
        for event in self.machine.pop_events():
            if isinstance(event, WindowReleased):
                self.releases[event.window] = event

    async def flush(self, conn: Connection) -> None:
        """Publish the releases the machine has queued, after ``before_publish`` (if set)
        has persisted them: nothing published is missing from the persisted ledger."""
        released = len(self.machine.released)
        if self.before_publish is not None and released != self._persisted:
            self.before_publish(self)
            self._persisted = released
        await publish_outbound(conn, self.machine)

    def finish(self) -> None:
        """The stream stage closed: release what is complete."""
        self.machine.finish()
        self._take_events()

    def released_values(self) -> dict[int, np.ndarray]:
        """Window -> released values (in [0, 1] units, unclipped)."""
        return {k: event.values for k, event in sorted(self.releases.items())}

    def summary(self) -> dict:
        """The results.json ``gcdp`` entry (the runner adds accuracy against the truth)."""
        account = self.ledger.account(RELEASE_ACCOUNT).to_dict()
        return {
            **self.theta.to_dict(),
            "mechanism": "gcdp_laplace",
            "nodes": self.machine.nodes,
            "seed": self.seed,
            "release_noise": self.release_noise,
            "release_noise_note": RELEASE_NOISE_NOTE[self.release_noise],
            "windows_expected": self.machine.n_windows,
            "windows_released": len(self.machine.released),
            "windows_unreleased": self.machine.unreleased(),
            "windows_refused": self.machine.refused,
            "calibration_records": self.calibration_records,
            "calibration_seconds": self.calibration_seconds,
            "calibration_missing": self.calibration_missing,
            "ledger_account": RELEASE_ACCOUNT,
            "ledger_spent_total": account["total_spent"],
            "ledger_per_record_loss": account["max_window_spent"] if self.releases else 0.0,
            "public_baseline": self.public_baseline,
            "sampling": self.sampling,
        }


def calibration_missing(spec: CsvSpec) -> dict:
    """How the calibration file's gaps were handled (``devices.sources.missing_summary``:
    ``missing``, ``values_filled``, ``steps_dropped``, ``steps``, ``by_column``), with
    ``path`` and a ``note`` when any value was filled or any step dropped."""
    entry = {"path": spec.path, **missing_summary(spec)}
    filled, dropped = entry["values_filled"], entry["steps_dropped"]
    if filled:
        how = "carried forward" if entry["missing"] == "previous" else "interpolated"
        entry["note"] = (
            f"{filled} missing values of the calibration file were {how} "
            f"(source.missing = {entry['missing']!r}) before calibrating"
        )
    elif dropped:
        entry["note"] = (
            f"{dropped} of {entry['steps']} calibration time steps had a missing value and "
            'were dropped (source.missing = "drop") before calibrating'
        )
    return entry


def sampling_entry(calibration_path: str, source_path: str | None, window: int) -> dict:
    """The results.json ``gcdp.sampling`` entry: the median seconds between records of the
    calibration file and of the fleet's source file, and of a window's first to last
    record, from their ``date`` columns (``collector.gcdp.evaluation.record_timing``; None
    without one, or without ``source_path``), and a ``note`` when the two differ by more
    than ``STEP_RATIO``: theta (graph, mu_k, budgets) was then fitted on windows of another
    duration than the released ones (a calibration file at 1 min against a source at 5 min
    ran without a word; ``bench gcdp`` states the same in ``protocol.sampling``)."""
    cal_step, cal_span = _timing(calibration_path, window)
    src_step, src_span = _timing(source_path, window) if source_path else (None, None)
    note = None
    if cal_step and src_step and max(cal_step, src_step) > STEP_RATIO * min(cal_step, src_step):
        note = (
            f"the calibration file's records are {cal_step:g} s apart, the source file's "
            f"{src_step:g} s: a window of {window} steps spans {cal_step * window / 60:g} min "
            f"of calibration records and {src_step * window / 60:g} min of source records, so "
            "theta (graph, mu_k, budgets) was fitted on windows of another duration (resample "
            "one file to the other's rate)"
        )
    elif cal_span and src_span and max(cal_span, src_span) > STEP_RATIO * min(cal_span, src_span):
        note = (
            f"both files' median step is about {cal_step:g} s, but a window of {window} steps "
            f"spans {cal_span / 60:.3g} min of calibration records and {src_span / 60:.3g} min "
            "of source records (medians over the windows): records are missing between others "
            "in one file, so theta was fitted on windows of another duration"
        )
    return {
        "calibration_step_s": cal_step,
        "source_step_s": src_step,
        "calibration_window_s": cal_span,
        "source_window_s": src_span,
        "note": note,
    }


def release_warnings(entry: dict | None) -> list[str]:
    """results.json ``warnings`` of a run's ``gcdp`` entry (None: no release): the
    sampling note (``sampling_entry``), which the run summary then prints."""
    note = ((entry or {}).get("sampling") or {}).get("note")
    return [f"gcdp: {note}"] if note else []


def _timing(path: str, window: int) -> tuple[float | None, float | None]:
    """``record_timing`` of a file the scenario's checks have read already; None, None if
    its dates cannot be read here (a "rows" layout, a header-less file)."""
    try:
        return record_timing(path, window)
    except (OSError, ValueError):
        return None, None


def public_baseline(data: np.ndarray, theta: FleetTheta) -> dict:
    """The free baseline beside the release, from public data only: releasing each node's
    calibration mean every window spends nothing and errs, on data like the calibration, by
    the calibration windows' mean absolute deviation from that mean; the release's expected
    |noise| is s_k / eps_k (Laplace). A node whose noise is larger is expected to be
    released less accurately than by the free baseline (20 Occupancy nodes at eps_rel = 1:
    MAE 1.08 against 0.10 on datatest2, helper D's held-out files)."""
    w = theta.window
    usable = data.shape[0] // w * w
    means = data[:usable].reshape(-1, w, data.shape[1]).mean(axis=1)  # >= 1 window (schema)
    centre = means.mean(axis=0)
    mad = np.abs(means - centre).mean(axis=0)
    noise = np.asarray(theta.scales, dtype=float) / np.asarray(theta.budgets, dtype=float)
    noisier = int(np.sum(noise > mad))
    note = None
    if noisier:
        note = (
            f"{noisier} of {noise.size} nodes have an expected |noise| (s_k / eps_k, mean "
            f"{noise.mean():.3g}) above their calibration windows' mean absolute deviation "
            f"(mean {mad.mean():.3g}): releasing the calibration mean, which spends nothing, "
            "is expected to be closer for them (raise eps_rel or the window, or release "
            "fewer nodes)"
        )
    return {
        "what": "release each node's public calibration mean every window (spends nothing)",
        "calibration_mean": centre.tolist(),
        "calibration_window_mad": mad.tolist(),
        "expected_abs_noise": noise.tolist(),
        "nodes_noisier_than_baseline": noisier,
        "note": note,
    }


class GcdpShare:
    """A partition worker's part of the GC-DP stage (module docstring): what the
    ``CollectorService`` calls on a ``GcdpStage``, sending its devices' window means to the
    coordinator instead of releasing. ``summary`` is None: the coordinator releases."""

    def __init__(
        self, run: str, devices: list[str], window: int, steps: int, partition: tuple[int, int]
    ) -> None:
        self.run, self.devices, self.window = run, list(devices), window
        self.partition, self.partitions = partition
        self.index = {device: i for i, device in enumerate(self.devices)}
        self.assembler = WindowAssembler(len(self.devices), window, steps)
        self._outbox: list[bytes] = []
        self.sent = 0  # GcdpWindowMeans published

    def on_persisted(self, accepted: list[tuple[str, int, int, list[float], float]]) -> None:
        """Committed (device, seq, t0, values, received) rows: queue each window they
        complete, its node means in chunks of ``MEANS_CHUNK`` nodes."""
        for device, _seq, t0, values, _ in accepted:
            for k in self.assembler.add(self.index[device], t0, values):
                start, means = self.assembler.take(k)
                for lo in range(0, len(self.devices), MEANS_CHUNK):
                    message = GcdpWindowMeans(
                        run=self.run,
                        sender=topics.COLLECTOR_ID,
                        partition=self.partition,
                        partitions=self.partitions,
                        window=k,
                        t0=start,
                        steps=self.window,
                        nodes=self.devices[lo : lo + MEANS_CHUNK],
                        means=means[lo : lo + MEANS_CHUNK].tolist(),
                    )
                    self._outbox.append(codec.encode(message))

    async def flush(self, conn: Connection) -> None:
        """Publish the queued means (the status topic: before this worker's ``closed``)."""
        queued, self._outbox = self._outbox, []
        if queued:
            topic = status_topic(self.run)
            await conn.publish_many([(topic, payload) for payload in queued])
            self.sent += len(queued)

    def finish(self) -> None:
        """The stage closed: incomplete windows are never sent (nor released)."""

    def summary(self) -> None:
        """Nothing: the coordinator's stage has the release's entry."""
        return None

    def released_values(self) -> dict[int, np.ndarray]:
        """Nothing: the coordinator releases."""
        return {}
