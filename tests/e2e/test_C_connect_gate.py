"""The connect gate holds a device until the collector's first word (helper C, scaling on
memory): at most ``[fleet] connect_concurrency`` devices wait for the answer to their hello
at once. Before, the gate was released as soon as a session opened, every hello of a large
fleet queued at once, the answers took longer than ``retransmit_after`` and every device
sent its hello again (20,000 devices on memory: 20,256 retransmissions, 0 now). A device
whose collector never answers holds its place ``retransmit_after`` seconds at most. On
virtual time (tests/virtual_time.py)."""

from __future__ import annotations

from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.e2e.test_timeouts import on_virtual_time

SCENARIO = """
[scenario]
name = "gate"
seed = 2
[fleet]
devices = 20
connect_concurrency = 4
[stream]
steps = 10
eps = 2.0
w = 5
batch_steps = 5
retransmit_after = 5.0
[collector]
max_in_flight = 8
[source]
kind = "synthetic"
bounds = [-1.5, 1.5]
"""


class Watching(MemoryTransport):
    """Counts the devices that sent a hello and heard nothing from the collector yet."""

    def __init__(self, run: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.prefix = f"{run}-"
        self.waiting: set[str] = set()
        self.most_waiting = 0

    def _route(self, topic: str, payload: bytes, retain: bool = False) -> None:
        if topic.endswith("/up/hello"):
            self.waiting.add(topic.split("/")[-3])
            self.most_waiting = max(self.most_waiting, len(self.waiting))
        super()._route(topic, payload, retain)

    def _deliver(self, loop, client_id: str, topic: str, payload: bytes) -> None:
        if "/in/" in topic:
            self.waiting.discard(client_id.removeprefix(self.prefix))
        super()._deliver(loop, client_id, topic, payload)


def test_at_most_connect_concurrency_devices_wait_for_a_first_answer(tmp_path):
    # every answer to a device takes 1 s (virtual): without the gate all 20 hellos wait
    transport = Watching("g1", delay=lambda topic, payload, to: 1.0 if "/in/" in topic else 0.0)
    results, _ = on_virtual_time(
        run_scenario(parse_scenario(SCENARIO), broker=transport, out_dir=tmp_path, run_id="g1")
    )
    assert results["reports_lost"] == 0 and results["devices_complete"] == 20
    assert 1 <= transport.most_waiting <= 4
    assert results["fleet"]["retransmissions"] == 0


def test_a_device_never_answered_holds_its_place_retransmit_after_at_most(tmp_path):
    # the collector's answers to d0000 are all lost: d0000 never hears a word, and gives
    # its gate place up after retransmit_after (5 s); with connect_concurrency = 1 every
    # other device connects after it and completes
    one_at_a_time = SCENARIO.replace("connect_concurrency = 4", "connect_concurrency = 1")
    scenario = parse_scenario(one_at_a_time)
    transport = MemoryTransport(
        drop=lambda topic, payload, to: to == "g2-d0000" and "/in/" in topic
    )
    results, _ = on_virtual_time(
        run_scenario(scenario, broker=transport, out_dir=tmp_path, run_id="g2")
    )
    done = {d for d, entry in results["per_device"].items() if entry["state"] == "done"}
    assert done == {f"d{i:04d}" for i in range(1, 20)}
    # the 19 others waited for d0000's place once: 5 s, not its whole silence timeout
    assert results["fleet"]["connect_seconds"] < 10.0
