"""Reconstruction as devices complete (issue 23, "analytics that scale out"): the collector
hands each complete device's persisted stream to its process pool while the stage runs and
reconstructs only the rest at the end; the outcome is identical to reconstructing every
stream after the stage."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import service
from ldpfleet.collector.analytics import IncrementalReconstructor, reconstruct_streams
from ldpfleet.protocol.stream import StreamConfig
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

FLEET = """
[scenario]
name = "recon-early"
seed = 4
[fleet]
devices = 80
[stream]
steps = 120
eps = 5.0
w = 5
batch_steps = 10
reconstruct = "cpr"
[source]
kind = "periodic"
dataset = "music"
bounds = [10.0, 20.0]
"""


def _saved(folder) -> dict[str, np.ndarray]:
    with np.load(folder / "reconstructions.npz") as saved:
        return {key: saved[key] for key in saved.files}


@pytest.mark.parametrize("broker", ["memory"])
async def test_reconstructing_during_the_stage_gives_the_reconstructions_of_after_it(
    broker, tmp_path, monkeypatch
):
    scenario = parse_scenario(FLEET)
    early = await run_scenario(scenario, broker=broker, out_dir=tmp_path / "early", seed=4)
    # 80 devices >= PARALLEL_FROM: on by default, and every complete device went early
    assert early["reconstruction"]["during_stage"] > 0
    monkeypatch.setattr(service, "PARALLEL_FROM", 10**9)  # off: all after the stage
    late = await run_scenario(scenario, broker=broker, out_dir=tmp_path / "late", seed=4)
    assert late["reconstruction"]["during_stage"] == 0
    assert early["reports_lost"] == late["reports_lost"] == 0
    assert early["reconstruction"]["streams"] == late["reconstruction"]["streams"] == 80
    for key in ("period_accuracy", "mean_cosine_distance"):
        assert early["reconstruction"][key] == late["reconstruction"][key]
    assert early["per_device"] == late["per_device"]
    a, b = _saved(tmp_path / "early"), _saved(tmp_path / "late")
    assert a.keys() == b.keys() and len(a) >= 80
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])


def _streams(count: int, n: int, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    # inside SW's output range at eps0 = 1 ([-0.256, 1.256])
    return {f"d{i:03d}": rng.uniform(-0.2, 1.2, size=n) for i in range(count)}


def test_incremental_reconstructor_equals_one_pass_in_any_arrival_order():
    """Streams handed over in chunks, out of order, one twice, some never: ``finish``
    returns exactly what ``reconstruct_streams`` returns for the whole set, in its order."""
    config = StreamConfig(
        run="r", mechanism="sw", eps=5.0, w=5, steps=60, batch_steps=10, lo=0.0, hi=1.0
    )
    streams = _streams(30, 60, seed=3)
    whole = reconstruct_streams(config, streams, "cpr", workers=1)
    early = IncrementalReconstructor(config, "cpr", workers=2, chunk=4)
    devices = list(streams)[::-1]
    for i in range(0, 20, 3):
        early.add({d: streams[d] for d in devices[i : i + 3]})
    early.add({devices[0]: streams[devices[0]]})  # again: reconstructed once
    assert early.during_stage == 21
    out = early.finish(streams)
    assert list(out) == list(whole)
    for device, result in whole.items():
        np.testing.assert_array_equal(out[device].values, result.values)
        assert out[device].period == result.period


def test_the_leftovers_go_through_the_one_pool_or_inline(monkeypatch):
    """``finish`` never opens a second pool beside the busy first one: the leftovers are
    queued on the pool the stage used (chunked), or, with no pool and few streams left,
    reconstructed inline; every way gives ``reconstruct_streams``' result."""
    from ldpfleet.collector import analytics

    pools = []

    def counting_pool(workers):
        pools.append(workers)
        return analytics.ProcessPoolExecutor(max_workers=workers)

    monkeypatch.setattr(analytics, "_process_pool", counting_pool)
    config = StreamConfig(
        run="r", mechanism="sw", eps=5.0, w=5, steps=60, batch_steps=10, lo=0.0, hi=1.0
    )
    streams = _streams(analytics.PARALLEL_FROM + 10, 60, seed=5)
    whole = reconstruct_streams(config, streams, "sw_moving", workers=1)
    devices = list(streams)
    for handed, left_over, expected_pools in (
        (8, analytics.PARALLEL_FROM + 2, 1),  # a busy pool, many left: queued behind
        (0, analytics.PARALLEL_FROM + 10, 1),  # nothing handed over, many left: one pool
        (0, 5, 0),  # nothing handed over, few left: inline
        (8, 2, 1),  # a pool, few left: queued on it too
    ):
        pools.clear()
        early = IncrementalReconstructor(config, "sw_moving", workers=2, chunk=4)
        early.add({d: streams[d] for d in devices[:handed]})
        subset = {d: streams[d] for d in devices[: handed + left_over]}
        out = early.finish(subset)
        assert len(pools) == expected_pools, (handed, left_over)
        assert early.leftover_chunks == (min(8, left_over) if expected_pools else 0)
        assert list(out) == list(subset)
        for device, result in out.items():
            np.testing.assert_array_equal(result.values, whole[device].values)
            assert result.period == whole[device].period
