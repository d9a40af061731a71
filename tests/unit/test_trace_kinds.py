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
