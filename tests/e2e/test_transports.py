"""Transports and brokers: URL parsing, the embedded broker's lifecycle, TCP_NODELAY,
and a fleet that completes with nothing lost although the network drops messages."""

from __future__ import annotations

import asyncio
import random
import socket
import sys

import pytest
from ldpfleet.broker.embedded import (
    START_GUARD_SECONDS,
    EmbeddedBroker,
    EmbeddedBrokerError,
    EmbeddedBrokerProcess,
)
from ldpfleet.broker.mqtt import BrokerUrlError, MqttTransport, parse_broker_url
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario


@pytest.mark.parametrize(
    ("url", "host", "port", "user", "password"),
    [
        ("mqtt://127.0.0.1:1883", "127.0.0.1", 1883, None, None),
        ("mqtt://broker.local", "broker.local", 1883, None, None),
        ("mqtt://alice:s%40cret@10.0.0.5:2883", "10.0.0.5", 2883, "alice", "s@cret"),
    ],
)
def test_broker_urls(url, host, port, user, password):
    address = parse_broker_url(url)
    assert (address.host, address.port, address.username, address.password) == (
        host,
        port,
        user,
        password,
    )
    assert "s@cret" not in address.url


@pytest.mark.parametrize(
    "url", ["http://x:1", "mqtt://", "mqtt://h:99999", "mqtt://h:1/path", "127.0.0.1:1883"]
)
def test_bad_broker_urls_say_what_is_expected(url):
    with pytest.raises(BrokerUrlError, match="mqtt://"):
        parse_broker_url(url)


@pytest.mark.embedded
async def test_embedded_broker_free_port_tcp_nodelay_and_clean_stop():
    with pytest.raises(EmbeddedBrokerError, match="1883"):
        EmbeddedBroker(port=1883)
    async with EmbeddedBroker() as broker:
        assert broker.port not in (None, 1883)
        transport = MqttTransport(broker.address)
        async with transport.connect("probe-a") as a, transport.connect("probe-b") as b:
            sock = a._transport.get_extra_info("socket")
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) != 0
            await b.subscribe("ldp/t/#")
            await a.publish("ldp/t/ctl/x", b"hello")
            stream = b.messages()
            delivery = await asyncio.wait_for(anext(stream), 5)
            await stream.aclose()
            assert (delivery.topic, delivery.payload) == ("ldp/t/ctl/x", b"hello")
        port = broker.port
    # stopped: the port no longer accepts connections
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()


class _ChattyChild(EmbeddedBrokerProcess):
    """A stand-in child: prints a URL, then writes 4 MB to stderr (amqtt's PUBACK-timeout
    tracebacks under load), then says so on stdout and waits to be stopped."""

    def _command(self) -> list[str]:
        script = (
            "import sys, time\n"
            "print('mqtt://127.0.0.1:9', flush=True)\n"
            "for _ in range(4096): sys.stderr.write('E' * 1023 + '\\n')\n"
            "sys.stderr.flush()\n"
            "print('wrote', flush=True)\n"
            "time.sleep(600)\n"
        )
        return [sys.executable, "-c", script]


async def test_the_embedded_broker_childs_stderr_is_drained_while_it_serves():
    """The child's stderr was a pipe nobody read while it served: under load amqtt's
    error tracebacks filled it and the broker blocked in a write, serving no one
    (`bench fleet --devices 1000` hung 20 min). The parent now drains it. The wait below
    is only a guard: with the old code the child blocks forever after 64 KB."""
    async with _ChattyChild() as child:
        line = await asyncio.wait_for(child._process.stdout.readline(), 120)
        assert line.strip() == b"wrote"
        assert len(child.stderr_tail) > 0 and child.stderr_tail[-1] == "E" * 1023


class _SlowStartingChild(EmbeddedBrokerProcess):
    """A stand-in child that says its URL only after 25 s, as a child importing amqtt does
    on a starved machine (about 1 s of CPU: 2 s of wall time at load 20 at normal priority,
    tens of seconds with a small share of the CPU)."""

    def _command(self) -> list[str]:
        script = "import time\ntime.sleep(25)\nprint('mqtt://127.0.0.1:9', flush=True)\n"
        script += "time.sleep(600)\n"
        return [sys.executable, "-c", script]


class _FailingChild(EmbeddedBrokerProcess):
    """A stand-in child that fails at its start, saying why on stderr."""

    def _command(self) -> list[str]:
        script = "import sys\nsys.exit('cannot bind 127.0.0.1:9: address in use')\n"
        return [sys.executable, "-c", script]


async def test_a_broker_child_that_fails_to_start_says_why():
    """The failed start read the child's stderr after forgetting the child: an
    AttributeError ('NoneType' object has no attribute 'stderr') instead of the sentence."""
    with pytest.raises(EmbeddedBrokerError) as refused:
        async with _FailingChild():
            pass
    assert str(refused.value) == (
        "the embedded broker did not start: cannot bind 127.0.0.1:9: address in use"
    )


