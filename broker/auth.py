"""Per-run credentials and topic ACLs: one pure decision function for every broker.

Identities (usernames) and roles:

- ``device``: username = the device id (``d0007``, ``n0123``); may publish only on its own
  ``ldp/{run}/dev/{me}/up/#`` and on any device's inbox with itself as the source level
  (``ldp/{run}/dev/+/in/{me}``); may subscribe only to its own inbox
  (``ldp/{run}/dev/{me}/in/+``) and to the collector's broadcasts (``ldp/{run}/ctl/#``).
- ``collector`` (username ``collector``), ``recorder``, ``relay`` (the CADR-LDP peer relay),
  ``gateway`` (one connection carrying many devices, ``devices/gateway.py``: the broker
  lets it publish on every device's ``up`` topics and read every inbox; the gateway applies
  each device's own rules, from this same policy) and ``admin`` (operators and attack
  experiments: everything of the run, and ``$SYS``).
- ``bulk_gateway`` (issue 23, ``devices/bulk_gateway.py``, docs/scaling.md "Bulk gateways"):
  username ``gateway-g{g}`` (``g`` in ``0 .. gateways-1`` of the run's credentials, written
  without leading zeros; device ids starting ``gateway-`` are refused, so no clash), client
  id exactly ``{run}-gateway-g{g}``. The bulk collector trusts the gateway number of the
  uplink topic, so gateway ``g`` may publish only on its own ``ldp/{run}[/+]/gw/g{g}/up/#``
  and read only its own inbox ``ldp/{run}[/+]/gw/g{g}/in/collector`` (and, like every user,
  ``ldp/{run}/ctl/#``); the ``collector`` reads ``.../gw/+/up/#`` and writes
  ``.../gw/+/in/collector``. The ``gateway`` service may not use a bulk gateway's client id.
  (``%g`` in ``RULES`` is the gateway number; Mosquitto has no such substitution, so its
  ACL file gets one ``user`` block per gateway of the run.)

Partitions (``[collector] partitions = P > 1``, DESIGN.md "Scale"): device topics carry a
partition level ``p{p}``, ``p = topics.partition_of(device, P)``. ``PARTITION_PATTERNS`` then
let a device publish only on ``ldp/{run}/%p/dev/%u/up/#`` and read only
``ldp/{run}/%p/dev/%u/in/+`` (``%p``: its own level, computed from the username), and
``PARTITION_RULES`` give the collector (every worker and the coordinator log in as
``collector``: client ids ``{run}-collector-p{p}``), the gateway (and through ``%u``
patterns, nobody else) the partitioned subtrees. Mosquitto cannot hash a username: its
generated ACL grants ``+`` for ``%p`` (a device publishing in another partition's subtree
reaches a worker that refuses it as unknown, ``unknown_sender``).

``RULES`` holds them as data: role -> ``Rule(action, pattern)``, patterns with ``{run}``
(filled per run) and ``%u`` (the username, filled per check), exactly like Mosquitto's
``pattern`` lines. As in Mosquitto, the device rules are *patterns* that apply to every
authenticated user, and each service role adds its own ``topic`` lines; so
``AccessPolicy.allowed`` and the generated Mosquitto ACL file grant the same rights.
``DENIED`` takes topics away from a role whatever the patterns grant (Mosquitto ``topic
deny``): the ``collector`` may not publish, subscribe to or receive the relay's round
broadcasts ``ldp/{run}/ctl/peer_step`` (issue 20: their pace follows the negotiation). A
subscription whose filter could match a denied topic (``ldp/{run}/ctl/#`` for the
collector) is refused here; Mosquitto grants it and drops each denied delivery — either
way nothing denied arrives.

``AccessPolicy.allowed(username, client_id, action, topic)`` is THE decision:

- ``publish`` / ``receive``: ``topic`` is a concrete topic; allowed iff a rule of the
  action's kind (``receive`` uses the ``subscribe`` rules) matches it;
- ``subscribe``: ``topic`` is a filter; allowed iff ONE rule covers it, i.e. every topic
  the filter can match is matched by the rule (``ldp/{run}/dev/+/in/#``, ``#``,
  ``ldp/+/ctl/#`` are refused to a device: they reach other devices' inboxes or runs);
- invalid topics and filters (empty, ``+``/``#`` misplaced or in a topic, U+0000), and
  ``$`` topics (``$SYS``) for everyone but ``admin``'s ``$SYS/#`` read, are refused;
  levels are compared as exact strings (no Unicode normalisation: a look-alike device id
  is another id), an empty level is a level like any other;
- the client id must belong to the username (no impersonation): a device ``d`` connects
  as ``{run}-{d}`` (its stream agent), ``{run}-{d}-sa`` (secure sum) or ``{run}-{d}-lpea``;
  a service ``s`` as ``{run}-{s}`` or ``{run}-{s}-*`` (fan-in connections); ``admin`` with
  any ``{run}-*`` id. A client id that does not belong to the username gets nothing, and
  every broker refuses the CONNECT before it touches the session of that client id (no
  takeover by another identity): the embedded broker and the in-memory transport through
  ``Credentials.authenticate``, Mosquitto through the plugin ``mosquitto_conf_text`` loads
  (``broker/mosquitto_plugin.py``, the same rule in C).

Passwords: a per-run 256-bit master key from ``secrets``; each identity's password is
HMAC-SHA256(key, run, username) (base64url, 43 characters): independent random-looking
passwords for every device, and a process that holds the key (the embedded broker, a
device shard) derives what it needs without a list. ``mosquitto_password_lines`` writes
them as Mosquitto 2 PBKDF2-SHA512 (``$7$``) hashes; ``mosquitto_acl_text`` and
``mosquitto_conf_text`` write the rest, and ``write_mosquitto_files`` also builds the
client-id plugin. Nothing here does I/O except the explicit writers.
"""

