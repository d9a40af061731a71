"""A port where something other than an MQTT broker listens (helper U, a new user's
session: `--broker mqtt://127.0.0.1:8000` where a web server runs) was reported as "no MQTT
broker answers at ...; start one (mosquitto -d ...)": the user starts Mosquitto, which is
running. The probe knows a listener accepted the connection: it says so."""

import asyncio

from ldpfleet.broker.mqtt import parse_broker_url, probe_broker


async def _probe_a_listener_that_hangs_up():
    async def hang_up(reader, writer):
        writer.write(b"HTTP/1.0 400 Bad Request\\r\\n\\r\\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        said = await probe_broker(parse_broker_url(f"mqtt://127.0.0.1:{port}"), 3.0)
    return port, said


def test_a_listener_that_is_not_mqtt_is_named_as_such():
    port, said = asyncio.run(_probe_a_listener_that_hangs_up())
    assert said is not None
    assert said.startswith(f"no MQTT broker answers at 127.0.0.1:{port}: something listens")
    assert "start one" not in said, said
