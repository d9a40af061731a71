"""``trace show --kind`` accepts every message kind the codec decodes (a kind missing from
the CLI's list would be refused as a typo)."""

from __future__ import annotations

import typing

from ldpfleet.app.cli import protocol_kinds
from ldpfleet.protocol import codec


def test_every_decodable_message_kind_is_a_known_trace_kind():
    members = []
    for arm in typing.get_args(codec.WireMessage):
        members.extend(typing.get_args(arm) or [arm])
    tags = {m.__struct_config__.tag for m in members if hasattr(m, "__struct_config__")}
    tags = {t for t in tags if isinstance(t, str)}
    assert "partition_status" in tags
    assert tags <= protocol_kinds()


def test_the_kinds_are_those_the_protocol_modules_define():
    """Pin of the refactor that made ``protocol_kinds`` read ``codec.WIRE_KINDS``: the
    same set as the hand-kept module scan it replaced (47 kinds with ``invalid``; 48 since
    ``fleet_done``, a split run's shard status in protocol/messages.py, 2026-12-07; 49
    since ``fleet_refused``, a shard's refusal of the run, protocol/fleet_done.py)."""
    import importlib

    import msgspec

    scanned = {"invalid"}
    for name in (
        "messages", "cadr_messages", "rendezvous", "readiness", "secagg.messages", "lpea",
        "peer_relay", "partition", "bulk", "fleet_done",
    ):  # fmt: skip
        module = importlib.import_module(f"ldpfleet.protocol.{name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, msgspec.Struct):
                tag = value.__struct_config__.tag
                if isinstance(tag, str) and tag[:1].islower():
                    scanned.add(tag)
    assert protocol_kinds() == scanned == {"invalid", *codec.WIRE_KINDS}
    assert len(scanned) == 49 and {"fleet_done", "fleet_refused"} <= scanned
