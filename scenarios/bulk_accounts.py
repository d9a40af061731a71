"""The w-event accounts of a bulk run's devices whose gateways left no ledger.

Theory of operation. A bulk gateway keeps its devices' ledgers (``protocol.bulk.
BulkLedger``) in the memory of its gateway-shard process and reports only their summary
(``max_window_spent``) in its outcome. A shard that dies (killed, crashing) or that the
runner stops takes those ledgers with it, although the collectors stored, and aggregate,
the reports its devices delivered before. So that results.json's ``privacy`` section
still covers every device whose reports the collector holds, this module rebuilds each
such device's account from the partitions' stores: every stored row names its device,
its batch (``seq``) and the ``eps0`` it was privatised with, so the device spent ``eps0``
at each of the batch's ``batch_steps`` steps (a batch stored twice counts once, at its
larger ``eps0``, as ``ldpfleet trace verify`` counts it). A device's figure is its largest
spend over any window of ``w`` consecutive steps (the w-event rule; ``BulkLedger``
refuses a batch that would make any window exceed ``eps``).

This is a figure of what the collector saw, not the device's own ledger: a batch the
device privatised but the collector never stored (lost with the shard) is not in it.
``reconstructed_accounts`` says so in its ``how`` sentence and results.json marks the
accounts as reconstructed (docs/scaling.md, "A gateway shard that dies").

The windows are computed per device on batch boundaries only: the spend is constant on
each batch, so a window's spend, as its start ``s`` moves, is piecewise linear with
breaks where ``s`` or ``s + w`` is a multiple of ``batch_steps``; its maximum is at one of
those starts (or at the ends of the range), about two per batch rather than one per step.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
from ldpfleet.protocol.bulk import BulkPlan, stored_dtype
from ldpfleet.protocol.ledger import within_budget

__all__ = ["devices_of_gateways", "reconstructed_accounts", "window_spends"]

CHUNK_CELLS = 1 << 21  # devices x batches held at once (16 MB of float64 per array)


def devices_of_gateways(plan: BulkPlan, gateways) -> np.ndarray:
    """The device indices (ascending) that ``gateways`` carry."""
    ranges = [np.arange(first, first + count) for first, count in map(plan.gateway_range, gateways)]
    return np.sort(np.concatenate(ranges)) if ranges else np.zeros(0, dtype=np.int64)


def window_spends(
    rows: np.ndarray, *, batch_steps: int, w: int, steps: int, chunk: int | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(devices, worst): each device of ``rows`` (stored rows: ``device``, ``seq``,
    ``eps0``; ``seq`` below ``steps // batch_steps``) ascending, and its largest spend over
    any window of ``w`` consecutive steps (module docstring); ``chunk`` devices at a time
    (default: ``CHUNK_CELLS`` cells)."""
    batches = steps // batch_steps
    if not len(rows):
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    devices, local = np.unique(rows["device"].astype(np.int64), return_inverse=True)
    seqs = rows["seq"].astype(np.int64)
    eps0 = np.nan_to_num(rows["eps0"].astype(np.float64), nan=math.inf)
    starts = _candidate_starts(batch_steps, w, steps)
    ends = np.minimum(starts + w, steps)
    chunk = chunk or max(1, CHUNK_CELLS // (batches + 1))
    order = np.argsort(local, kind="stable")
    local, seqs, eps0 = local[order], seqs[order], eps0[order]
    worst = np.zeros(len(devices))
    for low in range(0, len(devices), chunk):
        lo, hi = np.searchsorted(local, [low, low + chunk])
        per_batch = np.zeros((min(chunk, len(devices) - low), batches + 1))  # + 1: the end
        np.maximum.at(per_batch, (local[lo:hi] - low, seqs[lo:hi]), eps0[lo:hi])
        before = np.zeros_like(per_batch)  # spend of the batches before each batch
        np.cumsum(per_batch[:, :-1] * batch_steps, axis=1, out=before[:, 1:])

        def spent_before(t: np.ndarray, per_batch=per_batch, before=before) -> np.ndarray:
            k = t // batch_steps
            return before[:, k] + per_batch[:, k] * (t % batch_steps)

        windows = spent_before(ends) - spent_before(starts)
        worst[low : low + len(per_batch)] = windows.max(axis=1)
    return devices, worst


def _candidate_starts(batch_steps: int, w: int, steps: int) -> np.ndarray:
    """The window starts where a window's spend can be largest: the range's ends and
    every start whose window begins or ends on a batch boundary."""
    last = max(0, steps - w)
    bounds = np.arange(0, steps + 1, batch_steps)
    starts = np.concatenate([[0, last], bounds, bounds - w])
    return np.unique(starts[(starts >= 0) & (starts <= last)])


def _stored_rows_of(plan: BulkPlan, out: Path, wanted: np.ndarray) -> np.ndarray:
    """Every partition's stored rows (``out/p{p}/reports.bin``) of the devices ``wanted``
    (sorted indices) within the stream's batches, without their values."""
    dtype = stored_dtype(plan.batch_steps)
    kept = []
    for p in range(plan.partitions):
        path = out / f"p{p}" / "reports.bin"
        if not path.exists() or path.stat().st_size == 0:
            continue
        rows = np.memmap(path, dtype=dtype, mode="r")
        mine = np.isin(rows["device"].astype(np.int64), wanted) & (rows["seq"] < plan.batches)
        kept.append(np.array(rows[["device", "seq", "eps0"]][mine]))
        del rows
    if not kept:
        return np.zeros(0, dtype=[("device", "<u4"), ("seq", "<u4"), ("eps0", "<f8")])
    return np.concatenate(kept)


def reconstructed_accounts(plan: BulkPlan, out: Path, missing: list[dict]) -> dict | None:
    """results.json's ``privacy.reconstructed`` (and ``fleet.reconstructed_accounts``):
    the accounts of the devices of ``missing`` (gateway shards that left no ledgers:
    ``shard``, ``shards``, ``gateways``, ``ended``), rebuilt from the stored rows in
    ``out`` (module docstring); None when no shard is missing."""
    if not missing:
        return None
    shards = []
    wanted = []
    for shard in missing:
        devices = devices_of_gateways(plan, shard["gateways"])
        wanted.append(devices)
        shards.append({**{k: shard[k] for k in ("shard", "shards", "gateways")},
                       "devices": len(devices), "ended": shard["ended"]})  # fmt: skip
    wanted_devices = np.unique(np.concatenate(wanted))
    rows = _stored_rows_of(plan, Path(out), wanted_devices)
    seen, worst = window_spends(rows, batch_steps=plan.batch_steps, w=plan.w, steps=plan.steps)
    largest = float(worst.max(initial=0.0))
    return {
        "devices": len(wanted_devices),
        "source": "store",
        "how": (
            "reconstructed from the reports the collectors stored (each row's eps0 at each "
            "step of its batch; a device's largest spend over any window of w steps), because "
            "these devices' gateway shards left no ledgers: a figure of what the collector "
            "holds, not the devices' own ledgers (a batch privatised but never stored is not "
            "in it)"
        ),
        "shards": shards,
        "devices_with_stored_reports": len(seen),
        "stored_reports": len(np.unique(rows[["device", "seq"]])) if len(rows) else 0,
        "max_window_spent": largest,
        "within_budget": within_budget(largest, plan.eps),
    }
