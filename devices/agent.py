"""``DeviceAgent``: the thin asyncio pump of one simulated device.

It opens a ``Session`` (its own client id, its inbox and ``ctl/``; reconnecting with
backoff after a broker restart), starts its ``StreamReporter``, feeds it the sensor
readings (all at once, or one per ``step_seconds`` when paced like a real sensor), and
moves messages between the session and the machine until the machine is finished, or
gave up on a silent collector (the reporter's own deadline, ``StreamReporter.listen``: the
agent only tells it when it listens, and stops pumping once it gave up). With a
``DeviceStorage`` (RAM, for the simulated crashes of ``Fleet`` fault injection) or a
``state_file.DeviceStateFile`` (SQLite, so a killed shard process can resume its devices)
the machine's state is saved before anything it produced is published. Deliveries that
fail to decode, or that the machine refuses, are counted; a protocol violation by the
collector ends the agent with ``state == "error"``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle

import numpy as np
from ldpfleet.broker.pump import background, drive_timers, publish_outbound
from ldpfleet.broker.session import Session
from ldpfleet.broker.transport import Transport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.stream import StreamReporter, check_silence_timeout

log = logging.getLogger(__name__)


TIMER_CHECK = 30.0  # seconds between timer re-checks when nothing happens (wake otherwise)


class DeviceStorage:
    """A device's non-volatile memory (flash), simulated: the whole state of its
    ``StreamReporter`` (privatised values, ledger, random generator, outbox), saved before
    anything it produced is published. A device that crashes loses its RAM; one that comes
    back restores this and resends what was not acknowledged: it never privatises a step
    twice, never re-spends budget, and its reports are those of an uninterrupted run."""

    def __init__(self) -> None:
        self._saved: dict[str, bytes] = {}
        self.saves = 0

    def needs_save(self, reporter: StreamReporter) -> bool:
        """Always: the crash plan freezes a device right after a save (``crash_at_step``)."""
        return True

    def save(self, reporter: StreamReporter) -> None:
        """Persist the reporter's state (pickled: a faithful copy of every field)."""
        self._saved[reporter.device] = pickle.dumps(reporter, protocol=pickle.HIGHEST_PROTOCOL)
        self.saves += 1

    def load(self, device: str) -> StreamReporter | None:
        """The last saved state of ``device`` (None: it never saved one)."""
        blob = self._saved.get(device)
        return None if blob is None else pickle.loads(blob)


