"""The w-event accounts of a dead gateway shard's devices, rebuilt from what the
collectors stored (``scenarios.bulk_accounts``; docs/scaling.md "A gateway shard that
dies"): each device's largest spend over any window of ``w`` steps, ``eps0`` at each step
of each stored batch (a batch stored twice counts once, at its larger ``eps0``), checked
against a brute force over every window of every device.
"""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.protocol.bulk import BulkPlan, stored_dtype
from ldpfleet.scenarios.bulk_accounts import (
    devices_of_gateways,
    reconstructed_accounts,
    window_spends,
)


def _brute_force(rows, batch_steps: int, w: int, steps: int) -> dict[int, float]:
    spends: dict[int, np.ndarray] = {}
    taken: dict[tuple[int, int], float] = {}
    for row in rows:
        key = (int(row["device"]), int(row["seq"]))
        taken[key] = max(taken.get(key, 0.0), float(row["eps0"]))
    for (device, seq), eps0 in taken.items():
        spend = spends.setdefault(device, np.zeros(steps))
        spend[seq * batch_steps : (seq + 1) * batch_steps] = eps0
    starts = max(1, steps - w + 1)
    return {d: max(float(s[i : i + w].sum()) for i in range(starts)) for d, s in spends.items()}


@pytest.mark.parametrize(
    ("batch_steps", "w", "steps"), [(5, 5, 100), (5, 12, 60), (4, 3, 40), (3, 50, 30)]
)
def test_window_spends_equal_a_brute_force_over_every_window(batch_steps, w, steps):
    rng = np.random.default_rng(20261205)
    batches = steps // batch_steps
    rows = np.zeros(300, dtype=stored_dtype(batch_steps))
    rows["device"] = rng.integers(0, 30, len(rows))
    rows["seq"] = rng.integers(0, batches, len(rows))  # gaps and batches stored twice
    rows["eps0"] = rng.choice([0.1, 0.2, 0.25, 0.7], len(rows))
    devices, worst = window_spends(rows, batch_steps=batch_steps, w=w, steps=steps, chunk=7)
    expected = _brute_force(rows, batch_steps, w, steps)
    assert sorted(expected) == devices.tolist()
    got = dict(zip(devices.tolist(), worst.tolist(), strict=True))
    for device, spend in expected.items():
        assert got[device] == pytest.approx(spend, rel=1e-12), device


def test_a_shards_devices_and_its_accounts_from_the_partitions_stores(tmp_path):
    # 5 gateways of 4 devices, 2 shards: shard 1 carries g1, g3 (devices 4-7, 12-15)
    plan = BulkPlan(
        run="accounts", devices=20, steps=20, batch_steps=5, eps=2.0, w=5,
        gateway_devices=4, partitions=2,
    )  # fmt: skip
    assert devices_of_gateways(plan, [1, 3]).tolist() == [4, 5, 6, 7, 12, 13, 14, 15]
    dtype = stored_dtype(plan.batch_steps)
    stores = {0: [(4, 0, 0.4), (4, 1, 0.4), (0, 0, 0.4)], 1: [(13, 2, 0.4), (13, 3, 0.6)]}
    for p, stored in stores.items():
        (tmp_path / f"p{p}").mkdir()
        rows = np.zeros(len(stored), dtype=dtype)
        for i, (device, seq, eps0) in enumerate(stored):
            rows[i]["device"], rows[i]["seq"], rows[i]["eps0"] = device, seq, eps0
        rows.tofile(tmp_path / f"p{p}" / "reports.bin")
    missing = [{"shard": 1, "shards": 2, "gateways": [1, 3], "ended": "exit code -9 (SIGKILL)"}]
    entry = reconstructed_accounts(plan, tmp_path, missing)
    assert entry["source"] == "store"
    assert entry["devices"] == 8  # device 0's rows (shard 0's) are not in it
    assert entry["devices_with_stored_reports"] == 2
    assert entry["stored_reports"] == 4
    # device 13: steps 10-14 at 0.4, 15-19 at 0.6: its worst window is 15-19, 3.0 > eps
    assert entry["max_window_spent"] == pytest.approx(3.0, rel=1e-12)
    assert entry["within_budget"] is False
    assert entry["shards"] == [
        {"shard": 1, "shards": 2, "gateways": [1, 3], "devices": 8,
         "ended": "exit code -9 (SIGKILL)"}
    ]  # fmt: skip
    assert "reconstructed from the reports the collectors stored" in entry["how"]


def test_a_shard_the_runner_stopped_has_its_accounts_rebuilt_too():
    """A shard still running after the stage closed, stopped by the runner, left no
    ledgers either (``fleet.shards_missing``, not ``shards_failed``)."""
    from ldpfleet.scenarios.bulk_run import _shards_without_ledgers

    plan = BulkPlan(
        run="accounts", devices=30, steps=20, batch_steps=5, eps=2.0, w=5,
        gateway_devices=5, partitions=1,
    )  # fmt: skip
    failed = [{"shard": 1, "ended": "exit code -9 (SIGKILL)"}]
    missing = _shards_without_ledgers(plan, [{"devices": 10}, None, None], failed)
    assert missing == [
        {"shard": 1, "shards": 3, "gateways": [1, 4], "ended": "exit code -9 (SIGKILL)"},
        {"shard": 2, "shards": 3, "gateways": [2, 5],
         "ended": "stopped by the runner after the stream stage closed"},
    ]  # fmt: skip
