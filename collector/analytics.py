"""Stream-stage analytics: per-device mean estimates and stream reconstructions.

Post-processing only (no privacy cost). Mean estimates are the mechanism's own
``estimate_mean`` of each device's reports (unbiased by the mechanism contract), mapped back
to physical units with the public bounds. Reconstructions
(``collector.reconstruct``: CPR or a baseline) run per device; a fleet's streams are
spread over a process pool (one worker per core) since each stream is independent.

Reconstruction as devices complete (``IncrementalReconstructor``): a stream is final once
its device is complete (every batch persisted), so its reconstruction need not wait for
the stage to end. The collector hands each complete device's persisted stream to the pool
while the stage still runs and, at the end, reconstructs only what is left (devices that
never completed, or were complete before a collector restart). The outcome is the same
function of the same persisted values either way, so the reconstructions are identical;
what changes is when the work happens (issue 23: a partition worker reconstructs its
devices during the stream instead of after it).
"""

from __future__ import annotations

import logging
import math
import os
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from ldpfleet.collector.cpr import CprConfig, cpr_many
from ldpfleet.collector.npz_files import NpzWriter
from ldpfleet.collector.pools import quiet_pool, stop_pool
from ldpfleet.collector.reconstruct import Reconstruction, reconstruct
from ldpfleet.protocol.device_noise import by_device_noise
from ldpfleet.protocol.ledger import within_budget
from ldpfleet.protocol.mechanism_contract import mean_problem
from ldpfleet.protocol.stream import StreamConfig
from ldpfleet.protocol.sw import denormalise

log = logging.getLogger(__name__)

PARALLEL_FROM = 64  # streams; below this a pool costs more than it saves
INCREMENTAL_CHUNK = 64  # complete streams handed to the pool at once while the stage runs


def _process_pool(workers: int) -> ProcessPoolExecutor:
    """The platform's default pool (fork on Linux). Not a fork server or spawn: those
    re-import the user's ``__main__`` in every worker, which re-runs an unguarded script
    that called the runner. A forked worker holds copies of the collector's sockets until
    the pool shuts down (at the end of the reconstruction, before the collector closes its
    connections), which is harmless there. Its workers ignore SIGINT (``collector.pools``):
    Ctrl-C during a reconstruction stops the pool from the parent, without a traceback."""
    return quiet_pool(workers)


def mean_estimates(
    config: StreamConfig, streams: dict[str, np.ndarray], warnings: list[str] | None = None
) -> dict[str, float]:
    """Per device, the estimated mean of its clipped stream in physical units: the run's
    mechanism's ``estimate_mean`` (any mechanism of ``protocol.mechanism_contract``).

    A user mechanism's ``estimate_mean`` that raises or answers a non-finite number for a
    device's reports (the load-time check saw only its 256-input probe) leaves that device
    out, so its ``mean_estimate`` is null and the accuracy figures skip it, with one warning
    naming the devices: never a traceback after the whole run, never an ``Infinity`` in
    results.json. Given a ``warnings`` list, the sentence is appended to it (the collector
    puts it in its results, the runner in results.json ``warnings`` and on the console) and
    logged at INFO only; otherwise it is logged as a warning."""
    mechanism = config.mechanism_object()
    means: dict[str, float] = {}
    failed: dict[str, str] = {}
    for device, values in streams.items():
        if not len(values):
            continue
        try:
            value = mechanism.estimate_mean(values)
        except Exception as error:  # a plugin may raise anything
            failed[device] = f"{type(error).__name__}: {error}"
            continue
        problem = mean_problem(value)  # the load-time check's rule: a finite real number
        mean = math.nan if problem else float(denormalise(float(value), config.lo, config.hi))
        if math.isfinite(mean):
            means[device] = mean
        else:  # not a real number, or one so large that physical units overflow
            failed[device] = problem or f"returned {value!r}, not finite in physical units"
    if failed:
        sentence = mean_failure_warning(config.mechanism, failed)
        if warnings is None:
            log.warning("%s", sentence)
        else:
            warnings.append(sentence)
            log.info("%s", sentence)
    return means


def mean_failure_warning(mechanism: str, failed: dict[str, str]) -> str:
    """One sentence for every device whose ``estimate_mean`` failed: the count, the
    first three devices with their reasons, and what it means for results.json."""
    shown = "; ".join(f"{d}: {why}" for d, why in sorted(failed.items())[:3])
    more = f"; and {len(failed) - 3} more" if len(failed) > 3 else ""
    return (
        f"mechanism {mechanism!r} estimate_mean failed for {len(failed)} device(s) "
        f"({shown}{more}); their mean_estimate is null and the accuracy figures skip them"
    )