class DeviceAgent:
    """One device: a session, a ``StreamReporter`` and its readings."""

    def __init__(
        self,
        transport: Transport,
        reporter: StreamReporter,
        readings: np.ndarray,
        *,
        step_seconds: float = 0.0,
        connect_gate: asyncio.Semaphore | None = None,
        silence_timeout: float | None = None,
        storage: DeviceStorage | None = None,
        crash_at_step: int | None = None,
    ) -> None:
        self.transport = transport
        self.reporter = reporter
        self.readings = np.asarray(readings, dtype=float)
        self.step_seconds = step_seconds
        self.connect_gate = connect_gate
        self.storage = storage
        self.refused_messages = 0
        self.error: str | None = None
        self.connected_at: float | None = None
        # give up after this many seconds without a message from the collector (None:
        # never): a collector that is gone must not keep a device retransmitting forever;
        # also the longest outage of the broker the device waits out. The reporter keeps
        # the deadline and decides (``StreamReporter.listen``); a bad value is refused here
        self.silence_timeout = check_silence_timeout(silence_timeout)
        self.gave_up: str | None = None  # why the agent stopped before its stream finished
        self.session: Session | None = None
        # fault injection: once this many steps are privatised and saved, the device
        # "crashes" before publishing (``crashed`` is set; the fleet cancels the agent)
        self.crash_at_step = crash_at_step
        self.crashed = asyncio.Event()
        self._inputs = asyncio.Event()  # set after every machine input (wakes the timer)
        self._gate_held = False  # the connect gate, held until the collector's first word
        self._gate_timer: asyncio.TimerHandle | None = None
        self._listening: asyncio.Task | None = None  # the task in the message loop
        self._stopping = False  # the machine gave up: the message loop is being stopped

    @property
    def device(self) -> str:
        """The device id."""
        return self.reporter.device

    @property
    def reconnects(self) -> int:
        """Connections re-established after a loss (broker restart, network failure)."""
        return self.session.reconnects if self.session is not None else 0

    async def _publish(self) -> None:
        """Persist (with storage), then publish the reporter's outbox."""
        assert self.session is not None
        if self.crashed.is_set():
            await asyncio.Event().wait()  # crashed: nothing more leaves this device
        if self.storage is not None and self.storage.needs_save(self.reporter):
            self.storage.save(self.reporter)
        if self.crash_at_step is not None and self.reporter.privatised >= self.crash_at_step:
            self.crashed.set()
            await asyncio.Event().wait()  # frozen until the fleet pulls the plug
        self._inputs.set()  # the machine may have a new deadline: re-read it
        await publish_outbound(self.session, self.reporter)

    async def _after_timer(self) -> None:
        """After the machine's timer: stop the message loop if it gave up, then publish
        what it sent (its retransmissions)."""
        if self.reporter.gave_up is not None:
            self._stop_listening()
        await self._publish()

    def _stop_listening(self) -> None:
        """End the message loop (once): its task is cancelled out of its wait, and ``run``
        takes that cancellation back (``_listen``)."""
        if self._listening is not None and not self._stopping:
            self._stopping = True
            self._listening.cancel()

    async def _feed_paced(self) -> None:
        loop = asyncio.get_running_loop()
        for value in self.readings[self.reporter.privatised :]:
            if self.reporter.stopped:
                return
            self.reporter.add_readings([value], loop.time())
            await self._publish()
            await asyncio.sleep(self.step_seconds)

    async def _open(self, session: Session) -> None:
        """Open the session through the connect gate, and hold the gate until the
        collector's first word (its answer to the hello) or ``retransmit_after`` seconds
        (``_release_gate``): at most ``connect_concurrency`` devices wait for a first
        answer at once. Before, the gate was released as soon as the session opened, so a
        large fleet put every hello in the collector's queue at once; past ~10,000 devices
        in one process the answers took longer than ``retransmit_after`` and every device
        sent its hello again (20,000 through gateways on memory: 20,256 retransmissions,
        CPU 35 s; 40,000 on a loaded machine: 546,000 and 567 s instead of 50 s: helper C,
        docs/scaling.md)."""
        if self.connect_gate is None:
            await session.__aenter__()
            return
        await self.connect_gate.acquire()
        self._gate_held = True
        try:
            await session.__aenter__()
        except BaseException:
            self._release_gate()
            raise
        loop = asyncio.get_running_loop()
        self._gate_timer = loop.call_later(
            self.reporter.config.retransmit_after, self._release_gate
        )

    def _release_gate(self) -> None:
        """Give the connect gate back (once)."""
        if self._gate_timer is not None:
            self._gate_timer.cancel()
            self._gate_timer = None
        if self._gate_held and self.connect_gate is not None:
            self._gate_held = False
            self.connect_gate.release()

    async def run(self) -> None:
        """Report the whole stream (or, for a device restored from its storage, the rest
        of it); returns when the machine is finished."""
        loop = asyncio.get_running_loop()
        run, device = self.reporter.config.run, self.device
        # Exact inbox topics, not ``in/+``: brokers such as amqtt match wildcard filters
        # one by one, while exact filters cost a string comparison (DESIGN.md, facts).
        # Only ``ctl/stage`` of the broadcasts: the retained run announcement on ``ctl/run``
        # (protocol.rendezvous) is the fleet's business, not the stream machine's.
        session = Session(
            self.transport,
            f"{run}-{device}",
            (
                topics.inbox(
                    run, device, topics.COLLECTOR_ID, self.reporter.config.partition(device)
                ),
                topics.ctl(run, "stage"),
            ),
            give_up_after=self.silence_timeout,
        )
        await self._open(session)
        self.session = session
        try:
            self.connected_at = loop.time()
            if self.reporter.state == "idle":
                self.reporter.start(loop.time())
            if self.step_seconds <= 0 and self.reporter.privatised < len(self.readings):
                self.reporter.add_readings(self.readings[self.reporter.privatised :], loop.time())
            await self._publish()
            self.reporter.listen(loop.time(), self.silence_timeout)

            feeder = self._feed_paced() if self.step_seconds > 0 else asyncio.sleep(0)
            async with (
                background(
                    drive_timers(
                        self.reporter, self._after_timer, max_sleep=TIMER_CHECK, wake=self._inputs
                    )
                ),
                background(feeder) as feeding,
                contextlib.aclosing(session.messages()) as deliveries,
            ):
                _end_when_failed(feeding)
                await self._listen(deliveries)
            if self.reporter.gave_up is not None:
                self.gave_up = self.reporter.gave_up
                log.warning("%s: gave up: %s", self.device, self.gave_up)
        finally:
            self._release_gate()
            await session.__aexit__(None, None, None)

    async def _listen(self, deliveries) -> None:
        """Feed the deliveries to the machine until it is finished, or until it gave up at
        its timer (``_stop_listening`` cancels this task; the cancellation is taken back
        here unless someone else cancelled it too)."""
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        assert task is not None
        self._listening, self._stopping = task, False
        try:
            async for delivery in deliveries:
                self._release_gate()
                self._handle(delivery.topic, delivery.payload, loop.time())
                await self._publish()
                if self.reporter.stopped:
                    break
        except asyncio.CancelledError:
            if not self._stopping or task.uncancel() > 0:
                raise
        finally:
            self._listening = None

    def _handle(self, topic_text: str, payload: bytes, now: float) -> None:
        try:
            topic = topics.parse(topic_text)
            message = codec.decode(payload)
        except RemoteProtocolError as error:
            self.reporter.heard(now)  # a delivery all the same: the collector is there
            self.refused_messages += 1
            log.debug("%s: refused %s: %s", self.device, topic_text, error)
            return
        try:
            self.reporter.receive(topic, message, now)
        except RemoteProtocolError as error:
            self.refused_messages += 1
            if self.reporter.state == "error":
                self.error = str(error)
                log.warning("%s: collector violated the protocol: %s", self.device, error)
            else:
                log.debug("%s: refused %s: %s", self.device, topic_text, error)


def _end_when_failed(feeding: asyncio.Future) -> None:
    """A paced device whose feeder fails (a plugin's ``perturb`` raising mid-stream) ends at
    once: the device's task is cancelled out of its message loop and ``background`` raises
    the feeder's error, as an unpaced device's failure does. Before, the error surfaced only
    when the message loop ended, and it never did: the collector waited for this device's
    reports until ``collector.stage_timeout`` (600 s by default; found by helper C)."""
    device_task = asyncio.current_task()

    def feeder_done(task: asyncio.Future) -> None:
        if not task.cancelled() and task.exception() is not None and device_task is not None:
            device_task.cancel()  # ``background`` then raises the feeder's error instead

    feeding.add_done_callback(feeder_done)
