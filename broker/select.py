"""Turn a ``--broker`` value into a running transport: ``embedded``, ``memory`` or a URL
(``mqtt://`` or ``mqtts://``, TLS: ``broker.mqtt``)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

from ldpfleet.broker.auth import Credentials, ambient
from ldpfleet.broker.embedded import EmbeddedBrokerProcess
from ldpfleet.broker.mqtt import BrokerUrlError, MqttTransport, parse_broker_url, probe_broker
from ldpfleet.broker.transport import MemoryTransport, Transport


class BrokerUnavailable(ConnectionError):
    """The broker named by the user cannot be reached; the message says how to fix it."""


@dataclass(frozen=True)
class BrokerInfo:
    """What results.json records about the broker."""

    kind: str  # "embedded" | "mqtt" | "memory"
    url: str


@contextlib.asynccontextmanager
async def open_broker(
    spec: str | Transport, *, credentials: Credentials | None = None
) -> AsyncIterator[tuple[Transport, BrokerInfo]]:
    """Yield a transport for ``spec``; an embedded broker lives as long as the block.

    ``spec`` may also be a ready ``Transport`` (e.g. a ``MemoryTransport`` with drop rules),
    used as given. With ``credentials`` (default: the ambient ones of a run,
    ``broker.auth.ambient``) the embedded broker and the in-memory one enforce the run's
    ACL, and every connection logs in with its identity's password; for a URL, the
    broker must already know them (``ldpfleet mosquitto-config``)."""
    if credentials is None:
        credentials = ambient()
    if not isinstance(spec, str):
        yield (
            spec,
            BrokerInfo("memory" if isinstance(spec, MemoryTransport) else "custom", spec.name),
        )
        return
    if spec == "memory":
        yield MemoryTransport(credentials=credentials), BrokerInfo("memory", "memory")
        return
    if spec == "embedded":
        async with EmbeddedBrokerProcess(credentials=credentials) as broker:
            assert broker.address is not None
            yield (
                MqttTransport(broker.address, credentials=credentials),
                BrokerInfo("embedded", broker.url),
            )
        return
    try:
        address = parse_broker_url(spec)
    except BrokerUrlError as error:
        raise BrokerUnavailable(str(error)) from None
    problem = await probe_broker(address)
    if problem is not None:
        raise BrokerUnavailable(problem)
    yield MqttTransport(address, credentials=credentials), BrokerInfo("mqtt", address.url)