sw_mean_estimates = mean_estimates  # the name before mechanisms were pluggable


def accuracy_baselines(
    estimates: dict[str, float],
    truths: dict[str, float],
    lo: float,
    hi: float,
    groups: dict[str, object] | None = None,
) -> dict:
    """results.json ``accuracy.baselines``: what a private per-device mean is worth.

    ``truths`` are the simulator's clipped non-private means (the target every estimate is
    scored against), ``[lo, hi]`` the public bounds the estimates live in. Two references,
    on the devices that have both an estimate and a truth: ``constant`` guesses the
    midpoint of the public bounds for every device (no data at all), ``fleet_mean`` the
    average of the private estimates of the device's group for every device (post-processing,
    no privacy cost; ``groups`` maps a device to its group, e.g. its channel of a
    multi-column source, whose units differ: ``value`` is then per group; one group by
    default). ``beats_constant`` says whether the per-device estimates' mean absolute
    error is below the constant's: at a small eps0 over few readings it is not, and the
    per-device figures are noise. ``clipped_to_bounds`` scores the same estimates clipped to
    ``[lo, hi]`` (post-processing: every truth lies there, so no error grows; the unbiased
    estimates stay in ``per_device`` for averaging). None entries when no device has both."""
    devices = _scored_devices(estimates, truths)
    if not devices:
        return {
            "devices": 0,
            "constant": None,
            "fleet_mean": None,
            "beats_constant": None,
            "clipped_to_bounds": None,
        }
    est = np.array([estimates[d] for d in devices], dtype=float)
    true = np.array([truths[d] for d in devices], dtype=float)
    middle = (float(lo) + float(hi)) / 2
    group = [(groups or {}).get(d) for d in devices]
    channels = _by_channel(devices, groups)
    fleet = {g: float(np.mean([estimates[d] for d in members])) for g, members in channels.items()}
    guess = np.array([fleet[g] for g in group])
    value = fleet[group[0]] if len(fleet) == 1 else {str(g): v for g, v in fleet.items()}
    constant_error = float(np.mean(np.abs(true - middle)))
    clipped_errors = np.abs(np.clip(est, min(lo, hi), max(lo, hi)) - true)
    return {
        "devices": len(devices),
        "constant": {"value": middle, "mean_abs_error": constant_error},
        "fleet_mean": {"value": value, "mean_abs_error": float(np.mean(np.abs(true - guess)))},
        "beats_constant": bool(np.mean(np.abs(est - true)) < constant_error),
        "clipped_to_bounds": {
            "mean_abs_error": float(np.mean(clipped_errors)),
            "max_abs_error": float(np.max(clipped_errors)),
            "beats_constant": bool(np.mean(clipped_errors) < constant_error),
        },
    }


def _scored_devices(estimates: dict[str, float], truths: dict[str, float]) -> list[str]:
    """The devices with both a private estimate and a truth, in ``truths``' order: what
    ``accuracy_baselines`` and ``fleet_average`` score."""
    return [d for d in truths if d in estimates and truths[d] is not None]


def _by_channel(devices: list[str], groups: dict[str, object] | None) -> dict[object, list[str]]:
    """``devices`` by channel (``groups``: device -> channel; one channel, None, without),
    channels and devices in first-seen order."""
    channels: dict[object, list[str]] = {}
    for device in devices:
        channels.setdefault((groups or {}).get(device), []).append(device)
    return channels


def fleet_average(
    estimates: dict[str, float],
    truths: dict[str, float],
    groups: dict[str, object] | None = None,
) -> dict | None:
    """results.json ``accuracy.fleet_average``: the fleet-level figure the stream's budget
    is for. ``estimate`` is the average of the devices' private mean estimates (post-
    processing, no privacy cost; the same number as ``baselines.fleet_mean.value``),
    ``true`` the average of their clipped true means (``truths``: what the simulator
    knows, as for ``mean_abs_error``), ``abs_error`` the distance between them, and
    ``standard_error`` what a collector can state without the truth: the sample standard
    deviation of the private estimates over √devices. It is conservative (the devices'
    real spread is in it too) and needs two devices (None with one). Scored on the
    devices that have both an estimate and a truth; one entry, or one per channel of a
    multi-column source keyed by channel index (``groups``, as ``accuracy_baselines``).
    None when no device has both."""
    devices = _scored_devices(estimates, truths)
    if not devices:
        return None
    channels = _by_channel(devices, groups)
    entries = {
        str(g): _average_entry(members, estimates, truths) for g, members in channels.items()
    }
    return next(iter(entries.values())) if len(entries) == 1 else entries