from __future__ import annotations

import base64
import contextlib
import contextvars
import hashlib
import hmac
import json
import os
import re
import secrets
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ldpfleet.protocol import topics

if TYPE_CHECKING:
    from ldpfleet.broker.tls import TlsListener

Action = Literal["publish", "subscribe", "receive"]
ACTIONS: tuple[str, ...] = ("publish", "subscribe", "receive")

SERVICES = ("collector", "recorder", "relay", "gateway")
ADMIN = "admin"
BULK_GATEWAY = "bulk_gateway"  # the role of ``gateway-g{g}`` (module doc)
ROLES = ("device", *SERVICES, BULK_GATEWAY, ADMIN)
_BULK_GATEWAY_NAME = re.compile(r"gateway-g(0|[1-9][0-9]{0,8})\Z")
# a device connects under its own id plus these client-id suffixes (devices/*.py)
DEVICE_CLIENT_SUFFIXES = ("", "-sa", "-lpea")
_IDENT = re.compile(r"[A-Za-z0-9_.-]{1,64}\Z")
PASSWORD_ITERATIONS = 101  # mosquitto_passwd's default for $7$ hashes

CREDENTIALS_ENV = "LDPFLEET_CREDENTIALS"  # path of a credentials file, for child processes


class AuthError(ValueError):
    """Authentication was asked for but cannot be set up (the message says how)."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One ACL line: ``action`` ("publish" or "subscribe"; subscribe also grants receiving
    what the filter matches) on ``pattern`` (``{run}`` and ``%u`` substituted)."""

    action: Literal["publish", "subscribe"]
    pattern: str


PATTERNS: tuple[Rule, ...] = (  # every authenticated user (Mosquitto ``pattern`` lines)
    Rule("publish", "ldp/{run}/dev/%u/up/#"),
    Rule("publish", "ldp/{run}/dev/+/in/%u"),
    Rule("subscribe", "ldp/{run}/dev/%u/in/+"),
    Rule("subscribe", "ldp/{run}/ctl/#"),
)

PARTITION_PATTERNS: tuple[Rule, ...] = (  # with P > 1; ``%p`` = the username's level
    Rule("publish", "ldp/{run}/%p/dev/%u/up/#"),
    Rule("subscribe", "ldp/{run}/%p/dev/%u/in/+"),
)

PARTITION_RULES: dict[str, tuple[Rule, ...]] = {  # with P > 1, added to RULES
    "collector": (
        Rule("subscribe", "ldp/{run}/+/dev/+/up/#"),
        Rule("publish", "ldp/{run}/+/dev/+/in/collector"),
        Rule("subscribe", "ldp/{run}/svc/collector/partition"),  # the coordinator
        Rule("subscribe", "ldp/{run}/+/gw/+/up/#"),
        Rule("publish", "ldp/{run}/+/gw/+/in/collector"),
    ),
    "bulk_gateway": (  # a gateway's devices fall in many partitions: any level
        Rule("publish", "ldp/{run}/+/gw/g%g/up/#"),
        Rule("subscribe", "ldp/{run}/+/gw/g%g/in/collector"),
    ),
    "gateway": (
        Rule("publish", "ldp/{run}/+/dev/+/up/#"),
        Rule("publish", "ldp/{run}/+/dev/+/in/+"),
        Rule("subscribe", "ldp/{run}/+/dev/+/in/+"),
    ),
}

RULES: dict[str, tuple[Rule, ...]] = {
    "device": (),  # the patterns only
    "collector": (
        Rule("publish", "ldp/{run}/ctl/#"),
        Rule("publish", "ldp/{run}/rel/#"),
        Rule("publish", "ldp/{run}/svc/collector/#"),
        Rule("subscribe", "ldp/{run}/dev/+/up/#"),
        Rule("subscribe", "ldp/{run}/svc/relay/#"),
        Rule("subscribe", "ldp/{run}/gw/+/up/#"),
        Rule("publish", "ldp/{run}/gw/+/in/collector"),
    ),
    "recorder": (
        Rule("subscribe", "ldp/{run}/#"),
        Rule("publish", "ldp/{run}/svc/recorder/#"),
    ),
    "relay": (
        Rule("publish", "ldp/{run}/ctl/peer_step"),
        Rule("publish", "ldp/{run}/svc/relay/#"),
        Rule("subscribe", "ldp/{run}/dev/+/up/peer_batch"),
        Rule("subscribe", "ldp/{run}/ctl/relay_phase"),
        Rule("subscribe", "ldp/{run}/ctl/stage"),
    ),
    # an IoT gateway carrying many devices on one connection (devices/gateway.py): the
    # broker lets it speak for any device; the gateway enforces each device's own rules
    "gateway": (
        Rule("publish", "ldp/{run}/dev/+/up/#"),
        Rule("publish", "ldp/{run}/dev/+/in/+"),
        Rule("subscribe", "ldp/{run}/dev/+/in/+"),
    ),
    # a bulk gateway ``gateway-g{g}`` (protocol/bulk.py): only its own uplink and inbox
    "bulk_gateway": (
        Rule("publish", "ldp/{run}/gw/g%g/up/#"),
        Rule("subscribe", "ldp/{run}/gw/g%g/in/collector"),
    ),
    ADMIN: (
        Rule("publish", "ldp/{run}/#"),
        Rule("subscribe", "ldp/{run}/#"),
        Rule("subscribe", "$SYS/#"),
    ),
}


