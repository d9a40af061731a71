"""End-to-end privacy audit of the SW stream path through the real fleet (issue 7, item 3).

Theory of operation. The function-level battery entries (``stream``, ``devices``) call the
mechanism classes directly; a bug anywhere else on the path a report travels (the fleet's
per-device generators, the reporter's batching, the codec, the transport) is invisible to
them. Here every trial is a real fleet run's output as it crossed the broker:

* A world is ONE fleet run of a programmatically built stream scenario on the in-memory
  transport (``scenarios.runner.run_scenario``: broker + trace recorder + collector + fleet)
  with ``2 n`` devices, ``steps = batch_steps = w``, mechanism ``sw`` at the claimed eps
  (w-event: eps over any w consecutive steps, eps / w per step). The source is a two-row
  csv file written to a temporary directory (``layout = "rows"``: device ``i`` replays row
  ``i % 2``), so the readings reach the devices through the scenario's ordinary source and
  public bounds, with no hook in production code:

  - device ``2k`` is canary ``k``: it reads the lower bound ``lo`` (world D) or the upper
    bound ``hi`` (world D') at every step, i.e. 0 vs 1 after the device's normalisation;
  - device ``2k + 1`` is its partner: it reads ``lo`` in both worlds.

  Canary ``k``'s trial output is the pair (its w reported values, its partner's w values).
* The values are read back from ``OUT/trace.sqlite`` only: every recorded ``sw_report`` is
  decoded with the project codec (``protocol.codec.decode``) and attributed to the device
  of its topic; the first copy of each (device, seq) counts. Never from the collector's
  store, results or the device objects: the audit sees exactly what crossed the broker. A
  step with no report (a ledger refusal: nothing leaves the device) scores -1, as in the
  battery's ``stream`` entry.
* Four runs, as ``collector.audit.core.audit`` draws them: selection D, selection D',
  evaluation D, evaluation D', each seeded by its own child of
  ``numpy.random.SeedSequence(seed).spawn(4)`` (the child's generator draws the scenario
  seed). ``trials`` canaries per world are split ``trials // 2`` (selection run) and the
  rest (evaluation run); ``audit_samples`` picks the witness, threshold and direction on the
  selection runs and certifies it on the evaluation runs (Clopper-Pearson, gamma).
* Witnesses: the canary's number of reports inside 0's SW window ``|y| <= b(eps / w)``, its
  mean report (the battery's ``stream`` witnesses), and ``partner equal``: 1 when the canary's
  window equals its partner's. With independent per-device generators two SW windows are
  equal with probability 0; a fleet that hands every device the same generator makes them
  equal in D (same readings) and different in D' (different readings): the ``devices``
  entry's pairing, end to end.

Importing this module registers it in the battery as ``fleet-stream``, right after the
function-level entries (``ldpfleet audit`` imports it; ``ldpfleet audit fleet-stream --eps 1
--trials N``: N canary devices per world, 2 N devices per world over its two runs).
docs/audit-e2e.md has the measured figures and the planted bugs it catches.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from ldpfleet.collector.audit.battery import FUNCTION_LEVEL, register
from ldpfleet.protocol.errors import ParameterError

if TYPE_CHECKING:
    from ldpfleet.collector.audit.battery import AuditSpec
    from ldpfleet.collector.audit.core import AuditResult

__all__ = [
    "BOUNDS",
    "DEFAULT_TRIALS",
    "FLEET_W",
    "FleetWorld",
    "fleet_scenario",
    "fleet_stream_spec",
    "run_fleet_audit",
    "run_world",
    "trace_windows",
]

FLEET_W = 5  # w = steps = batch_steps: one report per device, one w-window per trial
BOUNDS = (15.0, 35.0)  # public bounds in physical units: world D reads lo, world D' reads hi
DEFAULT_TRIALS = 4000  # canary devices per world (2,000 + 2,000): 16,000 devices, ~8 s
STAGE_TIMEOUT = 120.0  # seconds: a run whose reports never arrive closes (lost reports)
REFUSED = -1.0  # the score of a step with no report (the ledger refused it)


@dataclass(frozen=True)
class FleetWorld:
    """One fleet run's trial outputs and what the run reported about itself."""

    outputs: np.ndarray  # (n canaries, 2, w): [canary window, partner window], NaN = no report
    seed: int
    devices: int
    reports_decoded: int
    reports_conflicting: int  # duplicate (device, seq) copies whose values differ
    reports_lost: int  # as counted by the collector (missing from its store)
    seconds: float
    run: str