def _average_entry(devices: list[str], estimates: dict, truths: dict) -> dict:
    """``fleet_average``'s figures for one channel's ``devices``."""
    est = np.array([estimates[d] for d in devices], dtype=float)
    true = float(np.mean([truths[d] for d in devices]))
    estimate = float(est.mean())
    spread = float(est.std(ddof=1)) / math.sqrt(est.size) if est.size > 1 else None
    return {
        "devices": int(est.size),
        "estimate": estimate,
        "true": true,
        "abs_error": abs(estimate - true),
        "standard_error": spread,
    }


# the stream claim's trust in the seed (``privacy_entry``), by ``[privacy] device_noise``
# (devices.noise_entropy; chosen by ``protocol.device_noise.by_device_noise``, as the CADR
# claim's: "os" none, None — a split run's collector, which cannot tell — the unknown one)
SEEDED_NOISE_CAVEAT = (
    "against an observer without the run's seed: each device's noise generator is seeded "
    'from it ([privacy] device_noise = "seeded"), so whoever holds the seed can replay '
    "and remove every report's noise"
)
UNKNOWN_NOISE_CAVEAT = (
    "the devices' noise source is the fleet side's own choice, which the collector cannot "
    'tell: with [privacy] device_noise = "seeded" the claim holds only against an observer '
    "without the run's seed"
)


# What else the collector of a stream run sees, declared public (privacy review V2,
# 2026-12-07): the claim covers the reports' values; these facts are covered by no ε and
# are stated as public (``privacy_entry``'s ``public``), each named by its wire kind.
STREAM_PUBLIC = (
    "device ids (topic levels, sender fields) and which devices took part",
    "hello: the run's mechanism, eps, w, eps0, steps, batch_steps and public bounds lo, hi",
    "sw_report: besides the privatised values, t0 and seq (the public step schedule)",
    "budget_refused: the step a device's ledger refused and its remaining budget (a "
    "function of the public schedule)",
    "withdraw: that a device stopped after a final rejection of its own message",
    "connects, disconnects and last-will messages (dropouts), each message's arrival time, "
    "size and retransmissions (side channels, docs/reliability.md: out of scope)",
)
# the same for a bulk run (``scenarios.bulk_run``): the gateways speak for their devices
BULK_PUBLIC = (
    "device ids and each bulk gateway's range of them (gateway, first, count)",
    "bulk_hello: the run's mechanism, eps, w, eps0, steps, batch_steps and public bounds",
    "bulk_report: besides each row's privatised values, its device, seq and eps0",
    "each message's arrival time, size and retransmissions (side channels, "
    "docs/reliability.md: out of scope)",
)
RAW_SEEN_IN_CLEAR = (
    "every reading, unprivatised: the collector (collector.sqlite), the broker and the "
    "trace recorder (trace.sqlite, signed, in the run's output) hold them; only the [gcdp] "
    "release is differentially private"
)
# A device copy that starts without its saved state re-privatises steps the collector may
# already hold (``protocol.stream.StreamCollector`` refuses a second copy of a batch with
# other values as a replay, but only after receiving it): identical with seeded noise, two
# independent reports of the same readings with noise of the device's own entropy.
FRESH_COPY_CAVEAT = (
    'a device restarted without its saved state ([fleet] state_dir = "off", a lost '
    "device-state.sqlite, the same shard started twice) privatises its steps again with "
    "fresh noise: the collector may receive both copies of a batch (it refuses the second "
    "as a replay, after receiving it), so those steps are spent twice; rejections_by_reason "
    "counts them under replay"
)


