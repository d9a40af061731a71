"""Bulk gateways end to end (issue 23): a few hundred devices through bulk gateways on
the memory transport, the embedded broker and Mosquitto: nothing lost, the same stored
reports on every broker, a hostile entry rejected and counted, and the process runner."""

from __future__ import annotations

import asyncio
import json
import os

import numpy as np
import pytest
from ldpfleet.broker.auth import CREDENTIALS_ENV
from ldpfleet.broker.embedded import EmbeddedBroker
from ldpfleet.broker.select import open_broker
from ldpfleet.collector.bulk import stored_rows
from ldpfleet.devices.bulk_gateway import gateway_client_id
from ldpfleet.protocol.bulk import (
    BulkPlan,
    entry_dtype,
    gateway_up,
    gateway_up_filter,
    stored_dtype,
)
from ldpfleet.scenarios.bulk_run import bulk_credentials, run_bulk

from tests.conftest import MOSQUITTO, broker_for, shared_name


def small_plan(run: str, **kw) -> BulkPlan:
    base = dict(run=run, devices=300, steps=20, batch_steps=5, eps=1.0, w=5, seed=3,
                gateway_devices=120, partitions=2, window=2, max_entries=50)  # fmt: skip
    base.update(kw)
    return BulkPlan(**base)


def hostile(entries: np.ndarray) -> np.ndarray:
    """Gateway 0's second batch: device 5 claims a value outside the SW domain, and an
    extra entry speaks for device 200 (gateway 1's)."""
    if entries["seq"][0] != 1 or 5 not in entries["device"]:
        return entries
    entries = entries.copy()
    entries["values"][entries["device"] == 5, 0] = 9.0
    extra = entries[:1].copy()
    extra["device"] = 200
    return np.concatenate([entries, extra])


def stored(out, plan: BulkPlan) -> np.ndarray:
    dtype = stored_dtype(plan.batch_steps)
    parts = [stored_rows(out / f"p{p}", dtype) for p in range(plan.partitions)]
    return np.sort(np.concatenate(parts), order=["device", "seq"])


@pytest.fixture(params=["embedded", MOSQUITTO])
def broker(request):
    return broker_for(request)


async def test_a_hostile_entry_is_rejected_and_counted_and_nothing_is_lost(tmp_path):
    await check_hostile_run("memory", tmp_path)


async def test_the_same_on_the_embedded_broker_and_mosquitto(broker, tmp_path):
    await check_hostile_run(broker, tmp_path)


async def check_hostile_run(broker: str, tmp_path) -> None:
    plan = small_plan(shared_name(broker, f"bulk-{broker[:4]}"))  # a session's own run id
    if broker == "embedded":
        async with EmbeddedBroker() as embedded:
            results = await run_bulk(
                plan, broker=embedded.url, out_dir=tmp_path, tamper={0: hostile}
            )
    else:
        results = await run_bulk(plan, broker=broker, out_dir=tmp_path, tamper={0: hostile})
    expected = plan.devices * plan.batches
    assert results["reports_expected"] == expected
    assert results["reports_lost"] == 0
    assert results["reports_received"] == expected - 1  # device 5's bad batch
    assert results["reports_rejected"] == 2
    assert results["rejections_by_reason"]["acl"] == 1
    assert results["rejections_by_reason"]["out_of_range"] == 1
    rows = stored(tmp_path, plan)
    assert len(rows) == expected - 1
    assert np.sum(rows["device"] == 200) == plan.batches  # the real owner's reports
    assert 1 not in rows["seq"][rows["device"] == 5]
    on_disk = json.loads((tmp_path / "results.json").read_text())
    assert on_disk["reports_lost"] == 0
    # the same values on every broker (the noise is keyed by device and step)
    clean = await run_bulk(small_plan("bulk-ref"), out_dir=tmp_path / "ref")
    ref = stored(tmp_path / "ref", plan)
    keep = ~((ref["device"] == 5) & (ref["seq"] == 1))
    assert np.array_equal(rows, ref[keep])
    assert clean["reports_received"] == expected
    assert entry_dtype(plan.batch_steps).itemsize == 56