# Topics a role may not touch at all, whatever a pattern grants (Mosquitto ``topic deny``
# lines in the role's ``user`` block, which Mosquitto checks before the patterns): the
# collector never reads the relay's round broadcasts, whose pace follows the negotiation
# (issue 20; protocol.peer_relay, "Padding" and "Deadline"). Devices read them through
# ``ldp/{run}/ctl/#`` as before; the recorder and admin (operators) still may.
DENIED: dict[str, tuple[str, ...]] = {
    "collector": ("ldp/{run}/ctl/peer_step",),
}


# MQTT topic and filter semantics ------------------------------------------------------


def valid_topic(topic: str) -> bool:
    """A topic one may publish to: non-empty, no wildcard, no U+0000, <= 65535 bytes."""
    return (
        isinstance(topic, str)
        and 0 < len(topic.encode("utf-8", "surrogatepass")) <= 65535
        and "+" not in topic
        and "#" not in topic
        and "\x00" not in topic
    )


def valid_filter(pattern: str) -> bool:
    """A subscription filter: ``+`` whole levels, ``#`` only as the whole last level."""
    if not isinstance(pattern, str) or not pattern or "\x00" in pattern:
        return False
    if len(pattern.encode("utf-8", "surrogatepass")) > 65535:
        return False
    levels = pattern.split("/")
    for index, level in enumerate(levels):
        if "#" in level and (level != "#" or index != len(levels) - 1):
            return False
        if "+" in level and level != "+":
            return False
    return True


def topic_matches(pattern: str, topic: str) -> bool:
    """MQTT matching of a concrete ``topic`` by a filter (``$`` topics not by wildcards
    at the first level)."""
    plevels = pattern.split("/")
    tlevels = topic.split("/")
    if topic.startswith("$") and plevels[0] in ("+", "#"):
        return False
    for index, level in enumerate(plevels):
        if level == "#":
            return True
        if index >= len(tlevels):
            return False
        if level != "+" and level != tlevels[index]:
            return False
    return len(plevels) == len(tlevels)


def _levels_match(patterns: tuple[list[str], ...], topic: str) -> bool:
    """``any(topic_matches(p, topic) for p in patterns)`` for patterns given split into
    their levels (``AccessPolicy._compiled``): the topic split once, not once a rule; the
    same tests in the same order."""
    tlevels = topic.split("/")
    count = len(tlevels)
    dollar = topic.startswith("$")
    for plevels in patterns:
        if dollar and plevels[0] in ("+", "#"):
            continue
        for index, level in enumerate(plevels):
            if level == "#":
                return True
            if index >= count or (level != "+" and level != tlevels[index]):
                break
        else:
            if len(plevels) == count:
                return True
    return False


def filter_covers(rule: str, pattern: str) -> bool:
    """True iff every topic the filter ``pattern`` can match is matched by ``rule``."""
    rlevels = rule.split("/")
    flevels = pattern.split("/")
    if rlevels[0] in ("+", "#") and flevels[0].startswith("$"):
        return False  # the rule's wildcard does not reach $ topics the filter names
    for index, level in enumerate(rlevels):
        if level == "#":
            return True  # the rest (and this level's parent topic) is covered
        if index >= len(flevels):
            return False  # the rule needs more levels than the filter's topics have
        wanted = flevels[index]
        if wanted == "#":
            return False  # the filter matches any depth here, the rule does not
        if level == "+":
            continue  # any single level, including an empty one or a '+'
        if wanted != level:  # a '+' in the filter is wider than a literal rule level
            return False
    return len(flevels) == len(rlevels)


# Policy ---------------------------------------------------------------------------------


def bulk_gateway_username(gateway: int) -> str:
    """The username (and client id tail) of bulk gateway ``gateway``."""
    return f"gateway-g{int(gateway)}"


def bulk_gateway_number(username: str) -> int | None:
    """``g`` for a username of the form ``gateway-g{g}`` (canonical digits), else None."""
    found = _BULK_GATEWAY_NAME.match(username) if isinstance(username, str) else None
    return None if found is None else int(found.group(1))


