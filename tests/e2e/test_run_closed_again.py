"""The run's last words survive a broker that closes the coordinator's connection.

RabbitMQ 3.10's MQTT plugin ended the coordinator's connection when a publish it routed
was nacked (docs/rabbitmq-cluster-notes.md): the ``RunClosed`` announcement was lost and
``run closed`` raised ``ConnectionLost``, so the coordinator failed and the workers, who
end on ``run closed``, would have waited. ``collector.announce.say_run_closed`` says both
again on a new connection. Here the memory broker plays that broker: it severs the
coordinator's connection on the ``RunClosed`` publish (tier 2; the same sides as
``tests/e2e/test_partitions.py``, on virtual time).
"""

from __future__ import annotations

import contextlib
import json

from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.protocol import codec
from ldpfleet.protocol.rendezvous import RunClosed

from tests.e2e.test_partitions import sides_over_memory


class _SeversOnRunClosed:
    """A connection whose broker closes it when it publishes the ``RunClosed``."""

    def __init__(self, conn, broker: MemoryTransport) -> None:
        self._conn = conn
        self._broker = broker

    def __getattr__(self, name):
        return getattr(self._conn, name)

    async def publish(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False):
        if isinstance(codec.decode(payload), RunClosed):
            self._broker.severed += self._broker.sever([self._conn.client_id])
        await self._conn.publish(topic, payload, qos=qos, retain=retain)


class ClosesTheCoordinator(MemoryTransport):
    """The memory broker, closing the coordinator's connection on its ``RunClosed``."""

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.severed = 0

    @contextlib.asynccontextmanager
    async def connect(self, client_id: str, **kwargs):
        async with super().connect(client_id, **kwargs) as conn:
            yield _SeversOnRunClosed(conn, self) if client_id.endswith("-collector-run") else conn


def test_a_coordinator_whose_connection_the_broker_closes_still_closes_the_run(tmp_path):
    coordinator, transport = sides_over_memory(tmp_path, memory=ClosesTheCoordinator)
    assert transport.severed == 1  # the fault happened (the test can fail)
    assert coordinator["complete"] and coordinator["counters"]["reports_lost"] == 0
    # the announcement left retained is the RunClosed, said again on the new connection
    [announcement] = [p for t, p in transport.retained.items() if t.endswith("/ctl/run")]
    assert isinstance(codec.decode(announcement), RunClosed)
    # the workers ended on 'run closed' (sides_over_memory waits for them) and wrote
    for side in ("w0", "w1"):
        assert json.loads((tmp_path / side / "results.json").read_text())["run"] == "partmem"
