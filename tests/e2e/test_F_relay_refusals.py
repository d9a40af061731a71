"""The batching relay's refusals are counted in results.json (tier 2, in-memory transport).

A CADR-LDP fleet run with a hostile client that, once the plan is out (before any relay
phase runs), plants messages the relay must refuse: undecodable bytes on a device's
``up/peer_batch``, a batch of a phase that is not running, a batch naming another sender
than its topic, a batch of another run, and a ``RelayPhase`` not from the collector. The
relay refuses each (``protocol.peer_relay``, "Validation"); results.json counts them in
``rejected_by_relay`` and by reason in ``relay_rejections_by_reason`` (docs/results.md),
and the run releases exactly what the same seed releases without them (nothing planted is
relayed or aggregated).
"""

from __future__ import annotations

from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.peer_relay import PeerBatch, PeerItem, RelayPhase

from tests.cadr_fixtures import clean_and_attacked

RUN = "cadr-relay-hostile"


def planted() -> list[tuple[str, bytes, str]]:
    """(topic, payload, the reason key the relay must count it under)."""
    batch_topic = topics.up(RUN, "n0001", "peer_batch")

    def batch(**fields) -> bytes:
        base = dict(run=RUN, sender="n0001", phase="ndoe", round=0, step=0,
                    items=[PeerItem(peer="n0002", kind="code", value=1)])  # fmt: skip
        return codec.encode(PeerBatch(**(base | fields)))

    steer = RelayPhase(run=RUN, sender="n0003", phase="ndoe")
    return [
        (batch_topic, b"\xff\x00 garbage", "undecodable"),
        (batch_topic, batch(), "invalid_field"),  # phase 'ndoe' is not running
        (batch_topic, batch(sender="n0002"), "wrong_sender"),  # not the topic's device
        (batch_topic, batch(run="other-run"), "wrong_run"),
        (topics.ctl(RUN, "relay_phase"), codec.encode(steer), "wrong_sender"),
    ]


async def test_planted_relay_messages_are_counted_in_results_and_never_used():
    # once the plan is out (before any relay phase runs), the five messages at once
    plan = [topics.ctl(RUN, "cadr_plan")]
    clean, attacked, sent = await clean_and_attacked(RUN, plan, lambda _: planted())
    assert len(sent) == 5
    assert clean["rejected_by_relay"] == 0 and clean["relay_rejections_by_reason"] == {}
    assert attacked["rejected_by_relay"] == len(sent)
    expected: dict[str, int] = {}
    for _, _, reason in sent:
        expected[reason] = expected.get(reason, 0) + 1
    assert attacked["relay_rejections_by_reason"] == dict(sorted(expected.items()))
    assert attacked["rejected_by_collector"] == clean["rejected_by_collector"] == 0
    for key in ("theta", "released", "histogram", "estimate_histogram", "mae", "lpea_round_cap"):
        assert attacked[key] == clean[key], key
    keys = list(attacked)
    assert keys.index("rejected_by_relay") == keys.index("rejected_by_collector") + 1