def check_device_id(device: str) -> str:
    """Refuse device ids that would be ambiguous as usernames or client ids."""
    if not isinstance(device, str) or not _IDENT.match(device):
        raise ValueError(f"device id {device!r} is not an identifier (1-64 of A-Za-z0-9_.-)")
    if device in ROLES:
        raise ValueError(f"device id {device!r} is a reserved service name")
    if device.startswith(_SERVICE_PREFIXES):
        raise ValueError(f"device id {device!r} starts like a service's client id")
    if device.endswith(_EXTRA_SUFFIXES):
        raise ValueError(f"device id {device!r} ends like a device's extra client id")
    return device


# check_device_id's tests as one str.startswith / endswith each (the generator expressions
# building these per call were ~1/3 of its cost; a broker's ACL decisions call it 3 times)
_SERVICE_PREFIXES = tuple(f"{s}-" for s in (*SERVICES, ADMIN))
_EXTRA_SUFFIXES = tuple(suffix for suffix in DEVICE_CLIENT_SUFFIXES if suffix)


# ``AccessPolicy.allowed`` remembers this many decisions a device of the run (a device
# through a gateway needs 9: its subscriptions, publishes and receptions at the gateway and
# the gateway's at the broker), and at least DECISIONS_MIN. A fixed 200,000 was cleared
# again and again past ~22,000 devices through gateways (helper C, 40,000 devices on
# memory: 480,747 of 1,318,853 decisions computed).
DECISIONS_PER_DEVICE = 16
DECISIONS_MIN = 200_000


