"""The embedded broker: amqtt started in-process on a free loopback port (never 1883).

``async with EmbeddedBroker() as broker: broker.url`` gives ``mqtt://127.0.0.1:<port>``.
Nothing to install; fine for small fleets. amqtt matches each message against every
subscription in turn, so large fleets (1,000+ per-device inbox subscriptions) should use
Mosquitto: see docs/brokers.md.
"""

from __future__ import annotations

import logging
from types import TracebackType

from amqtt.broker import Broker

from broker.mqtt import BrokerAddress


class EmbeddedBrokerError(RuntimeError):
    """The embedded broker could not start (for example, the port is in use)."""


class EmbeddedBroker:
    """An amqtt broker bound to ``host:port`` (port 0 picks a free one)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        if port == 1883:
            raise EmbeddedBrokerError(
                "port 1883 is reserved for the system's Mosquitto; choose another or 0 (free)"
            )
        self.host = host
        self.requested_port = port
        self.port: int | None = None
        self._broker: Broker | None = None

    @property
    def address(self) -> BrokerAddress:
        """Where the running broker listens."""
        if self.port is None:
            raise EmbeddedBrokerError("the embedded broker is not running")
        return BrokerAddress(self.host, self.port)

    @property
    def url(self) -> str:
        """``mqtt://host:port`` of the running broker."""
        return self.address.url

    async def start(self) -> None:
        """Start listening."""
        for name in ("amqtt", "transitions"):
            logging.getLogger(name).setLevel(logging.WARNING)
        config = {
            "listeners": {"default": {"type": "tcp", "bind": f"{self.host}:{self.requested_port}"}},
            "plugins": {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}
            },
        }
        broker = Broker(config)
        try:
            await broker.start()
        except Exception as error:
            raise EmbeddedBrokerError(
                f"cannot start the embedded broker on {self.host}:{self.requested_port}: "
                f"{error.__cause__ or error} (is the port in use? use port 0 for a free one)"
            ) from error
        server = broker._servers["default"].instance
        self.port = server.sockets[0].getsockname()[1]
        self._broker = broker

    async def stop(self) -> None:
        """Disconnect every client and close the listener."""
        if self._broker is not None:
            broker, self._broker = self._broker, None
            await broker.shutdown()
        self.port = None

    async def __aenter__(self) -> EmbeddedBroker:
        await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop()
