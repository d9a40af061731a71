"""``bench fleet``'s JSON and results.json name the connection model the run used when
``[fleet] connection = "auto"`` (helper J): per device on the memory broker past
``DEVICE_CONNECTIONS_AUTO_MAX`` devices, gateways on a real broker. The limit is lowered
to 10 devices so that a 25-device fleet is "past" it."""

from __future__ import annotations

import pytest
from ldpfleet.app.bench import bench_fleet
from ldpfleet.scenarios import schema_loaded


@pytest.mark.parametrize(("broker", "expected"), [("memory", "device"), ("embedded", "gateway")])
async def test_the_bench_names_what_auto_chose_on_its_broker(
    broker, expected, monkeypatch, tmp_path
):
    monkeypatch.setattr(schema_loaded, "DEVICE_CONNECTIONS_AUTO_MAX", 10)
    # the bench's default --connection "device" leaves [fleet] connection at "auto"
    figures = await bench_fleet(25, 10, broker=broker, shards=1, out_dir=str(tmp_path))
    assert (figures["connection"], figures["lost"]) == (expected, 0)