@dataclass(frozen=True)
class AccessPolicy:
    """The public half of a run's credentials: who is who, and what each may do."""

    run: str
    devices: frozenset[str] | None = None  # None: any well-formed device id
    partitions: int = 1  # > 1: device topics carry the p{p} level (module doc)
    gateways: int = 0  # bulk gateways gateway-g0 .. gateway-g{gateways-1} (module doc)
    _cache: dict = field(default_factory=dict, compare=False, repr=False)
    # username -> (rules_for, denied_for) of a known username, for ``_decide``: a device's
    # few decisions built its rules each time (helper A, 2026-12-07: ~5 % of the
    # fleet-stream audit's CPU); the same bound as ``_cache``
    _rules: dict = field(default_factory=dict, compare=False, repr=False)
    # (username, client_id) -> ``client_ids_ok``, and (role, partition level, gateway
    # number) -> the role's rules with all but ``%u`` substituted: a device's decisions
    # re-derived its role and rebuilt its rules from the module's tables (helper A,
    # 2026-12-07 evening: the ACL was ~6.5 % of the fleet-stream audit, py-spy); both
    # bounded as ``_cache``
    _ids: dict = field(default_factory=dict, compare=False, repr=False)
    _templates: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        if not _IDENT.match(self.run):
            raise ValueError(f"run id {self.run!r} is not an identifier")
        topics.partition_of("", self.partitions)  # 1..MAX_PARTITIONS, else ParameterError
        if not isinstance(self.gateways, int) or not 0 <= self.gateways <= 10**9:
            raise ValueError(f"gateways must be an integer in 0..10^9, got {self.gateways!r}")

    def role_of(self, username: str | None) -> str | None:
        """The role of an authenticated username, or None (unknown: no rights)."""
        if not isinstance(username, str):
            return None
        if username in RULES and username not in ("device", BULK_GATEWAY):
            return username
        gateway = bulk_gateway_number(username)
        if gateway is not None:
            return BULK_GATEWAY if gateway < self.gateways else None
        try:
            check_device_id(username)
        except ValueError:
            return None
        if self.devices is not None and username not in self.devices:
            return None
        return "device"

    def client_ids_ok(self, username: str | None, client_id: str | None) -> bool:
        """True if ``client_id`` belongs to ``username`` (see the module doc)."""
        role = self.role_of(username)
        if role is None or not isinstance(client_id, str):
            return False
        prefix = f"{self.run}-"
        if not client_id.startswith(prefix) or not _IDENT.match(client_id[len(prefix) :]):
            return False
        rest = client_id[len(prefix) :]
        if role == "device":  # rest is username + one of DEVICE_CLIENT_SUFFIXES
            return rest.startswith(username) and rest[len(username) :] in DEVICE_CLIENT_SUFFIXES
        if role == ADMIN:
            return True
        if role == BULK_GATEWAY:
            return rest == username
        if bulk_gateway_number(rest) is not None:
            return False  # a bulk gateway's client id is its own (the "gateway" service's not)
        return rest == username or rest.startswith(f"{username}-")

    def rules_for(self, username: str) -> list[Rule]:
        """The concrete rules of a (known) username: patterns then its role's lines."""
        role = self.role_of(username)
        if role is None:
            return []
        return [Rule(action, pattern) for action, pattern in self._patterns(username, role)]

    def _patterns(self, username: str, role: str) -> list[tuple[str, str]]:
        """``(action, pattern)`` of each of ``rules_for(username)``: ``{run}``, ``%p`` and
        ``%g`` substituted once per (role, level, number) (``_templates``), then ``%u``.
        The same strings as substituting ``{run}``, ``%u``, ``%p``, ``%g`` in that order: a
        username with a role has no ``%`` (``role_of``: a service name, ``gateway-g{g}``
        or a device id of ``[A-Za-z0-9_.-]``), and the run id, ``p{p}`` and the digits of
        ``g`` have no ``%u``."""
        if self.partitions > 1:
            level = topics.partition_level(topics.partition_of(username, self.partitions))
        else:
            level = ""
        number = str(bulk_gateway_number(username)) if role == BULK_GATEWAY else "%g"
        key = (role, level, number)
        templates = self._templates.get(key)
        if templates is None:
            lines = (*PATTERNS, *RULES[role])
            if self.partitions > 1:
                lines += (*PARTITION_PATTERNS, *PARTITION_RULES.get(role, ()))
            templates = [
                (
                    r.action,
                    r.pattern.replace("{run}", self.run).replace("%p", level).replace("%g", number),
                )
                for r in lines
            ]
            if len(self._templates) >= self.decisions_max:
                self._templates.clear()
            self._templates[key] = templates
        return [(action, pattern.replace("%u", username)) for action, pattern in templates]

    def denied_for(self, username: str) -> list[str]:
        """The concrete topics a (known) username may not touch at all (``DENIED``)."""
        role = self.role_of(username)
        return [t.replace("{run}", self.run) for t in DENIED.get(role or "", ())]

    def _compiled(self, username: str) -> tuple[list[str], tuple, tuple, tuple]:
        """``denied_for(username)``, the levels of each pattern of ``rules_for(username)``
        whose action is publish, then subscribe (in the rules' order; ``_levels_match``),
        and the subscribe patterns themselves, remembered: a pure function of the frozen
        policy and the module's tables."""
        found = self._rules.get(username)
        if found is None:
            role = self.role_of(username)
            patterns = [] if role is None else self._patterns(username, role)
            found = (
                self.denied_for(username),
                tuple(p.split("/") for action, p in patterns if action == "publish"),
                tuple(p.split("/") for action, p in patterns if action == "subscribe"),
                tuple(p for action, p in patterns if action == "subscribe"),
            )
            if len(self._rules) >= self.decisions_max:
                self._rules.clear()
            self._rules[username] = found
        return found

    def _ids_ok(self, username: str | None, client_id: str | None) -> bool:
        """``client_ids_ok(username, client_id)``, remembered (pure, as ``_compiled``)."""
        key = (username, client_id)
        found = self._ids.get(key)
        if found is None:
            found = self.client_ids_ok(username, client_id)
            if len(self._ids) >= self.decisions_max:
                self._ids.clear()
            self._ids[key] = found
        return found

    def _denied(
        self, username: str, action: str, topic: str, denied: list[str] | None = None
    ) -> bool:
        """A publish or receive of a denied topic, or a subscription whose filter could
        match one (the in-memory transport and the embedded broker check a filter once, at
        SUBSCRIBE; Mosquitto grants the filter and drops each denied delivery)."""
        if denied is None:
            denied = self.denied_for(username)
        if action == "subscribe":
            return valid_filter(topic) and any(topic_matches(topic, t) for t in denied)
        return topic in denied

    def allowed(self, username: str | None, client_id: str | None, action: str, topic: str) -> bool:
        """May ``username``, connected as ``client_id``, ``action`` (publish a topic,
        subscribe a filter, receive a topic) on ``topic``? Pure; the module doc says how."""
        key = (username, client_id, action, topic)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        decision = self._decide(username, client_id, action, topic)
        if len(self._cache) >= self.decisions_max:
            self._cache.clear()  # a bound, not a working set: never reached by a run
        self._cache[key] = decision
        return decision

    @property
    def decisions_max(self) -> int:
        """How many decisions ``allowed`` remembers: ``DECISIONS_PER_DEVICE`` a device of
        the run, at least ``DECISIONS_MIN``."""
        return max(DECISIONS_MIN, DECISIONS_PER_DEVICE * len(self.devices or ()))

    def _decide(self, username: str | None, client_id: str | None, action: str, topic: str) -> bool:
        if action not in ACTIONS or not self._ids_ok(username, client_id):
            return False
        assert username is not None
        denied, publish, subscribe, filters = self._compiled(username)
        if self._denied(username, action, topic, denied):
            return False
        if action == "publish":
            if not valid_topic(topic) or topic.startswith("$"):
                return False
            return _levels_match(publish, topic)
        if action == "receive":
            if not valid_topic(topic):
                return False
            return _levels_match(subscribe, topic)
        if not valid_filter(topic):
            return False
        return any(filter_covers(rule, topic) for rule in filters)