def privacy_entry(
    ledger: dict,
    config: StreamConfig,
    device_noise: str | None = "seeded",
    *,
    public: tuple[str, ...] = STREAM_PUBLIC,
    fresh_copies: bool = True,
) -> dict:
    """results.json ``privacy``: the claim the run states and what the devices' ledgers
    spent (``ledger``: ledger.json's document, ``scenarios.runner.ledger_document``).

    ``claim`` in words; ``eps``, ``w``, ``eps0``, ``mechanism``; ``max_window_spent``: the
    largest spend of any device in any window of ``w`` consecutive steps;
    ``within_budget``: it is at most ``eps`` (``protocol.ledger.within_budget``'s rule);
    ``devices``: the ledgers read. With ``mechanism = "raw"`` the devices spend nothing: the
    claim is the central release's (results.json ``gcdp``), and ``max_window_spent`` /
    ``within_budget`` are its ledger's (ledger.json ``collector``, each account against
    its own eps). ``device_noise``: the devices' noise source ("seeded", "os"; None when
    not known here, a split run's collector): ``claim`` names the trust a seeded run
    needs, and ``device_noise`` records it. ``public``: what else the collector sees,
    stated public (a bulk run: ``BULK_PUBLIC``); ``fresh_copies``: whether a device can
    restart without its state and privatise its steps again (not a bulk gateway), which
    under noise the seed cannot replay is a ``caveats`` entry."""
    worst = float(ledger.get("max_window_spent") or 0.0)
    eps, w = float(config.eps), int(config.w)
    within = within_budget(worst, eps)
    if config.mechanism == "raw":
        claim = (
            "none on the devices: readings are sent unprivatised; the [gcdp] central release "
            f"spends eps = {eps:g} per window of {w} steps (results.json gcdp); "
            "max_window_spent is its ledger's (ledger.json collector)"
        )
        accounts = ((ledger.get("collector") or {}).get("accounts") or {}).values()
        if accounts:
            worst = max(float(a["max_window_spent"]) for a in accounts)
            within = all(
                within_budget(float(a["max_window_spent"]), float(a["eps"])) for a in accounts
            )
    else:
        claim = (
            f"{eps:g}-LDP over any {w} consecutive steps of each device (w-event LDP, "
            f"{config.mechanism} at eps0 = {config.eps0:g} per step), per simulated reading"
        )
        claim += by_device_noise(
            device_noise,
            seeded="; " + SEEDED_NOISE_CAVEAT,
            os="",
            unknown="; " + UNKNOWN_NOISE_CAVEAT,
        )
    return {
        "claim": claim,
        "mechanism": config.mechanism,
        "eps": eps,
        "w": w,
        "eps0": float(config.eps0),
        "devices": len(ledger.get("devices") or {}),
        "max_window_spent": worst,
        "within_budget": within,
        "device_noise": device_noise,
        **_seen_beside_the_claim(config, device_noise, public, fresh_copies),
    }


def _seen_beside_the_claim(
    config: StreamConfig, device_noise: str | None, public: tuple[str, ...], fresh_copies: bool
) -> dict:
    """``privacy_entry``'s statement of what the collector sees beside the claimed values:
    ``public``, ``seen_in_clear`` for a raw stream, and ``caveats`` (``FRESH_COPY_CAVEAT``
    where a device can restart afresh and its noise is not replayable from the seed)."""
    out: dict = {"public": list(public)}
    if config.mechanism == "raw":
        out["seen_in_clear"] = RAW_SEEN_IN_CLEAR
    elif fresh_copies and device_noise != "seeded":
        out["caveats"] = [FRESH_COPY_CAVEAT]
    return out


def note_secure_sum(privacy: dict, secure_sum: dict | None) -> dict:
    """results.json ``privacy`` with what a ``[secure_sum]`` stage revealed beside the
    stream's claim: the exact, un-noised sum of the first ``dim`` clean readings of the
    devices it unmasked (SecAgg+ hides each input, not the sum; docs/secagg.md). The
    w-event LDP ``claim`` covers the stream's reports only, so ``uncovered`` names the sum
    and ``claim`` says that it does not cover it. (Held-out QA, helper T: the claim of
    scenarios/secure-sum.toml read "2-LDP ... per simulated reading" with no word of the
    exact sum of 90 devices' first 16 readings the collector also learnt.)"""
    if not secure_sum or secure_sum.get("aborted") or not secure_sum.get("survivors"):
        return privacy  # no stage, or it aborted before unmasking: no sum was revealed
    uncovered = (
        f"the exact sum, without noise, of the first {secure_sum.get('dim')} clean readings "
        f"of the {secure_sum.get('survivors')} devices the [secure_sum] stage unmasked "
        "(secure aggregation: no single device's vector; not differentially private)"
    )
    claim = f"{privacy['claim']}; not covered: {uncovered}"
    return {**privacy, "claim": claim, "uncovered": uncovered}


@dataclass(frozen=True)
class _Job:
    method: str
    mechanism: str
    eps0: float
    cpr: CprConfig | None = None