def _check_pairs(pairs: int) -> int:
    if isinstance(pairs, bool) or not isinstance(pairs, int) or pairs < 1:
        raise ParameterError(
            f"must be an integer >= 1, got {pairs!r}",
            field="trials",
            limit="an integer >= 1",
            value=pairs,
        )
    return pairs


def fleet_scenario(
    eps: float,
    pairs: int,
    csv_path: Path,
    *,
    seed: int,
    w: int = FLEET_W,
    bounds: tuple[float, float] = BOUNDS,
    stage_timeout: float = STAGE_TIMEOUT,
):
    """The validated scenario of one world: ``2 pairs`` devices replaying the two rows of
    ``csv_path`` (device ``i`` row ``i % 2``), SW at ``eps`` over windows of ``w`` steps."""
    from ldpfleet.scenarios.schema import parse_scenario

    lo, hi = bounds
    text = f"""
[scenario]
name = "audit-fleet-stream"
seed = {int(seed)}
description = "e2e audit: canary devices 2k read a constant, partners 2k+1 read lo"

[fleet]
devices = {2 * _check_pairs(pairs)}

[stream]
steps = {w}
eps = {float(eps)!r}
w = {w}
mechanism = "sw"
batch_steps = {w}

[source]
kind = "csv"
path = {json.dumps(csv_path.as_posix())}
layout = "rows"
bounds = [{float(lo)!r}, {float(hi)!r}]

[collector]
stage_timeout = {float(stage_timeout)!r}
idle_timeout = {float(stage_timeout)!r}
"""
    return parse_scenario(text)


def write_readings(path: Path, canary: float, partner: float, w: int) -> Path:
    """The two-row source file: row 0 the canary's w readings, row 1 the partner's."""
    rows = [[canary] * w, [partner] * w]
    path.write_text("\n".join(",".join(repr(float(v)) for v in row) for row in rows) + "\n")
    return path


def trace_windows(trace: Path, devices: list[str], w: int) -> tuple[np.ndarray, int, int]:
    """Each device's first ``w`` reported values as recorded in ``trace`` (rows in
    ``devices`` order; NaN where no report crossed the broker), decoded with the project
    codec. Returns (values, reports decoded, conflicting duplicate copies)."""
    from ldpfleet.broker.trace import TraceFilter, open_readonly, rows
    from ldpfleet.protocol import codec
    from ldpfleet.protocol.errors import RemoteProtocolError
    from ldpfleet.protocol.messages import SwReport

    index = {device: i for i, device in enumerate(devices)}
    values = np.full((len(devices), w), np.nan)
    first: dict[tuple[str, int], list[float]] = {}
    decoded = conflicting = 0
    db = open_readonly(trace)
    try:
        for row in rows(db, TraceFilter(kind="sw_report")):
            try:
                message = codec.decode(row.payload)
            except RemoteProtocolError:
                continue  # not a report the collector could have accepted either
            if not isinstance(message, SwReport) or row.sender not in index:
                continue
            decoded += 1
            key = (row.sender, message.seq)
            if key in first:
                conflicting += first[key] != message.values
                continue
            first[key] = message.values
            t0 = message.t0
            if t0 >= w:
                continue
            chunk = np.asarray(message.values[: w - t0], dtype=float)
            values[index[row.sender], t0 : t0 + chunk.size] = chunk
    finally:
        db.close()
    return values, decoded, conflicting


