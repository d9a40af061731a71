"""Stream-stage analytics: per-device mean estimates and stream reconstructions.

Post-processing only (no privacy cost). Mean estimates are the mechanism's own
``estimate_mean`` of each device's reports (unbiased by the mechanism contract), mapped back
to physical units with the public bounds. Reconstructions
(``collector.reconstruct``: CPR or a baseline) run per device; a fleet's streams are
spread over a process pool (one worker per core) since each stream is independent.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

import numpy as np
from ldpfleet.collector.cpr import CprConfig
from ldpfleet.collector.reconstruct import Reconstruction, reconstruct
from ldpfleet.protocol.stream import StreamConfig
from ldpfleet.protocol.sw import denormalise

PARALLEL_FROM = 64  # streams; below this a pool costs more than it saves


def mean_estimates(config: StreamConfig, streams: dict[str, np.ndarray]) -> dict[str, float]:
    """Per device, the estimated mean of its clipped stream in physical units: the run's
    mechanism's ``estimate_mean`` (any mechanism of ``protocol.mechanism_contract``)."""
    mechanism = config.mechanism_object()
    return {
        device: float(denormalise(mechanism.estimate_mean(values), config.lo, config.hi))
        for device, values in streams.items()
        if len(values)
    }


sw_mean_estimates = mean_estimates  # the name before mechanisms were pluggable


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
    return [_reconstruct_one(job, reports) for reports in chunk]


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
        return {d: _reconstruct_one(job, streams[d]) for d in devices}
    chunks = [devices[i :: workers * 4] for i in range(workers * 4)]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        futures = [
            pool.submit(_reconstruct_chunk, job, [streams[d] for d in chunk]) for chunk in chunks
        ]
        out: dict[str, Reconstruction] = {}
        for chunk, future in zip(chunks, futures, strict=True):
            out.update(zip(chunk, future.result(), strict=True))
    return {d: out[d] for d in devices}


def save_reconstructions(
    path, config: StreamConfig, reconstructions: dict[str, Reconstruction]
) -> None:
    """``OUT/reconstructions.npz``: per device its reconstruction (physical units) and, for
    CPR, its template; keys ``{device}`` and ``{device}.template``."""
    arrays: dict[str, np.ndarray] = {}
    for device, result in reconstructions.items():
        arrays[device] = denormalise(result.values, config.lo, config.hi)
        if result.template is not None:
            arrays[f"{device}.template"] = denormalise(result.template, config.lo, config.hi)
    np.savez_compressed(path, **arrays)