def _reconstruct_one(job: _Job, reports: np.ndarray) -> Reconstruction:
    from ldpfleet.protocol.mechanisms import stream_mechanism

    return reconstruct(job.method, reports, stream_mechanism(job.mechanism, job.eps0), job.cpr)


def _reconstruct_chunk(job: _Job, chunk: list[np.ndarray]) -> list[Reconstruction]:
    if job.method == "cpr" and len(chunk) > 1:
        # the same results as stream by stream, with the EM and KDE work of the chunk shared
        # (collector.cpr.cpr_many)
        from ldpfleet.protocol.mechanisms import stream_mechanism

        mechanism = stream_mechanism(job.mechanism, job.eps0)
        return [
            Reconstruction(r.reconstruction, r.period, r.confidence, r.template)
            for r in cpr_many(chunk, mechanism, job.cpr or CprConfig())
        ]
    return [_reconstruct_one(job, reports) for reports in chunk]


def _inline_chunks(
    job: _Job, devices: list[str], streams: dict[str, np.ndarray]
) -> Iterator[tuple[list[str], list[Reconstruction]]]:
    """``devices``' reconstructions in this process, a chunk of ``INCREMENTAL_CHUNK`` at a
    time (the chunk path shares CPR's EM and KDE work; results equal stream by stream)."""
    for start in range(0, len(devices), INCREMENTAL_CHUNK):
        part = devices[start : start + INCREMENTAL_CHUNK]
        yield part, _reconstruct_chunk(job, [streams[d] for d in part])


def _reconstruct_inline(
    job: _Job, devices: list[str], streams: dict[str, np.ndarray]
) -> dict[str, Reconstruction]:
    """``devices``' reconstructions in this process (``_inline_chunks``) as one dict."""
    out: dict[str, Reconstruction] = {}
    for part, results in _inline_chunks(job, devices, streams):
        out.update(zip(part, results, strict=True))
    return out


def reconstruct_streams(
    config: StreamConfig,
    streams: dict[str, np.ndarray],
    method: str,
    *,
    workers: int | None = None,
    cpr: CprConfig | None = None,
) -> dict[str, Reconstruction]:
    """Reconstruct every device's stream (values in [0, 1]); uses ``workers`` processes
    (default: the machine's cores) when there are many streams."""
    job = _Job(method, config.mechanism, config.eps0, cpr)
    devices = [d for d, values in streams.items() if len(values)]
    workers = workers or os.cpu_count() or 1
    if workers == 1 or len(devices) < PARALLEL_FROM:
        return _reconstruct_inline(job, devices, streams)
    chunks = [devices[i :: workers * 4] for i in range(workers * 4)]
    pool = _process_pool(workers)
    try:
        futures = [
            pool.submit(_reconstruct_chunk, job, [streams[d] for d in chunk]) for chunk in chunks
        ]
        out: dict[str, Reconstruction] = {}
        for chunk, future in zip(chunks, futures, strict=True):
            out.update(zip(chunk, future.result(), strict=True))
    except BaseException:  # Ctrl-C or an error: the queued chunks are dropped at once
        stop_pool(pool)
        raise
    pool.shutdown(wait=True)
    return {d: out[d] for d in devices}


def save_reconstructions(
    path, config: StreamConfig, reconstructions: dict[str, Reconstruction]
) -> None:
    """``OUT/reconstructions.npz``: per device its reconstruction (physical units) and, for
    CPR, its template; keys ``{device}`` and ``{device}.template``."""
    with NpzWriter(path) as writer:
        write_reconstructions(writer, config, reconstructions.items())


def write_reconstructions(
    writer: NpzWriter, config: StreamConfig, results: Iterable[tuple[str, Reconstruction]]
) -> None:
    """Append ``(device, reconstruction)`` pairs to a reconstructions file being written
    (``save_reconstructions``' keys and units)."""
    for device, result in results:
        writer.add(device, denormalise(result.values, config.lo, config.hi))
        if result.template is not None:
            writer.add(f"{device}.template", denormalise(result.template, config.lo, config.hi))