# Credentials ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Credentials:
    """A run's secrets: the master key every password derives from, and the policy."""

    run: str
    key: bytes
    devices: tuple[str, ...] | None = None
    partitions: int = 1  # the run's collector partitions (the ACL's partition levels)
    gateways: int = 0  # the run's bulk gateways (identities gateway-g{g}, module doc)

    @classmethod
    def generate(
        cls,
        run: str,
        devices: Iterable[str] | None = None,
        *,
        partitions: int = 1,
        gateways: int = 0,
    ) -> Credentials:
        """Fresh credentials for ``run`` (``devices``: the ids allowed to connect; None: any
        well-formed device id whose holder got its password from this object;
        ``partitions``: ``[collector] partitions``; ``gateways``: the bulk gateways)."""
        listed = None if devices is None else tuple(check_device_id(d) for d in devices)
        return cls(run, secrets.token_bytes(32), listed, partitions, gateways)

    @property
    def policy(self) -> AccessPolicy:
        """The ACL decision for this run."""
        cached = self.__dict__.get("_policy")
        if cached is None:
            devices = None if self.devices is None else frozenset(self.devices)
            cached = AccessPolicy(self.run, devices, self.partitions, self.gateways)
            object.__setattr__(self, "_policy", cached)
        return cached

    def password(self, username: str) -> str:
        """The password of ``username`` (any name; only known ones can log in)."""
        digest = hmac.new(self.key, f"{self.run}\x00{username}".encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).decode().rstrip("=")

    def username_for(self, client_id: str) -> str | None:
        """Which identity a client id of this run belongs to (None: none)."""
        prefix = f"{self.run}-"
        if not client_id.startswith(prefix):
            return None
        rest = client_id[len(prefix) :]
        if bulk_gateway_number(rest) is not None:
            return rest if self.policy.role_of(rest) == BULK_GATEWAY else None
        for service in SERVICES:
            if rest == service or rest.startswith(f"{service}-"):
                return service
        for suffix in DEVICE_CLIENT_SUFFIXES:
            if suffix and rest.endswith(suffix):
                rest = rest[: -len(suffix)]
                break
        username = rest
        return username if self.policy.role_of(username) == "device" else None

    def for_client(self, client_id: str) -> tuple[str, str] | None:
        """``(username, password)`` to connect as ``client_id``, or None."""
        username = self.username_for(client_id)
        return None if username is None else (username, self.password(username))

    def authenticate(
        self, username: str | None, password: str | bytes | None, client_id: str | None
    ) -> bool:
        """Does this CONNECT (username, password, client id) log in? Constant-time compare."""
        if not isinstance(username, str) or password is None:
            return False
        if isinstance(password, bytes):
            try:
                password = password.decode()
            except UnicodeDecodeError:
                return False
        if self.policy.role_of(username) is None:
            return False
        if not hmac.compare_digest(password.encode(), self.password(username).encode()):
            return False
        return self.policy.client_ids_ok(username, client_id)

    def allowed(self, username: str | None, client_id: str | None, action: str, topic: str) -> bool:
        """``self.policy.allowed``."""
        return self.policy.allowed(username, client_id, action, topic)

    def usernames(self, devices: Iterable[str] | None = None) -> list[str]:
        """Every identity to write into a password file (services, admin, devices, bulk
        gateways)."""
        listed = list(self.devices if devices is None else devices)
        gateways = [bulk_gateway_username(g) for g in range(self.gateways)]
        return [*SERVICES, ADMIN, *(check_device_id(d) for d in listed), *gateways]

    # serialisation (for a child process or another host: keep it private) -------------

    def to_dict(self) -> dict:
        """JSON-able form, including the secret key."""
        return {
            "run": self.run,
            "key": self.key.hex(),
            "devices": None if self.devices is None else list(self.devices),
            "partitions": self.partitions,
            "gateways": self.gateways,
        }

    @classmethod
    def from_dict(cls, data: dict) -> Credentials:
        """Inverse of ``to_dict``."""
        devices = data.get("devices")
        return cls(
            str(data["run"]),
            bytes.fromhex(data["key"]),
            None if devices is None else tuple(check_device_id(d) for d in devices),
            int(data.get("partitions", 1)),
            int(data.get("gateways", 0)),
        )

    def save(self, path: str | Path) -> Path:
        """Write the credentials (secret) to ``path`` readable by the owner only."""
        path = Path(path)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(self.to_dict(), handle)
        return path

    @classmethod
    def load(cls, path: str | Path) -> Credentials:
        """Read credentials written by ``save`` (``AuthError`` names what is wrong)."""
        try:
            return cls.from_dict(json.loads(Path(path).read_text()))
        except OSError as error:
            raise AuthError(f"cannot read credentials {path}: {error.strerror}") from None
        except (ValueError, KeyError, TypeError) as error:
            raise AuthError(f"{path} is not an ldpfleet credentials file ({error})") from None


# The run's credentials as ambient context (for code paths that open brokers themselves) --

_AMBIENT: contextvars.ContextVar[Credentials | None] = contextvars.ContextVar(
    "ldpfleet_credentials", default=None
)


def ambient() -> Credentials | None:
    """The credentials set by ``use_credentials`` in this context, else those named by the
    ``LDPFLEET_CREDENTIALS`` environment variable (a child process of a run), else None."""
    found = _AMBIENT.get()
    if found is not None:
        return found
    path = os.environ.get(CREDENTIALS_ENV)
    return Credentials.load(path) if path else None


# the credentials file this context's use_credentials block exported (child_environment)
_EXPORTED: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "ldpfleet_credentials_file", default=None
)


