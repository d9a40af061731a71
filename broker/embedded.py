"""The embedded broker: amqtt started in-process on a free loopback port (never 1883).

``async with EmbeddedBroker() as broker: broker.url`` gives ``mqtt://127.0.0.1:<port>``.
Nothing to install; fine for small fleets. amqtt matches each message against every
subscription in turn, so large fleets (1,000+ per-device inbox subscriptions) should use
Mosquitto: see docs/brokers.md.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys
from types import TracebackType

from amqtt.broker import Broker

from broker.mqtt import BrokerAddress


class _IndexedSubscriptions(dict):
    """amqtt's ``filter -> subscribers`` dict, with a shortcut for its broadcast loop.

    amqtt 0.12's ``Broker._run_broadcast`` takes a message off ``_broadcast_queue`` and
    scans EVERY subscription filter with ``_matches`` (formatting a debug f-string for each
    one that does not match): O(filters) per message. A CADR-LDP fleet of 4,039 devices has
    ~50,000 distinct exact filters (every device's inbox, the fan-in subscriptions), which
    made one broadcast cost tens of milliseconds — the embedded broker could not move the
    secure-sum setup to 4,039 devices within two minutes (measured). While a broadcast is
    being dispatched, ``items()`` therefore returns only the filters that can match its
    topic: the exact filter equal to it, and every wildcard filter (amqtt still checks them
    with ``_matches``). Everything else uses the plain dict."""

    def __init__(self) -> None:
        super().__init__()
        self.wildcards: set[str] = set()
        self.topic_hint: str | None = None

    def __setitem__(self, key: str, value: list) -> None:
        if "+" in key or "#" in key:
            self.wildcards.add(key)
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        self.wildcards.discard(key)
        super().__delitem__(key)

    def clear(self) -> None:
        self.wildcards.clear()
        super().clear()

    def items(self):  # type: ignore[override]
        topic, self.topic_hint = self.topic_hint, None
        if topic is None:
            return super().items()
        keys = [k for k in self.wildcards if k in self]
        if topic in self and topic not in self.wildcards:
            keys.append(topic)
        return [(k, self[k]) for k in keys]


class _HintingQueue(asyncio.Queue):
    """amqtt's broadcast queue: tells the subscriptions which topic is dispatched next."""

    def __init__(self, subscriptions: _IndexedSubscriptions) -> None:
        super().__init__()
        self._subscriptions = subscriptions

    async def get(self):
        item = await super().get()
        self._subscriptions.topic_hint = item.get("topic") if isinstance(item, dict) else None
        return item


class _ClosingBroker(Broker):
    """amqtt's broker, closing each client socket when its session handler returns (amqtt
    0.12 leaves some open, e.g. after a failed CONNECT, until garbage collection), with an
    indexed subscription lookup (``_IndexedSubscriptions``)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        subscriptions = _IndexedSubscriptions()
        for key, value in self._subscriptions.items():
            subscriptions[key] = value  # through __setitem__: wildcards are indexed
        self._subscriptions = subscriptions
        self._broadcast_queue = _HintingQueue(subscriptions)

    async def stream_connected(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, listener_name: str
    ) -> None:
        try:
            await super().stream_connected(reader, writer, listener_name)
        finally:
            if not writer.is_closing():
                writer.close()


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
        broker = _ClosingBroker(config)
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


class EmbeddedBrokerProcess:
    """The embedded broker in a child process, so it gets a core of its own.

    ``ldpfleet run`` uses this: the broker, the fleet and the collector otherwise share one
    Python thread, and amqtt's routing then halves the fleet's message rate (measured:
    docs/brokers.md). The child prints its URL on its first line and stops on SIGTERM.
    """

    def __init__(self, host: str = "127.0.0.1", port: int = 0, start_timeout: float = 20.0):
        if port == 1883:
            raise EmbeddedBrokerError(
                "port 1883 is reserved for the system's Mosquitto; choose another or 0 (free)"
            )
        self.host = host
        self.requested_port = port
        self.start_timeout = start_timeout
        self.address: BrokerAddress | None = None
        self._process: asyncio.subprocess.Process | None = None

    @property
    def url(self) -> str:
        """``mqtt://host:port`` of the running broker."""
        if self.address is None:
            raise EmbeddedBrokerError("the embedded broker is not running")
        return self.address.url

    async def __aenter__(self) -> EmbeddedBrokerProcess:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "broker.embedded",
            "--host",
            self.host,
            "--port",
            str(self.requested_port),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert self._process.stdout is not None and self._process.stderr is not None
        try:
            line = await asyncio.wait_for(self._process.stdout.readline(), self.start_timeout)
        except TimeoutError:
            line = b""
        text = line.decode().strip()
        if not text.startswith("mqtt://"):
            await self._stop()
            detail = (await self._process.stderr.read()).decode().strip().splitlines()
            raise EmbeddedBrokerError(
                f"the embedded broker did not start: {detail[-1] if detail else 'no output'}"
            )
        port = int(text.rsplit(":", 1)[1])
        self.address = BrokerAddress(self.host, port)
        return self

    async def _stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.returncode is not None:
            return
        process.terminate()
        try:
            await asyncio.wait_for(process.wait(), 10)
        except TimeoutError:
            process.kill()
            await process.wait()

    async def __aexit__(self, *exc_info: object) -> None:
        await self._stop()
        self.address = None


async def _serve(host: str, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    async with EmbeddedBroker(host, port) as broker:
        print(broker.url, flush=True)
        await stop.wait()


def main(argv: list[str] | None = None) -> int:
    """``python -m broker.embedded [--host H] [--port P]``: serve until SIGTERM."""
    parser = argparse.ArgumentParser(description="ldpfleet embedded amqtt broker")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    try:
        asyncio.run(_serve(args.host, args.port))
    except EmbeddedBrokerError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