def _run_sync(coro):
    """``asyncio.run`` here, or in a worker thread when called from a running loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def run_world(
    eps: float,
    pairs: int,
    canary_reading: float,
    seed: int,
    *,
    w: int = FLEET_W,
    bounds: tuple[float, float] = BOUNDS,
    partner_reading: float | None = None,
    out_dir: Path | None = None,
    stage_timeout: float = STAGE_TIMEOUT,
    broker: str = "memory",
) -> FleetWorld:
    """One fleet run with ``pairs`` canary/partner device pairs on ``broker`` (default the
    in-memory transport; ``embedded`` or an MQTT URL as for ``ldpfleet run``); the trial
    outputs are read back from its trace. ``out_dir`` keeps the run's outputs (default: a
    temporary directory, removed afterwards)."""
    from ldpfleet.scenarios.runner import run_scenario

    partner = bounds[0] if partner_reading is None else partner_reading
    with tempfile.TemporaryDirectory(prefix="ldpfleet-audit-") as tmp:
        out = Path(out_dir) if out_dir is not None else Path(tmp) / "out"
        out.mkdir(parents=True, exist_ok=True)
        csv_path = write_readings(Path(tmp) / "readings.csv", canary_reading, partner, w)
        scenario = fleet_scenario(
            eps, pairs, csv_path, seed=seed, w=w, bounds=bounds, stage_timeout=stage_timeout
        )
        started = time.perf_counter()
        results = _run_sync(run_scenario(scenario, broker=broker, out_dir=out, seed=seed))
        seconds = time.perf_counter() - started
        devices = scenario.device_ids()
        values, decoded, conflicting = trace_windows(out / "trace.sqlite", devices, w)
    return FleetWorld(
        outputs=np.stack([values[0::2], values[1::2]], axis=1),
        seed=seed,
        devices=len(devices),
        reports_decoded=decoded,
        reports_conflicting=conflicting,
        reports_lost=int(results["reports_lost"]),
        seconds=seconds,
        run=results["run"],
    )


def _scored(y) -> np.ndarray:
    arr = np.asarray(y, dtype=float)
    return np.where(np.isnan(arr), REFUSED, arr)


def _canary(y) -> np.ndarray:
    return _scored(y)[:, 0, :]


def _partner_equal(y) -> np.ndarray:
    arr = np.asarray(y, dtype=float)
    same = np.all(arr[:, 0, :] == arr[:, 1, :], axis=1)  # NaN (no report) is never equal
    return same.astype(float)


def fleet_stream_spec(eps: float, delta: float = 0.0) -> AuditSpec:
    """The ``fleet-stream`` battery entry: canary devices of real in-memory fleet runs,
    lower bound vs upper bound readings, values from the trace (module docstring).
    ``extra["runs"]`` collects a ``FleetWorld`` summary per run."""
    from ldpfleet.collector.audit.battery import AuditSpec
    from ldpfleet.collector.audit.core import Canary
    from ldpfleet.protocol.sw import sw_b

    w = FLEET_W
    lo, hi = BOUNDS
    b0 = sw_b(eps / w)
    runs: list[dict] = []

    def sampler(reading: float):
        def sample(rng: np.random.Generator, n: int) -> np.ndarray:
            seed = int(rng.integers(0, 2**63 - 1))
            world = run_world(eps, n, reading, seed, w=w)
            runs.append(
                {
                    "reading": reading,
                    "seed": seed,
                    "devices": world.devices,
                    "reports_decoded": world.reports_decoded,
                    "reports_conflicting": world.reports_conflicting,
                    "reports_lost": world.reports_lost,
                    "seconds": world.seconds,
                }
            )
            return world.outputs

        return sample

    # "partner equal" first: the first witness wins ties, and when every device draws the
    # same noise each canary witness is constant within a run, so it ties with the pairing
    # at selection (perfect separation or none) and would be certified on runs where it
    # means nothing; in a correct fleet the pairing is never hit and never wins.
    witnesses = {
        "partner equal": _partner_equal,
        "reports near 0": lambda y: np.sum(np.abs(_canary(y)) <= b0, axis=1).astype(float),
        "mean report": lambda y: _canary(y).mean(axis=1),
    }
    canary = Canary(
        f"fleet canaries read {lo:g} vs {hi:g} (bounds [{lo:g}, {hi:g}]), partners {lo:g}",
        sampler(lo),
        sampler(hi),
        description="in-memory fleet runs; reports decoded from trace.sqlite",
    )
    return AuditSpec(
        "fleet-stream",
        canary,
        witnesses,
        eps,
        delta=delta,
        trials=DEFAULT_TRIALS,
        notes="end to end: w-event SW reports as recorded on the broker (in-memory)",
        extra={"w": w, "bounds": BOUNDS, "runs": runs},
    )


def run_fleet_audit(
    eps: float,
    *,
    trials: int = DEFAULT_TRIALS,
    delta: float = 0.0,
    gamma: float = 0.05,
    seed: int = 0,
) -> tuple[AuditResult, dict]:
    """The ``fleet-stream`` audit with its run log: ``trials`` canary devices per world
    (half in the selection run, half in the evaluation run). Returns (result, extra) where
    ``extra["runs"]`` lists the four fleet runs and ``extra["seconds"]`` the total time."""
    from ldpfleet.collector.audit.battery import audit_spec

    spec = fleet_stream_spec(eps, delta)
    started = time.perf_counter()
    result = audit_spec(spec, trials=trials, gamma=gamma, seed=seed)
    return result, {**spec.extra, "seconds": time.perf_counter() - started}


# the battery's end-to-end entry, right after the function-level ones (the collector layer
# cannot import this module: it runs whole scenarios)
register("fleet-stream", fleet_stream_spec, after=FUNCTION_LEVEL[-1])