@contextlib.contextmanager
def use_credentials(
    credentials: Credentials | None, *, export_dir: Path | None = None
) -> Iterator[None]:
    """Make ``credentials`` the ambient ones for this block; with ``export_dir``, also save
    them there (mode 0600) and name the file in ``LDPFLEET_CREDENTIALS`` so child processes
    started in the block (device shards) find them. Restored when the block ends.

    Blocks of concurrent runs (threads, ``asyncio.gather``) may overlap in any order: the
    variable names the newest block still open, and once the last one ends it is what it
    was before the first (``_EXPORTS``; restoring each block's own "previous" left the
    file of a run already ended, deleted, for the next run without credentials to load)."""
    token = _AMBIENT.set(credentials)
    path = exported = None
    try:
        if credentials is not None and export_dir is not None:
            path = credentials.save(Path(export_dir) / "credentials.json")
            exported = _EXPORTED.set(str(path))
            _EXPORTS.opened(str(path))
        yield
    finally:
        _AMBIENT.reset(token)
        if path is not None:
            _EXPORTED.reset(exported)
            _EXPORTS.closed(str(path))
            path.unlink(missing_ok=True)


def child_environment() -> dict[str, str]:
    """The environment for a child process this context starts: ``os.environ`` with
    ``LDPFLEET_CREDENTIALS`` naming the file of this context's own ``use_credentials``
    block. The process-wide variable names the newest block still open, which for
    concurrent runs (threads, ``asyncio.gather``) is another run's: a child inheriting it
    would log in to its run's broker with the other run's passwords."""
    env = dict(os.environ)
    path = _EXPORTED.get()
    if path is not None:
        env[CREDENTIALS_ENV] = path
    return env


class _ExportedFiles:
    """The credentials files the open ``use_credentials`` blocks of this process export,
    oldest first, and the variable's value before the first of them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: list[str] = []
        self._before: str | None = None

    def opened(self, path: str) -> None:
        """A block exports ``path``: the variable names it."""
        with self._lock:
            if not self._open:
                self._before = os.environ.get(CREDENTIALS_ENV)
            self._open.append(path)
            os.environ[CREDENTIALS_ENV] = path

    def closed(self, path: str) -> None:
        """The block of ``path`` ended: the newest open one's file, else the value before."""
        with self._lock:
            self._open.remove(path)
            if self._open:
                os.environ[CREDENTIALS_ENV] = self._open[-1]
            elif self._before is None:
                os.environ.pop(CREDENTIALS_ENV, None)
            else:
                os.environ[CREDENTIALS_ENV] = self._before


_EXPORTS = _ExportedFiles()


# Mosquitto files ------------------------------------------------------------------------


def mosquitto_hash(
    password: str, salt: bytes | None = None, iterations: int = PASSWORD_ITERATIONS
) -> str:
    """A Mosquitto 2 password hash: ``$7$iterations$base64(salt)$base64(PBKDF2-SHA512)``."""
    salt = secrets.token_bytes(12) if salt is None else salt
    digest = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations, 64)
    return f"$7${iterations}${base64.b64encode(salt).decode()}${base64.b64encode(digest).decode()}"


def verify_mosquitto_hash(password: str, encoded: str) -> bool:
    """Check a password against a ``$7$`` hash (for tests and tools)."""
    try:
        _, kind, iterations, salt, digest = encoded.split("$")
    except ValueError:
        return False
    if kind != "7":
        return False
    computed = hashlib.pbkdf2_hmac(
        "sha512", password.encode(), base64.b64decode(salt), int(iterations), 64
    )
    return hmac.compare_digest(computed, base64.b64decode(digest))


def mosquitto_password_lines(credentials: Credentials, devices: Iterable[str] | None = None) -> str:
    """A Mosquitto ``password_file``: one ``username:$7$...`` line per identity."""
    return "".join(
        f"{user}:{mosquitto_hash(credentials.password(user))}\n"
        for user in credentials.usernames(devices)
    )


def _mosquitto_access(action: str) -> str:
    return "write" if action == "publish" else "read"


def mosquitto_acl_text(run: str, partitions: int = 1, gateways: int = 0) -> str:
    """A Mosquitto ``acl_file`` with the same rights as ``AccessPolicy`` for ``run``:
    ``pattern`` lines (``%u``) for every user, then a ``user`` block per service role (its
    ``DENIED`` topics first, as ``topic deny`` lines: Mosquitto refuses them before it looks
    at the patterns) and one per bulk gateway ``gateway-g{g}``, ``g < gateways`` (``%g``
    filled: exact).
    With ``partitions`` > 1 the partitioned lines too, ``%p`` widened to ``+``."""
    wide = partitions > 1
    lines = [
        f"# ldpfleet ACL for run {run} (generated; see docs/reliability.md)",
        "# every user: a device's own up/ and inbox topics, the broadcasts",
    ]
    for rule in (*PATTERNS, *(PARTITION_PATTERNS if wide else ())):
        pattern = rule.pattern.format(run=run).replace("%p", "+")
        lines.append(f"pattern {_mosquitto_access(rule.action)} {pattern}")
    for role in (*SERVICES, ADMIN):
        lines.append("")
        lines.append(f"user {role}")
        for topic in DENIED.get(role, ()):
            lines.append(f"topic deny {topic.format(run=run)}")
        for rule in (*RULES[role], *(PARTITION_RULES.get(role, ()) if wide else ())):
            lines.append(f"topic {_mosquitto_access(rule.action)} {rule.pattern.format(run=run)}")
    bulk = (*RULES[BULK_GATEWAY], *(PARTITION_RULES[BULK_GATEWAY] if wide else ()))
    for gateway in range(gateways):
        lines.append("")
        lines.append(f"user {bulk_gateway_username(gateway)}")
        for rule in bulk:
            pattern = rule.pattern.format(run=run).replace("%g", str(gateway))
            lines.append(f"topic {_mosquitto_access(rule.action)} {pattern}")
    return "\n".join(lines) + "\n"


