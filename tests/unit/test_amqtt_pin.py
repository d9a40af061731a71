"""amqtt is pinned (pyproject.toml: ``amqtt==0.12.1``) because broker/embedded.py copies and
overrides its private internals: ``Broker._initialize_client_session`` (the continuation
after ``init_from_connect`` is copied), ``_client_message_loop`` (copied with one change),
``_delete_session``, ``_topic_filtering``, ``_publish_session_retained_messages`` and
``stream_connected`` (wrapped), and it replaces ``_subscriptions`` and ``_broadcast_queue``
in ``__init__`` with structures that amqtt's own methods below must use as they did in
0.12.1. This test fails when the installed amqtt's source of any of those methods differs
from the one the copies were made from, so an upgrade is a conscious step: read the new
source, carry the copies over, then record the new hashes here (the failure prints them).
"""

from __future__ import annotations

import hashlib
import inspect
from importlib import metadata

from amqtt.broker import Broker
from amqtt.mqtt.protocol.broker_handler import BrokerProtocolHandler

from tests.conftest import ROOT

PINNED = "0.12.1"
CLASSES = {"Broker": Broker, "BrokerProtocolHandler": BrokerProtocolHandler}
# sha256 of inspect.getsource of each method, amqtt 0.12.1
RECORDED = {
    ("Broker", "__init__"): "5158ff3ca6493bafc501179a15a62b008b5bf2ce0c1440096cd8684d2afb5a75",
    (
        "Broker",
        "stream_connected",
    ): "d1c68240cb49f94a431455e63b0277a27c92a482c4512a8e2de975e13025720e",
    (
        "Broker",
        "_initialize_client_session",
    ): "5dd89158bbe46266c62cc3ba6dedc0fcfbc197b6cfdd03d089ad3ba2a4422806",
    (
        "Broker",
        "_publish_session_retained_messages",
    ): "78cd66096c935c1ffd8d71a1d8763452568e828847c37b430e66ddf0337c4c0b",
    (
        "Broker",
        "_client_message_loop",
    ): "916c4647c338991830c968a421012b5bc7fbb1cbffd8db6ad551ca91618502c2",
    (
        "Broker",
        "_delete_session",
    ): "a8333dded50648a7e4c1486efb7d04b6aaf4fbb8ecf5b1037ec96dcf1feae7e4",
    (
        "Broker",
        "_topic_filtering",
    ): "9259ae5e1dd3e20d3d111950239847f4c77b57550878c09da538c2ad9ec25240",
    (
        "Broker",
        "_handle_client_session",
    ): "8b1b52a03df9daf58a0e88ab15f4b65a778b6b2289e323f821ed5e42c77c1095",
    (
        "Broker",
        "_run_broadcast",
    ): "e852128b3e38e04a1b903cb9b44240d7cb8c50539a78472a48aa32544574b581",
    (
        "Broker",
        "_broadcast_message",
    ): "78ad4edb7efb3b7276857d6c91c80da0377cf54b1e0856c84c6df3df6a54c225",
    (
        "Broker",
        "add_subscription",
    ): "07757b63113c395e2ed0176c270a48df46261b7ee196b079c568146b6d0f421c",
    (
        "Broker",
        "_del_subscription",
    ): "415f349273b0552d4ee80a5eeba2f9bdd63f185372573a42293d1eeb26e7e9f5",
    (
        "Broker",
        "_del_all_subscriptions",
    ): "615579810f47d1e004b9f160819680f83fd4c1bab9010dabd3056a96926c2f44",
    (
        "Broker",
        "_cleanup_session",
    ): "530ae891d9f536ccd3fd5cec3e65b546ca5f96f8cd8483fc72c7f2f928fdba01",
    (
        "Broker",
        "_handle_subscription",
    ): "3dae18afa195209e97109fa476120b0e403ac2d24ce6665214d3a2f85a3be5b1",
    (
        "Broker",
        "_handle_unsubscription",
    ): "29253b1b63036d7a5e1cc738173eefccaa5a62cb3d1e9c2f7bb750dd59adc281",
    (
        "Broker",
        "_handle_disconnect",
    ): "8c3b8702f35670556b00cd38667b328d7d00487dca9f686d9cbd696dd548cb73",
    (
        "Broker",
        "_handle_message_delivery",
    ): "89727723da550bed02e4fb95736cb0b4399e7752bd4799a78503c7f0feafd69b",
    (
        "Broker",
        "_shutdown_broadcast_loop",
    ): "0667eb74fe2fe6c88baec8e0c981ac2b3a2c93e9967a0d6bd90761f0a28e6153",
    ("Broker", "subscriptions"): "c50a90f813c94e013e8c1800bfffb47354bee8f65fd20826caa0af68a381a204",
    (
        "BrokerProtocolHandler",
        "init_from_connect",
    ): "036dc04c1133a18fb5b5987a60c2e45d0250daf02d18ec797989c5d23d0876e2",
    (
        "BrokerProtocolHandler",
        "mqtt_deliver_next_message",
    ): "f961ae9de890440dfeda3491d37afb82e01740199a6c7547d746cbbe1a3d795f",
    (
        "BrokerProtocolHandler",
        "wait_disconnect",
    ): "ea4857d4707ef8d9fe474637b8868d7d36b3dff306eee7d4d4ca091dd3d11a6c",
    (
        "BrokerProtocolHandler",
        "get_next_pending_subscription",
    ): "86ba9c64e41065a2f5f7e96e46e576edbf667b0dd29b0c7d686175bade26d025",
    (
        "BrokerProtocolHandler",
        "get_next_pending_unsubscription",
    ): "dcf028cf3ddffda2eac924f29596c4971652a626478238323d6712dbe9987bd7",
}


def source_hash(owner: type, name: str) -> str:
    member = inspect.getattr_static(owner, name)
    member = member.fget if isinstance(member, property) else getattr(member, "__func__", member)
    return hashlib.sha256(inspect.getsource(member).encode()).hexdigest()


def test_the_installed_amqtt_is_the_pinned_release():
    assert metadata.version("amqtt") == PINNED
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert f'"amqtt=={PINNED}"' in pyproject


def test_the_amqtt_methods_the_embedded_broker_copies_are_unchanged():
    changed = {
        (cls, name): source_hash(CLASSES[cls], name)
        for cls, name in RECORDED
        if source_hash(CLASSES[cls], name) != RECORDED[(cls, name)]
    }
    assert not changed, (
        "amqtt's internals that broker/embedded.py copies or relies on changed; port the "
        f"copies, then record: {changed}"
    )


def test_every_override_in_the_embedded_broker_is_recorded():
    """A method broker/embedded.py overrides must be in RECORDED (so a new override
    cannot skip the check)."""
    from ldpfleet.broker.embedded import _ClosingBroker

    overridden = {
        name
        for name, value in vars(_ClosingBroker).items()
        if callable(value) and hasattr(Broker, name)
    }
    assert overridden <= {name for cls, name in RECORDED if cls == "Broker"}, overridden