@pytest.mark.slow
async def test_a_slowly_starting_broker_child_is_waited_for():
    """The start waited at most 20 s for the child's URL, then said "the embedded broker
    did not start": a run on a starved machine failed before it began. The default bound
    is now a hang guard, far above any start-up."""
    async with _SlowStartingChild() as child:
        assert child.url == "mqtt://127.0.0.1:9"


@pytest.mark.embedded
async def test_embedded_broker_in_a_child_process_and_the_broker_command():
    async with EmbeddedBrokerProcess() as broker:
        assert broker.address is not None and broker.address.port != 1883
        async with MqttTransport(broker.address).connect("probe") as conn:
            await conn.publish("ldp/t/ctl/x", b"1")
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "ldpfleet.app.cli", "broker", "--port", "0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        line = await asyncio.wait_for(process.stdout.readline(), START_GUARD_SECONDS)
        url = line.decode().strip()
        assert url.startswith("mqtt://127.0.0.1:")
        async with MqttTransport(url).connect("probe") as conn:
            await conn.publish("ldp/t/ctl/x", b"1")
    finally:
        process.terminate()
        await process.communicate()


LOSSY = """
[scenario]
name = "lossy"
seed = 9
[fleet]
devices = 10
[stream]
steps = 50
eps = 2.0
w = 5
retransmit_after = 0.05
[source]
kind = "synthetic"
bounds = [-1.5, 1.5]
"""


async def test_fleet_completes_with_nothing_lost_when_the_network_drops_messages(tmp_path):
    """10% of reports and 10% of acknowledgements vanish: retransmission and
    deduplication still deliver every report exactly once, identical to a clean run."""
    scenario = parse_scenario(LOSSY)
    clean = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "clean", run_id="l1")
    chooser = random.Random(4)

    def drop(topic: str, payload: bytes, recipient: str) -> bool:
        lossy = recipient.endswith("-collector") or "/in/" in topic
        return lossy and chooser.random() < 0.10

    transport = MemoryTransport(drop=drop)
    lossy = await run_scenario(scenario, broker=transport, out_dir=tmp_path / "lossy", run_id="l1")
    assert transport.dropped > 10
    assert lossy["reports_lost"] == 0 and lossy["devices_complete"] == 10
    assert lossy["fleet"]["retransmissions"] > 0
    # the collector holds exactly the clean run's data; a device whose last ack was lost
    # learns of completion from the stage-closed broadcast instead (state "closed")
    for device, entry in clean["per_device"].items():
        assert lossy["per_device"][device]["mean_estimate"] == entry["mean_estimate"]
        assert lossy["per_device"][device]["state"] in ("done", "closed")


@pytest.mark.embedded
async def test_embedded_broker_routes_a_closed_connection_before_a_clean_reconnect():
    """What a client published (QoS 1, acknowledged) is delivered even when the same
    client id reconnects with clean session right after closing — as a finished run's
    collector does to end its persistent session (``end_persistent_session``). amqtt
    cleared the old connection's queue of received PUBLISHes while it was still routing
    it: the last acknowledgements of a run were lost."""
    from ldpfleet.broker.auth import Credentials
    from ldpfleet.broker.session import end_persistent_session

    # with the run's ACL on, each PUBLISH awaits its topic check: the queue of received
    # PUBLISHes is still long when the client closes (how the race showed in a run)
    creds = Credentials.generate("rr", ["d0000"])
    async with EmbeddedBroker(credentials=creds) as broker:
        transport = MqttTransport(broker.address, credentials=creds)
        async with transport.connect("rr-d0000") as device:
            await device.subscribe("ldp/rr/dev/d0000/in/+")
            async with transport.connect("rr-collector", clean_session=False) as collector:
                await collector.publish_many(
                    [("ldp/rr/dev/d0000/in/collector", i.to_bytes(2, "big")) for i in range(300)]
                )
            await end_persistent_session(transport, "rr-collector")
            stream = device.messages()
            got = [(await asyncio.wait_for(anext(stream), 5)).payload for _ in range(300)]
            await stream.aclose()
    assert got == [i.to_bytes(2, "big") for i in range(300)]


async def test_the_runs_broker_child_outlives_a_sigint_and_stops_on_sigterm():
    """Ctrl-C reaches the whole process group: the run's broker child stopped at once, and
    every device logged "connection lost; reconnecting" while the run was stopping them
    (helper R). The child now ignores SIGINT; its parent stops it (SIGTERM) at the end."""
    import os
    import signal

    from ldpfleet.broker.mqtt import probe_broker

    async with EmbeddedBrokerProcess() as broker:
        child = broker._process
        os.kill(child.pid, signal.SIGINT)
        # the probe's CONNECT is answered after the SIGINT was delivered (one connection at
        # a time: the signal is handled before the next read of the socket)
        assert await probe_broker(broker.address) is None
        assert await probe_broker(broker.address) is None
        assert child.returncode is None
    assert child.returncode is not None  # stopped by the parent's SIGTERM