def mosquitto_conf_text(
    directory: Path,
    *,
    port: int,
    host: str = "127.0.0.1",
    persistence: bool = True,
    user: str | None = None,
    plugin: Path | None = None,
    run: str | None = None,
    tls: TlsListener | None = None,
    plain: bool = True,
) -> str:
    """A Mosquitto 2 config using ``passwords`` and ``acl`` in ``directory``. ``user``: the
    account Mosquitto runs as when started by root (it drops privileges before it reads
    the password file and loads the plugin, so that account must be able to read
    ``directory``). ``plugin`` (with ``run``): the client-id binding plugin
    (``broker/mosquitto_plugin.py``) that refuses a client id of another identity.
    ``tls``: a TLS listener as well (``broker.tls.TlsListener``; the same logins and
    ACL), and without ``plain`` only that one."""
    directory = Path(directory).resolve()
    if plugin is not None and run is None:
        raise ValueError("the client-id binding plugin needs the run id")
    if not plain and tls is None:
        raise ValueError("a configuration without the plain listener needs a TLS listener")
    lines = [
        "# ldpfleet: authenticated listener (generated; see docs/reliability.md)",
        *([f"user {user}"] if user else []),
        "per_listener_settings false",
        *([f"listener {port} {host}"] if plain else []),
        *(tls.conf_lines() if tls is not None else []),
        "allow_anonymous false",
    ]
    if plugin is not None:
        from ldpfleet.broker.mosquitto_plugin import plugin_conf_lines

        assert run is not None
        lines += [
            "# client ids bound to logins: no session takeover by another identity",
            *plugin_conf_lines(plugin, run),
        ]
    lines += [
        f"password_file {directory / 'passwords'}",
        f"acl_file {directory / 'acl'}",
        "max_queued_messages 100000",
        "max_queued_bytes 0",
        "max_inflight_messages 100",
        "max_connections -1",
        "set_tcp_nodelay true",
    ]
    if persistence:
        lines += [
            "persistence true",
            f"persistence_location {directory / 'data'}/",
            "autosave_interval 30",
        ]
    else:
        lines.append("persistence false")
    lines += ["log_type error", "log_type warning", "log_type notice"]
    return "\n".join(lines) + "\n"


def write_mosquitto_files(
    directory: str | Path,
    credentials: Credentials,
    *,
    port: int,
    host: str = "127.0.0.1",
    devices: Iterable[str] | None = None,
    persistence: bool = True,
    user: str | None = None,
    client_id_binding: bool = True,
    tls: TlsListener | None = None,
    plain: bool = True,
) -> dict[str, Path]:
    """Write ``passwords`` (0600), ``acl``, ``mosquitto.conf``, ``credentials.json``
    (0600: what ldpfleet processes connect with) and, with ``client_id_binding`` (the
    default), the plugin that binds client ids to logins (``ldpfleet_clientid.so``, built
    here: ``broker/mosquitto_plugin.py``) into ``directory``; returns their paths.
    ``client_id_binding=False`` leaves any identity free to take over another's session.
    ``tls`` and ``plain``: as ``mosquitto_conf_text``."""
    directory = Path(directory)
    if tls is not None:
        tls.conf_lines()  # a missing certificate file: before anything is written
    directory.mkdir(parents=True, exist_ok=True)
    plugin = None
    if client_id_binding:
        from ldpfleet.broker.mosquitto_plugin import build_plugin

        plugin = build_plugin(directory)  # first: no half-written directory if it fails
    paths = {
        "passwords": directory / "passwords",
        "acl": directory / "acl",
        "conf": directory / "mosquitto.conf",
        "credentials": directory / "credentials.json",
    }
    fd = os.open(paths["passwords"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(mosquitto_password_lines(credentials, devices))
    paths["acl"].write_text(
        mosquitto_acl_text(credentials.run, credentials.partitions, credentials.gateways)
    )
    if persistence:
        data = directory / "data"
        data.mkdir(exist_ok=True)
        paths["data"] = data
    if plugin is not None:
        paths["plugin"] = plugin
    paths["conf"].write_text(
        mosquitto_conf_text(
            directory,
            port=port,
            host=host,
            persistence=persistence,
            user=user,
            plugin=plugin,
            run=credentials.run,
            tls=tls,
            plain=plain,
        )
    )
    credentials.save(paths["credentials"])
    return paths
