"""Build and parse every ldpfleet MQTT topic (one place, so no module hand-formats topics).

Topic families (DESIGN.md, "Messages and topics"):

- ``ldp/{run}/dev/{device}/up/{kind}``  device -> collector
- ``ldp/{run}/dev/{dst}/in/{src}``      peer or collector -> a device's inbox (``src`` in the topic)
- ``ldp/{run}/ctl/{kind}``              collector -> all devices (stage control, parameters)
- ``ldp/{run}/rel/{kind}``              collector's public releases (analyst side)
- ``ldp/{run}/svc/{service}/{kind}``    service status: collector rejections and completion,
                                        recorder progress (operators and the trace)

Partitions (DESIGN.md, "Scale"): with ``[collector] partitions = P > 1`` a device's own
topics carry a partition level, ``ldp/{run}/p{p}/dev/{device}/up/{kind}`` and
``ldp/{run}/p{p}/dev/{device}/in/{src}``, with ``p = partition_of(device, P)``: the first 8
bytes of SHA-256(device id), big-endian, mod P (stable across processes, hosts and Python
versions, unlike ``hash()``). Builders take ``partition=None`` for today's layout, so P = 1
is byte-identical; ``parse`` returns the level as ``Topic.partition``.

Identifiers (run, device, kind, service) are 1..64 characters of ``[A-Za-z0-9_.-]``: never
``/``, ``+``, ``#``, empty or unicode, so an identifier can never widen a subscription.
"""

from __future__ import annotations

import functools
import hashlib
import re
from dataclasses import dataclass, field

from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError

PREFIX = "ldp"
COLLECTOR_ID = "collector"
_IDENT = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")
_PARTITION = re.compile(r"p(0|[1-9][0-9]{0,3})\Z")
MAX_PARTITIONS = 1024
ANY_PARTITION = "+"  # a filter level for every partition (one collector serving them all)


# identifiers ``check_ident`` has accepted (plain ``str`` only), so a machine built per run
# (an audit builds ~10^6 LPEA nodes and CADR devices, each checking its run, its name and
# its neighbours') tests a known one by a set lookup instead of the regex; a bound, not a
# working set (helper A, 2026-12-07 evening)
_KNOWN_IDENTS: set[str] = set()
KNOWN_IDENTS_MAX = 1 << 16


def check_ident(value: str, field: str) -> str:
    """Return ``value`` if it is a valid identifier, else raise ``ParameterError``."""
    if type(value) is str and value in _KNOWN_IDENTS:
        return value
    if not isinstance(value, str) or not _IDENT.match(value):
        raise ParameterError(
            f"{value!r} is not an identifier (1-64 characters of A-Z a-z 0-9 _ . -)",
            field=field,
            limit="an identifier: 1-64 characters of A-Z a-z 0-9 _ . -",
            value=value,
        )
    if type(value) is str:
        if len(_KNOWN_IDENTS) >= KNOWN_IDENTS_MAX:
            _KNOWN_IDENTS.clear()
        _KNOWN_IDENTS.add(value)
    return value


