"""Reconstruction in bulk runs (issue 23): the bulk collectors hand complete devices'
stored streams to the pool during the stage and the rest after it; the saved
reconstructions equal ``reconstruct_streams`` over the stored streams, for P = 1 and
P = 2 alike. Pacing: a paced bulk gateway builds batch b no earlier than ((b + 1) B - 1)
step_seconds after its start."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.analytics import reconstruct_streams
from ldpfleet.collector.bulk import stored_streams
from ldpfleet.collector.cpr import CprConfig
from ldpfleet.protocol.bulk import BulkAdmit, BulkGateway, BulkPlan, stored_dtype
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.stream import StreamConfig
from ldpfleet.protocol.sw import denormalise
from ldpfleet.scenarios.bulk_run import run_bulk


def recon_plan(run: str, partitions: int, **kw) -> BulkPlan:
    # 140 devices (>= PARALLEL_FROM: the pool is used during the stage); the last batch
    # spans several messages of 20 rows, so devices complete a message at a time; periods
    # of 8-12 steps over 96 steps at eps0 = 2, so that CPR finds periods (a stream without
    # one is reconstructed as its flat mean, which would not tell a stream from its reverse)
    base = dict(run=run, devices=140, steps=96, batch_steps=4, eps=8.0, w=4, seed=5,
                gateway_devices=70, partitions=partitions, window=2, max_entries=20,
                period=(8, 12), reconstruct="cpr")  # fmt: skip
    base.update(kw)
    return BulkPlan(**base)


def plan_streams(out, plan: BulkPlan) -> dict[str, np.ndarray]:
    streams: dict[str, np.ndarray] = {}
    for p in range(plan.partitions):
        streams |= stored_streams(out / f"p{p}", stored_dtype(plan.batch_steps), plan.device_id)
    return dict(sorted(streams.items()))


async def test_bulk_reconstructions_equal_the_after_stage_pass_for_one_and_two_partitions(
    tmp_path,
):
    saved, stored = {}, {}
    for partitions in (1, 2):
        plan = recon_plan(f"bulk-recon-{partitions}", partitions)
        out = tmp_path / f"p{partitions}"
        results = await run_bulk(plan, broker="memory", out_dir=out)
        assert results["reports_lost"] == 0
        block = results["reconstruction"]
        assert block["method"] == "cpr"
        assert block["streams"] == plan.devices
        # devices complete while the stage runs: every full chunk of 64 went to the pool
        assert block["during_stage"] >= 64
        assert block["seconds"] >= 0
        stored[partitions] = streams = plan_streams(out, plan)
        assert len(streams) == plan.devices
        with np.load(out / "reconstructions.npz") as data:
            saved[partitions] = {key: data[key] for key in data.files}
    # the noise does not depend on the partition layout: the same stored streams, the same
    # reconstructions; and they are reconstruct_streams' over those streams
    assert all(np.array_equal(v, stored[2][d]) for d, v in stored[1].items())
    assert saved[1].keys() == saved[2].keys()
    for key, values in saved[1].items():
        assert np.array_equal(values, saved[2][key]), key
    config = StreamConfig(run=plan.run, mechanism="sw", eps=plan.eps, w=plan.w,
                          steps=plan.steps, batch_steps=plan.batch_steps, lo=plan.lo,
                          hi=plan.hi)  # fmt: skip
    reference = reconstruct_streams(config, streams, "cpr", workers=1, cpr=CprConfig())
    # deterministic (fixed seeds): 54 of the 140 have a period
    assert sum(r.period is not None for r in reference.values()) >= len(reference) // 4
    arrays = saved[2]
    assert sorted(k for k in arrays if "." not in k) == sorted(streams)
    for device, result in reference.items():
        assert np.array_equal(arrays[device], denormalise(result.values, plan.lo, plan.hi))
        assert np.array_equal(
            arrays[f"{device}.template"], denormalise(result.template, plan.lo, plan.hi)
        )


def test_a_paced_gateway_builds_each_batch_when_its_last_reading_exists():
    plan = BulkPlan(run="paced", devices=10, steps=20, batch_steps=5, eps=1.0, w=5,
                    gateway_devices=10, window=100, step_seconds=2.0)  # fmt: skip
    gateway = BulkGateway(plan, 0)
    gateway.start(100.0)
    admit = BulkAdmit(run="paced", sender="collector", partition=0, window=100)
    assert gateway.receive(admit, 100.0) == []  # batch 0's last reading is at step 4
    assert gateway.next_timer() == 100.0 + 4 * 2.0
    assert gateway.handle_timer(107.9) == []
    sent = gateway.handle_timer(108.0)
    assert len(sent) == 1 and gateway.next_timer() == 100.0 + 9 * 2.0
    assert len(gateway.handle_timer(126.0)) == 1  # batch 1 (ready at 118), not 2 (128)
    assert gateway.next_timer() == 100.0 + 14 * 2.0
    assert gateway.counters.messages_sent == 2


def test_an_unpaced_gateway_builds_its_window_at_once():
    plan = BulkPlan(run="unpaced", devices=10, steps=20, batch_steps=5, eps=1.0, w=5,
                    gateway_devices=10, window=100)  # fmt: skip
    gateway = BulkGateway(plan, 0)
    gateway.start(0.0)
    admit = BulkAdmit(run="unpaced", sender="collector", partition=0, window=100)
    assert len(gateway.receive(admit, 0.0)) == plan.batches


@pytest.mark.parametrize(
    ("field", "value"), [("reconstruct", "laplace"), ("step_seconds", -1.0), ("step_seconds", 1e9)]
)
def test_a_plan_refuses_what_bulk_collectors_and_gateways_cannot_do(field, value):
    with pytest.raises(ParameterError) as refused:
        recon_plan("bad", 1, **{field: value})
    assert refused.value.field == field and repr(value) in str(refused.value)
