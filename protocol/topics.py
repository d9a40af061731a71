"""Build and parse every ldpfleet MQTT topic (one place, so no module hand-formats topics).

Topic families (DESIGN.md, "Messages and topics"):

- ``ldp/{run}/dev/{device}/up/{kind}``  device -> collector
- ``ldp/{run}/dev/{dst}/in/{src}``      peer or collector -> a device's inbox (``src`` in the topic)
- ``ldp/{run}/ctl/{kind}``              collector -> all devices (stage control, parameters)
- ``ldp/{run}/rel/{kind}``              collector's public releases (analyst side)
- ``ldp/{run}/svc/{service}/{kind}``    service status: collector rejections and completion,
                                        recorder progress (operators and the trace)

Identifiers (run, device, kind, service) are 1..64 characters of ``[A-Za-z0-9_.-]``: never
``/``, ``+``, ``#``, empty or unicode, so an identifier can never widen a subscription.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError

PREFIX = "ldp"
COLLECTOR_ID = "collector"
_IDENT = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")


def check_ident(value: str, field: str) -> str:
    """Return ``value`` if it is a valid identifier, else raise ``ParameterError``."""
    if not isinstance(value, str) or not _IDENT.match(value):
        raise ParameterError(
            f"{value!r} is not an identifier (1-64 characters of A-Z a-z 0-9 _ . -)", field=field
        )
    return value


def up(run: str, device: str, kind: str) -> str:
    """Device -> collector topic."""
    return f"{PREFIX}/{run}/dev/{device}/up/{kind}"


def inbox(run: str, dst: str, src: str) -> str:
    """Topic of ``dst``'s inbox for messages from ``src``."""
    return f"{PREFIX}/{run}/dev/{dst}/in/{src}"


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


def all_up(run: str) -> str:
    """Every device's upstream messages (the collector's filter)."""
    return f"{PREFIX}/{run}/dev/+/up/#"


def inbox_filter(run: str, device: str) -> str:
    """A device's whole inbox."""
    return f"{PREFIX}/{run}/dev/{device}/in/+"


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

    @property
    def device(self) -> str | None:
        """The device this topic belongs to (its owner for ``up``, its recipient for ``in``)."""
        if self.family == "up":
            return self.sender
        if self.family == "in":
            return self.recipient
        return None


def parse(topic: str) -> Topic:
    """Parse any ldpfleet topic; ``RemoteProtocolError(field="topic")`` if it is not one."""
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
    if family == "dev" and len(rest) == 3 and rest[1] == "up":
        return Topic(run, "up", rest[2], rest[0], COLLECTOR_ID, topic)
    if family == "dev" and len(rest) == 3 and rest[1] == "in":
        return Topic(run, "in", "inbox", rest[2], rest[0], topic)
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
