"""``ldpfleet watch``: a live summary of the fleets running on a broker.

It subscribes to ``ldp/{run}/#`` (or ``ldp/#``: every run) and keeps, per run, the
devices heard from, messages and bytes by kind, rejections, the current stage and the
message rate; ``render`` draws it as a rich table, refreshed while messages arrive. It
only reads: with a broker that enforces the run's ACL it must log in as the run's
``recorder`` or ``admin`` (``--credentials``).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from dataclasses import dataclass, field

from ldpfleet.broker.recorder import classify
from ldpfleet.broker.trace import ROUNDS
from ldpfleet.broker.transport import Transport
from ldpfleet.protocol import topics
from rich.table import Table


@dataclass
class RunView:
    """What has been seen of one run."""

    devices: set[str] = field(default_factory=set)
    messages: Counter = field(default_factory=Counter)
    bytes: int = 0
    rejected: int = 0
    stage: str = "?"
    first: float | None = None
    last: float | None = None

    def rate(self) -> float:
        """Messages per second over the run so far."""
        if self.first is None or self.last is None or self.last <= self.first:
            return 0.0
        return sum(self.messages.values()) / (self.last - self.first)


# what a control message says about the stage of a run of any kind (stream, secure sum,
# GC-DP, CADR-LDP); the secure-aggregation rounds as ``trace follow`` names them
STAGE_OF_KIND = {
    **{kind: name for kind, name in ROUNDS.items() if kind.startswith("sa_")},
    "run_open": "announced",
    "cadr_plan": "cadr: plan",
    "cadr_query": "cadr: θ search",
    "cadr_theta": "cadr: θ chosen",
    "degree_release": "cadr: degrees released",
    "gcdp_release": "gcdp: releasing",
}


def _field(text: str, name: str) -> str:
    return text.split(f'"{name}":"', 1)[1].split('"', 1)[0]


def stage_of(kind: str, payload: bytes) -> str | None:
    """The stage a message announces or belongs to, or None (a data message)."""
    with contextlib.suppress(Exception):  # a malformed payload says nothing
        if kind == "stage":
            text = payload.decode()
            return f"{_field(text, 'stage')} {_field(text, 'state')}"
        if kind == "relay_phase":
            return f"cadr: {_field(payload.decode(), 'phase')}"
    return STAGE_OF_KIND.get(kind)


class FleetWatch:
    """Per-run counters fed with raw deliveries."""

    def __init__(self) -> None:
        self.runs: dict[str, RunView] = {}
        self.subscribed = False  # ``watch`` has subscribed (messages from now on are seen)

    def observe(self, topic: str, payload: bytes, now: float) -> None:
        """Count one delivery (never raises: bad input is counted as ``invalid``)."""
        parts = topic.split("/")
        run = parts[1] if len(parts) > 1 and parts[0] == topics.PREFIX else "?"
        view = self.runs.setdefault(run, RunView())
        family, sender, _, kind, _ = classify(topic, payload)
        view.messages[kind] += 1
        view.bytes += len(payload)
        view.first = now if view.first is None else view.first
        view.last = now
        if family == "up" and sender:  # a device speaking
            view.devices.add(sender)
        if kind == "reject":
            view.rejected += 1
        stage = stage_of(kind, payload)
        if stage is not None:
            view.stage = stage

    def summary(self) -> dict:
        """Plain data (``--json``)."""
        return {
            run: {
                "devices": len(view.devices),
                "messages": dict(view.messages),
                "bytes": view.bytes,
                "rejected": view.rejected,
                "stage": view.stage,
                "messages_per_s": round(view.rate(), 1),
            }
            for run, view in sorted(self.runs.items())
        }

    def render(self) -> Table:
        """The live table."""
        table = Table(title="ldpfleet watch")
        # the run id is never cut or wrapped (it is what --run and the outputs use); the
        # numbers are right-aligned
        table.add_column("run", no_wrap=True, min_width=max(map(len, self.runs), default=3))
        table.add_column("stage", min_width=10)
        for column in ("devices", "reports", "acks", "rejected", "msg/s", "MB"):
            table.add_column(column, justify="right")
        for run, view in sorted(self.runs.items()):
            table.add_row(
                run,
                view.stage,
                str(len(view.devices)),
                str(view.messages.get("sw_report", 0)),
                str(view.messages.get("ack", 0)),
                str(view.rejected),
                f"{view.rate():.0f}",
                f"{view.bytes / 1e6:.2f}",
            )
        return table


async def watch(
    transport: Transport,
    board: FleetWatch,
    *,
    run: str | None = None,
    seconds: float | None = None,
    until_closed: bool = False,
) -> FleetWatch:
    """Feed ``board`` from the broker for ``seconds`` (None: until cancelled), or until the
    watched run's final ``run closed`` with ``until_closed``."""
    pattern = topics.all_of_run(run) if run else f"{topics.PREFIX}/#"
    client_id = f"{run}-recorder-watch" if run else f"watch-{int(time.time() * 1000) % 10**9}"
    try:
        async with asyncio.timeout(seconds), transport.connect(client_id) as conn:
            await conn.subscribe(pattern)
            board.subscribed = True
            async for delivery in conn.messages():
                board.observe(delivery.topic, delivery.payload, time.monotonic())
                payload = delivery.payload
                if until_closed and b'"stage":"run"' in payload and b'"closed"' in payload:
                    break
    except TimeoutError:
        pass  # the requested watching time is over
    return board
