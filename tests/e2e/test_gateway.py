"""``[fleet] connection = "gateway"``: many devices over one connection, same results, and
each device's ACL enforced at the gateway."""

from __future__ import annotations

import pytest
from ldpfleet.broker.auth import Credentials
from ldpfleet.broker.transport import ConnectionRefused, MemoryTransport, TransportError
from ldpfleet.devices.gateway import Gateway
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import MOSQUITTO, broker_for, shared_name
from tests.e2e.test_fault_device_crashes import store_rows

GATEWAYED = """
[scenario]
name = "gw"
seed = 6
[fleet]
devices = 25
connection = "gateway"
gateway_devices = 10     # 3 gateways: 10 + 10 + 5 devices (per shard)
[stream]
steps = 40
batch_steps = 5
eps = 1.0
w = 5
[source]
kind = "synthetic"
shape = "sine"
period = 10
bounds = [-1.0, 1.0]
"""


@pytest.fixture(params=["memory", "embedded", MOSQUITTO])
def broker(request):
    return broker_for(request)


async def test_a_gateway_fleet_gives_the_per_device_results(broker, tmp_path):
    per_device = parse_scenario(GATEWAYED.replace('connection = "gateway"', ""))
    direct = await run_scenario(per_device, broker="memory", out_dir=tmp_path / "d", run_id="g1")
    gatewayed = await run_scenario(
        parse_scenario(GATEWAYED),
        broker=broker,
        out_dir=tmp_path / "g",
        run_id=shared_name(broker, "g1"),
    )
    assert gatewayed["reports_lost"] == 0 and gatewayed["devices_complete"] == 25
    assert gatewayed["per_device"] == direct["per_device"]
    assert (direct["fleet"]["connection"], gatewayed["fleet"]["connection"]) == (
        "device",  # "auto" for 25 devices
        "gateway",
    )
    assert store_rows(tmp_path / "g") == store_rows(tmp_path / "d")
    if broker == "embedded":
        assert gatewayed["broker"]["auth"] is True  # the gateways logged in as "gateway"


async def test_the_gateway_enforces_each_devices_acl():
    creds = Credentials.generate("g1", ["d0001", "d0002"])
    broker = MemoryTransport(credentials=creds)
    gateway = Gateway(broker, "g1-gateway-0", credentials=creds)
    async with broker.connect("g1-collector") as collector:
        await collector.subscribe("ldp/g1/dev/+/up/#")
        async with gateway.connect("g1-d0001") as device:
            # its own topics: fine
            await device.subscribe("ldp/g1/dev/d0001/in/collector", "ldp/g1/ctl/#")
            await device.publish("ldp/g1/dev/d0001/up/hello", b"mine")
            # another device's: dropped at the gateway and recorded; subscriptions refused
            await device.publish("ldp/g1/dev/d0002/up/hello", b"forged")
            with pytest.raises(TransportError, match="refused subscription"):
                await device.subscribe("ldp/g1/dev/d0002/in/collector")
            with pytest.raises(TransportError, match="refused subscription"):
                await device.subscribe("ldp/g1/dev/+/in/+")
            received = await anext(aiter(collector.messages()))
            assert received.payload == b"mine" and collector.pending() == 0
            assert gateway.denied[0] == ("g1-d0001", "publish", "ldp/g1/dev/d0002/up/hello")
            # a message for d0001 reaches it, one for d0002 does not reach d0001
            await collector.publish("ldp/g1/dev/d0002/in/collector", b"not yours")
            await collector.publish("ldp/g1/dev/d0001/in/collector", b"yours")
            got = await anext(aiter(device.messages()))
            assert got.payload == b"yours"
        # a device with a wrong password is refused by the gateway
        with pytest.raises(ConnectionRefused):
            async with gateway.connect("g1-d0002", username="d0002", password="wrong"):
                pass
    await gateway.close()
    assert broker.denied == []  # the broker itself saw nothing it had to refuse
