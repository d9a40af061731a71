"""A ``PeerItem``'s ``peer`` is judged by membership, not by the identifier regex.

The relay accepts an item only if its peer is another device of the run, and a device only
if it is one of its neighbours; both sets hold checked identifiers, so the membership test
is stricter than the ``Ident`` pattern. The pattern cost ~4 µs per item in msgspec (a
Python ``re`` call), and the ego-Facebook LPEA phase decodes ~1.2 million items twice
(relay and devices): the codec now only bounds the string (1-64 characters) and the
membership checks refuse anything else with the item's index (docs/cadr.md, "CPU of the
dp fleet run")."""

from __future__ import annotations

import msgspec
import numpy as np
import pytest
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_device import CadrDevice
from ldpfleet.protocol.cadr_messages import CadrPlan, CadrTheta
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.peer_relay import RELAY_ID, PeerItem, PeerRelay

RUN = "r1"
NOT_IDENTS = ("a/b", "a b", "a\n", "é", "+", "#")


def _batch_bytes(sender: str, peers: list[str]) -> bytes:
    items = ",".join(f'[{msgspec.json.encode(p).decode()},"req",0]' for p in peers)
    return (
        f'{{"type":"peer_batch","run":"{RUN}","sender":"{sender}","phase":"lpea",'
        f'"round":0,"step":0,"items":[{items}]}}'
    ).encode()


def test_the_peer_field_carries_no_regex():
    """The pattern check is what made decoding a batch ~5x slower per item."""
    (peer, _, _) = msgspec.inspect.type_info(PeerItem).fields
    assert getattr(peer.type, "pattern", None) is None
    assert peer.type.min_length == 1 and peer.type.max_length == 64


@pytest.mark.parametrize("peer", NOT_IDENTS)
def test_the_relay_refuses_a_non_identifier_peer_by_membership_naming_the_item(peer):
    relay = PeerRelay(RUN, ("a", "b", "c"))
    relay.start_phase("lpea", 0.0)
    relay.pop_outbound()
    message = codec.decode(_batch_bytes("a", ["b", peer]))
    topic = topics.parse(topics.up(RUN, "a", "peer_batch"))
    relay.receive(topic, message, 0.1)  # a peer-facing machine rejects, never raises
    assert relay.rejected == 1 and dict(relay.rejections_by_field) == {"items[1]": 1}
    (rejected,) = relay.pop_events()
    assert "not another device" in rejected.reason
    # refused without a state change: a's honest batch is still taken afterwards
    relay.receive(topic, codec.decode(_batch_bytes("a", ["b"])), 0.2)
    assert relay.batches == 1


@pytest.mark.parametrize("peer", ["", "x" * 65])
def test_the_codec_still_bounds_the_peer(peer):
    with pytest.raises(RemoteProtocolError) as caught:
        codec.decode(_batch_bytes("a", [peer]))
    assert caught.value.code == "out_of_range" and caught.value.field.startswith("items[0]")


@pytest.mark.parametrize("peer", NOT_IDENTS)
def test_a_device_refuses_a_non_identifier_peer_alone(peer):
    device = CadrDevice(RUN, "a", ["b", "c"], np.random.default_rng(0))
    ctl = lambda kind: topics.parse(topics.ctl(RUN, kind))  # noqa: E731
    plan = CadrPlan(
        run=RUN, sender=topics.COLLECTOR_ID, eps=3.0, alpha=0.1, method="ll",
        degree_bound=20, ndoe_parts=4,
    )  # fmt: skip
    device.receive(ctl("cadr_plan"), plan, 0.0)
    device.receive(ctl("cadr_theta"), CadrTheta(run=RUN, sender=topics.COLLECTOR_ID, theta=2), 0)
    step = codec.decode(
        f'{{"type":"peer_step","run":"{RUN}","sender":"relay","phase":"ndoe","round":0}}'.encode()
    )
    device.receive(ctl("peer_step"), step, 0.0)
    device.pop_outbound()
    items = f'["c","code",3],[{msgspec.json.encode(peer).decode()},"code",1]'
    delivery = codec.decode(
        f'{{"type":"peer_delivery","run":"{RUN}","sender":"relay","phase":"ndoe","round":0,'
        f'"step":1,"items":[{items}]}}'.encode()
    )
    inbox = topics.parse(topics.inbox(RUN, "a", RELAY_ID))
    with pytest.raises(RemoteProtocolError, match="not a neighbour") as caught:
        device.receive(inbox, delivery, 0.0)
    assert caught.value.field == "items[1]" and device.codes == {"c": 3}