class IncrementalReconstructor:
    """Reconstruct complete streams in a process pool while the stage runs.

    ``add(streams)`` hands final streams (device -> persisted values) to the pool in
    chunks of ``chunk`` streams; ``finish(streams)`` reconstructs every device of
    ``streams`` not handed over yet, waits for the pool and returns every reconstruction
    in the order of ``streams`` -- the same dict ``reconstruct_streams`` returns for it.
    A device handed over twice (it cannot be: a device completes once) is reconstructed
    once. ``workers`` defaults to the machine's cores."""

    def __init__(
        self,
        config: StreamConfig,
        method: str,
        *,
        workers: int | None = None,
        cpr: CprConfig | None = None,
        chunk: int = INCREMENTAL_CHUNK,
    ) -> None:
        self.config = config
        self.job = _Job(method, config.mechanism, config.eps0, cpr)
        self.workers = workers or os.cpu_count() or 1
        self.chunk = chunk
        self._pool: ProcessPoolExecutor | None = None
        self._buffer: dict[str, np.ndarray] = {}
        self._futures: deque[tuple[list[str], Future]] = deque()
        self.submitted: set[str] = set()
        self.leftover_chunks = 0  # chunks of streams left at ``finish`` sent to the pool

    @property
    def during_stage(self) -> int:
        """Streams handed to the pool before ``finish``."""
        return len(self.submitted)

    def add(self, streams: dict[str, np.ndarray]) -> None:
        """These devices' streams are final: reconstruct them a full chunk at a time."""
        for device, values in streams.items():
            if device not in self.submitted and len(values):
                self._buffer[device] = values
                self.submitted.add(device)
        while len(self._buffer) >= self.chunk:  # many at once: several chunks, not one big
            self._submit(self.chunk)

    def _submit(self, count: int | None = None) -> None:
        """Send the first ``count`` buffered streams (all by default) to the pool."""
        if not self._buffer:
            return
        if self._pool is None:
            self._pool = _process_pool(self.workers)
        devices = list(self._buffer)[:count]
        chunk = [self._buffer.pop(d) for d in devices]
        self._futures.append((devices, self._pool.submit(_reconstruct_chunk, self.job, chunk)))

    def finish(self, streams: dict[str, np.ndarray]) -> dict[str, Reconstruction]:
        """Reconstruct the rest of ``streams`` and return all of them (blocks: call it off
        the event loop). The rest goes through the same pool, in ``workers * 4``
        interleaved chunks behind the work already queued, so no second pool competes with
        the first for the cores; with no pool started yet and fewer than ``PARALLEL_FROM``
        streams left (or one worker), it is reconstructed here, as ``reconstruct_streams``
        would."""
        out: dict[str, Reconstruction] = {}
        for devices, results in self.finish_chunks(streams):
            out.update(zip(devices, results, strict=True))
        return {d: out[d] for d in streams if d in out}

    def finish_chunks(
        self, streams: dict[str, np.ndarray]
    ) -> Iterator[tuple[list[str], list[Reconstruction]]]:
        """``finish`` a chunk at a time: yields ``(devices, reconstructions)`` as each chunk
        is done (in the order the chunks were queued), keeping none of them, so a caller
        can write them out while the pool works on the rest (blocks: off the event
        loop). The pool stops when the generator ends or is closed."""
        self._submit()
        rest = [d for d, values in streams.items() if d not in self.submitted and len(values)]
        try:
            if rest and self._pool is None and (self.workers == 1 or len(rest) < PARALLEL_FROM):
                yield from _inline_chunks(self.job, rest, streams)
            elif rest:
                self.leftover_chunks = self._submit_rest(rest, streams)
            while self._futures:
                devices, future = self._futures.popleft()
                yield devices, future.result()
        except BaseException:  # Ctrl-C, an error, or the generator closed early
            self.close(stop=True)
            raise
        finally:
            self.close()

    def _submit_rest(self, rest: list[str], streams: dict[str, np.ndarray]) -> int:
        """Queue the leftover streams on the pool (started now if the stage handed it
        nothing); returns how many chunks."""
        if self._pool is None:
            self._pool = _process_pool(self.workers)
        count = min(self.workers * 4, len(rest))
        for i in range(count):
            devices = rest[i::count]
            chunk = [streams[d] for d in devices]
            self._futures.append((devices, self._pool.submit(_reconstruct_chunk, self.job, chunk)))
        return count

    def close(self, *, stop: bool = False) -> None:
        """Stop the pool (pending work is dropped); ``stop``: without waiting for the
        chunks under way (their workers are ended, ``collector.pools.stop_pool``)."""
        if self._pool is not None:
            pool, self._pool = self._pool, None
            if stop:
                stop_pool(pool)
            else:
                pool.shutdown(wait=True, cancel_futures=True)
