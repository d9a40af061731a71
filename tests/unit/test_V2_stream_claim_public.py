"""Privacy review V2: a stream run's results.json ``privacy`` states what the collector sees
beside the privatised values.

Before, ``privacy_entry`` stated the values' ε only. The collector of a stream run also
receives each device's id, its hello (the run's parameters), each batch's t0 and seq, a
ledger's refusal step and remaining budget, withdrawals, dropouts and every message's
timing; none is covered by an ε, and none was declared public in the claim. Two more facts
were unstated:

* a raw stream (``[gcdp]``): the readings are held in the clear by the collector, the
  broker and the trace (trace.sqlite in the run's output), not only "sent unprivatised";
* with noise the seed cannot replay (``[privacy] device_noise = "os"``), a device copy that
  starts without its saved state (``[fleet] state_dir = "off"``, a lost file, the same
  shard started twice) privatises its steps again with fresh noise. The collector refuses
  the second copy of a batch as a replay, but only after receiving it: measured below on
  the machines, both copies of batches 0 and 1 reach it, with independent noise.

Fails before the fix (no ``public``, ``seen_in_clear`` or ``caveats`` key)."""

from __future__ import annotations

import numpy as np
from ldpfleet.collector.analytics import privacy_entry
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.messages import SwReport
from ldpfleet.protocol.stream import _OWN_KINDS, StreamCollector, StreamConfig, StreamReporter


def _config(mechanism: str = "sw") -> StreamConfig:
    return StreamConfig(run="r1", mechanism=mechanism, eps=2.0, w=4, steps=20, batch_steps=5,
                        lo=0.0, hi=10.0, retransmit_after=5.0)  # fmt: skip


def test_every_kind_a_stream_device_sends_is_declared_public_or_claimed():
    public = privacy_entry({}, _config(), "os")["public"]
    for kind in (*_OWN_KINDS, "withdraw"):
        assert any(line.startswith(f"{kind}:") for line in public), kind
    assert any("device ids" in line for line in public)
    assert any("arrival time" in line and "last-will" in line for line in public)


def test_a_raw_stream_names_who_holds_the_readings_in_the_clear():
    entry = privacy_entry({}, _config("raw"), "seeded")
    assert "collector" in entry["seen_in_clear"] and "trace.sqlite" in entry["seen_in_clear"]
    assert "caveats" not in entry  # nothing privatised on the devices: no copy to double


class _Spy:
    """The collector's inbound side: records every report it is handed, then passes it on."""

    def __init__(self, collector: StreamCollector) -> None:
        self.collector, self.reports = collector, {}

    def receive(self, topic, message, now):
        if isinstance(message, SwReport):
            self.reports.setdefault(message.seq, []).append(tuple(message.values))
        self.collector.receive(topic, message, now)


def _pump(src, dst, now: float) -> None:
    for out in src.pop_outbound():
        dst.receive(topics.parse(out.topic), codec.decode(codec.encode(out.message)), now)


def _copy(config, readings, rng, spy: _Spy) -> None:
    """One copy of device d0: hello, 10 readings, every exchange delivered, nothing persisted
    (the collector had not committed them when the copy was stopped)."""
    device = StreamReporter(config, "d0", rng)
    device.start(0.0)
    for now in (0.0, 1.0):
        if now:
            device.add_readings(readings[:10], now)
        for _ in range(3):
            _pump(device, spy, now)
            _pump(spy.collector, device, now)


def _two_copies(rngs) -> tuple[dict, dict]:
    config = _config()
    readings = np.random.default_rng(1).uniform(0.0, 10.0, config.steps)
    collector = StreamCollector(config, ["d0"])
    collector.open()
    spy = _Spy(collector)
    for rng in rngs:
        _copy(config, readings, rng, spy)
    return spy.reports, collector.summary()


def test_a_fresh_copy_of_a_device_reaches_the_collector_and_the_claim_says_so():
    # noise of the device's own entropy: each copy draws its own
    reports, summary = _two_copies([np.random.default_rng(111), np.random.default_rng(222)])
    assert {seq: len(copies) for seq, copies in reports.items()} == {0: 2, 1: 2}
    assert all(copies[0] != copies[1] for copies in reports.values())  # independent noise
    assert summary["rejections_by_reason"] == {"replay": 2}  # refused, after receipt
    for noise in ("os", None):
        (caveat,) = privacy_entry({}, _config(), noise)["caveats"]
        assert "spent twice" in caveat and "replay" in caveat and "state_dir" in caveat
    # seeded noise: both copies draw the same noise, so the second copy adds nothing
    same, _ = _two_copies([np.random.default_rng(7), np.random.default_rng(7)])
    assert all(copies[0] == copies[1] for copies in same.values())
    assert "caveats" not in privacy_entry({}, _config(), "seeded")
