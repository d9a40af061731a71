"""The trace's hash chain and signed message (``broker.trace``, format
``ldpfleet-trace-v1``), pinned by helper T3's planted-bug hunt (round 3): the writer
(``broker.recorder``) and the checker (``ldpfleet trace verify``) share ``row_bytes``, so
a change to the encoding passed every fast test, yet a trace recorded before it would no
longer verify, and an encoding that is not injective lets two different rows share a
chain value. Known answers computed 2026-12-08 on main (033aca6c)."""

from __future__ import annotations

import hashlib

from ldpfleet.broker.trace import chain_next, genesis, row_bytes, signed_message

REPORT = (1, 1700000000.25, "ldp/r1/up/d0001/sw_report", "up", "d0001", None, "sw_report", 3, 5)
ACK = (2, 1700000000.5, "ldp/r1/in/d0001", "in", "collector", "d0001", "ack", None, 2)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def test_the_row_encoding_and_the_chain_are_format_v1():
    """Kills TR1 (text fields without their length prefix), TR2 (a NULL seq encoded as
    the text "None") and TR11 (the recipient left out of the encoding: a row's recipient
    could be edited without breaking the chain)."""
    first = row_bytes(*REPORT, b'{"a"}')
    second = row_bytes(*ACK, b"{}")
    assert _digest(first) == "554e7fc5713c58cfd70ce6a1aebc9db677837b192171b25da035ebdaff5a2138"
    assert _digest(second) == "cd25f91b3d109eb2756c4de1aee65b6e6dbcd05212d00f8f907e9648ab7edacb"
    head = chain_next(chain_next(genesis("r1"), first), second)
    assert head.hex() == "f25f3ef2d5412a9707ec3e7c7313752d7422a66cc019927b7a30c048cd469161"


def test_moving_text_between_two_columns_changes_the_encoding():
    """Kills TR1 on its own terms: without length prefixes ``("ab", "c")`` and ``("a",
    "bc")`` encode alike, so a sender could be rewritten into the family unseen."""
    row = list(REPORT)
    moved = list(REPORT)
    row[3], row[4] = "up", "d0001"
    moved[3], moved[4] = "upd", "0001"
    assert row_bytes(*row, b"x") != row_bytes(*moved, b"x")
    with_recipient = list(ACK)
    with_recipient[5] = "d0002"
    assert row_bytes(*ACK, b"{}") != row_bytes(*with_recipient, b"{}")


def test_the_signed_message_binds_the_row_count_and_the_scenario():
    """Kills TR3 (the row count left out of the signed message: rows cut from the end of
    a trace, with the head rewound, kept a valid signature) and TR4 (the scenario digest
    left out: the signature no longer said which scenario was recorded)."""
    head = bytes(range(32))
    signed = signed_message("r1", 2, head, "ab" * 32)
    assert _digest(signed) == "f5bec9cb2e406da436758eb83251374afd12a611a720b106e246da672065f010"
    assert signed != signed_message("r1", 3, head, "ab" * 32)
    assert signed != signed_message("r1", 2, head, "cd" * 32)