def partition_of(device: str, partitions: int) -> int:
    """The partition (0..partitions-1) of ``device``: SHA-256 of its id, first 8 bytes
    big-endian, mod ``partitions``."""
    if not isinstance(partitions, int) or not 1 <= partitions <= MAX_PARTITIONS:
        raise ParameterError(
            f"partitions must be an integer in 1..{MAX_PARTITIONS}, got {partitions!r}",
            field="partitions",
            limit=f"an integer in 1..{MAX_PARTITIONS}",
            value=partitions,
        )
    digest = hashlib.sha256(device.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % partitions


def device_partition(device: str, partitions: int) -> int | None:
    """The partition level a device's topics carry: ``None`` (no level) when P = 1."""
    return None if partitions == 1 else partition_of(device, partitions)


def partition_level(partition: int | str) -> str:
    """The topic level of a partition: ``p{p}`` (``+`` stays ``+`` in filters)."""
    if partition == ANY_PARTITION:
        return ANY_PARTITION
    if not isinstance(partition, int) or not 0 <= partition < MAX_PARTITIONS:
        raise ParameterError(
            f"partition must be an integer in 0..{MAX_PARTITIONS - 1}, got {partition!r}",
            field="partition",
            limit=f"an integer in 0..{MAX_PARTITIONS - 1}",
            value=partition,
        )
    return f"p{partition}"


def _dev(run: str, partition: int | str | None) -> str:
    if partition is None:
        return f"{PREFIX}/{run}/dev"
    return f"{PREFIX}/{run}/{partition_level(partition)}/dev"


def up(run: str, device: str, kind: str, partition: int | None = None) -> str:
    """Device -> collector topic (in partition ``partition``'s subtree when given)."""
    return f"{_dev(run, partition)}/{device}/up/{kind}"


def inbox(run: str, dst: str, src: str, partition: int | None = None) -> str:
    """Topic of ``dst``'s inbox for messages from ``src`` (``dst``'s partition when given)."""
    return f"{_dev(run, partition)}/{dst}/in/{src}"


def ctl(run: str, kind: str) -> str:
    """Collector -> all devices topic."""
    return f"{PREFIX}/{run}/ctl/{kind}"


def rel(run: str, kind: str) -> str:
    """Public release topic."""
    return f"{PREFIX}/{run}/rel/{kind}"


def svc(run: str, service: str, kind: str) -> str:
    """Service status topic (rejections, completion, recorder progress)."""
    return f"{PREFIX}/{run}/svc/{service}/{kind}"


# Subscription filters -------------------------------------------------------------------


def all_of_run(run: str) -> str:
    """Everything of one run (the trace recorder's filter)."""
    return f"{PREFIX}/{run}/#"


def all_up(run: str, partition: int | str | None = None) -> str:
    """Every device's upstream messages (the collector's filter); of one partition, or of
    every partition with ``ANY_PARTITION``."""
    return f"{_dev(run, partition)}/+/up/#"


def inbox_filter(run: str, device: str, partition: int | None = None) -> str:
    """A device's whole inbox."""
    return f"{_dev(run, partition)}/{device}/in/+"


def partition_filter(run: str, partition: int) -> str:
    """Everything of one partition's subtree (its recorder's filter)."""
    return f"{PREFIX}/{run}/{partition_level(partition)}/#"


def ctl_filter(run: str) -> str:
    """All collector broadcasts."""
    return f"{PREFIX}/{run}/ctl/#"


def svc_filter(run: str, service: str = "+") -> str:
    """Service status messages."""
    return f"{PREFIX}/{run}/svc/{service}/#"


@dataclass(frozen=True, slots=True)
class Topic:
    """A parsed topic. ``sender`` is who may publish on it (the source level)."""

    run: str
    family: str  # "up" | "in" | "ctl" | "rel" | "svc"
    kind: str  # message kind for up/ctl/rel/svc, "inbox" for in
    sender: str
    recipient: str | None  # device for "in"; "collector" for "up"; None for broadcasts
    text: str = field(default="", compare=False)  # the topic as received
    partition: int | None = None  # the p{p} level of a partitioned device topic

    @property
    def device(self) -> str | None:
        """The device this topic belongs to (its owner for ``up``, its recipient for ``in``)."""
        if self.family == "up":
            return self.sender
        if self.family == "in":
            return self.recipient
        return None


@functools.lru_cache(maxsize=1 << 16)
def parse(topic: str) -> Topic:
    """Parse any ldpfleet topic; ``RemoteProtocolError(field="topic")`` if it is not one.

    Memoized (a ``Topic`` is immutable and depends on the string only; a refusal is not
    cached): a pump parses the same few topics per device hundreds of thousands of times
    (~5 us each, ~0.1 us from the cache)."""
    parts = topic.split("/")
    if len(parts) < 4 or parts[0] != PREFIX:
        raise RemoteProtocolError(f"not an ldpfleet topic: {topic[:120]!r}", field="topic")
    for index, part in enumerate(parts[1:], start=1):
        if not _IDENT.match(part):
            raise RemoteProtocolError(
                f"level {index} {part[:70]!r} is not an identifier", field="topic"
            )
    run, family = parts[1], parts[2]
    rest = parts[3:]
    partition = None
    if _PARTITION.match(family) and len(rest) == 4 and rest[0] == "dev":
        partition = int(family[1:])
        family, rest = "dev", rest[1:]
    if family == "dev" and len(rest) == 3 and rest[1] == "up":
        return Topic(run, "up", rest[2], rest[0], COLLECTOR_ID, topic, partition)
    if family == "dev" and len(rest) == 3 and rest[1] == "in":
        return Topic(run, "in", "inbox", rest[2], rest[0], topic, partition)
    if family in ("ctl", "rel") and len(rest) == 1:
        return Topic(run, family, rest[0], COLLECTOR_ID, None, topic)
    if family == "svc" and len(rest) == 2:
        return Topic(run, "svc", rest[1], rest[0], None, topic)
    raise RemoteProtocolError(f"unknown topic shape: {topic[:120]!r}", field="topic")


def matches(pattern: str, topic: str) -> bool:
    """MQTT filter matching (``+`` one level, ``#`` the rest, ``$`` topics not by wildcards)."""
    pattern_levels = pattern.split("/")
    topic_levels = topic.split("/")
    if topic.startswith("$") and pattern_levels[0] in ("+", "#"):
        return False
    for index, level in enumerate(pattern_levels):
        if level == "#":
            return True
        if index >= len(topic_levels):
            return False
        if level != "+" and level != topic_levels[index]:
            return False
    return len(pattern_levels) == len(topic_levels)