@pytest.mark.mosquitto
async def test_collector_and_gateway_processes_on_mosquitto(mosquitto_url, tmp_path):
    plan = small_plan("bulk-procs", partitions=2)
    results = await run_bulk(plan, broker=mosquitto_url, out_dir=tmp_path, shards=2)
    assert results["reports_lost"] == 0
    assert results["reports_received"] == plan.devices * plan.batches
    assert results["fleet"]["shards_missing"] == 0
    assert len(results["peak_rss_mb"]["fleet_processes"]) == 2
    assert all(r > 0 for r in results["peak_rss_mb"]["collectors"])
    # each collector process recorded and signed its partition's trace (the default "all")
    from ldpfleet.app.trace_verify import verify_run

    report = verify_run(tmp_path)
    assert report.ok, [m.line() for m in report.mismatches]
    assert report.checked["signature"] == 3
    assert report.checked["traced_entries"] == plan.devices * plan.batches


def test_bench_fleet_connection_bulk_prints_the_bulk_figures():
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    result = CliRunner().invoke(
        app,
        ["bench", "fleet", "--devices", "250", "--steps", "20", "--batch-steps", "5",
         "--broker", "memory", "--connection", "bulk", "--gateway-devices", "100",
         "--partitions", "2"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    figures = json.loads(result.stdout)
    assert figures["forwarding"] == "bulk" and figures["gateways"] == 3
    assert figures["messages"] == 250 * 4 and figures["lost"] == 0
    assert figures["cpu_us_per_report"] > 0 and figures["peak_rss_mb"]["total"] > 0
    assert figures["retransmit_after"] == 30.0  # the bulk default, not the per-device 5 s
    assert figures["trace"] == "all" and figures["trace_messages"] > 0
    assert figures["trace_bytes"] > 0


def test_bench_fleet_gateway_switches_to_bulk_only_above_bulk_from():
    from ldpfleet.app import bench

    assert bench.BULK_FROM == 100_000
    calls = []

    async def fake(*args, **kwargs):
        calls.append((args, kwargs))
        return {}

    import asyncio

    original = bench.bench_bulk_fleet
    bench.bench_bulk_fleet = fake
    try:
        asyncio.run(bench.bench_fleet(100_001, 10, connection="gateway", broker="memory"))
        # bulk collectors reconstruct (collector/bulk.py) and gateways pace
        asyncio.run(
            bench.bench_fleet(10, 10, connection="bulk", reconstruct="cpr", step_seconds=0.5)
        )
    finally:
        bench.bench_bulk_fleet = original
    assert len(calls) == 2 and calls[0][0] == (100_001, 10)
    assert calls[1][1]["reconstruct"] == "cpr" and calls[1][1]["step_seconds"] == 0.5


async def test_a_bulk_run_with_credentials_on_the_embedded_broker_loses_nothing(tmp_path):
    # run_bulk generates the run's credentials for the embedded broker: the collector
    # processes and the gateway shards log in through LDPFLEET_CREDENTIALS (gateway g as
    # gateway-g{g}), and the broker enforces the bulk ACL (broker/auth.py)
    plan = small_plan("bulk-auth")
    results = await run_bulk(plan, broker="embedded", out_dir=tmp_path, shards=2)
    assert results["reports_lost"] == 0
    assert results["reports_rejected"] == 0
    assert results["reports_received"] == plan.devices * plan.batches
    assert results["fleet"]["shards_missing"] == 0
    assert CREDENTIALS_ENV not in os.environ


async def test_the_embedded_broker_refuses_a_gateway_publishing_as_another(tmp_path):
    plan = small_plan("bulk-spoof")
    creds = bulk_credentials(plan, "embedded")
    assert creds is not None and creds.gateways == plan.gateways
    async with (
        asyncio.timeout(240),  # a hang guard: the broker process starts slowly when starved
        open_broker("embedded", credentials=creds) as (transport, _),
        transport.connect(f"{plan.run}-collector-watch") as watch,
    ):
        await watch.subscribe(*(gateway_up_filter(plan.run, p) for p in range(plan.partitions)))
        async with transport.connect(gateway_client_id(plan.run, 0)) as g0:
            # QoS 1, acknowledged in order: were the forged one forwarded, it would be
            # delivered to the watcher before the gateway's own message
            await g0.publish(gateway_up(plan.run, 1, "bulk", 0), b"forged")
            await g0.publish(gateway_up(plan.run, 0, "bulk", 0), b"own")
        first = await anext(aiter(watch.messages()))
    assert (first.topic, first.payload) == (gateway_up(plan.run, 0, "bulk", 0), b"own")
