"""The server's refusals of a repeated device id and of a bad round say the value in their
sentence too (the user trial of helper A, 2026-12-06: "devices: device ids must be
distinct" and "round: must be an integer in [0, 1000000]" named neither)."""

from __future__ import annotations

import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.protocol.secagg.server import SecAggServer

FIXED = FixedPoint(-1.0, 1.0, 2.0**16)


def test_a_repeated_device_is_named() -> None:
    with pytest.raises(ParameterError) as refused:
        SecAggServer("r", "s", ["d2", "d1", "d2", "d0"], 4, FIXED)
    assert refused.value.field == "devices" and refused.value.value == "d2"
    assert refused.value.reason == "device ids must be distinct, got 'd2' more than once"


@pytest.mark.parametrize("value", [-1, 1_000_001, 1.0, True])
def test_a_bad_round_is_named(value) -> None:
    with pytest.raises(ParameterError) as refused:
        SecAggServer("r", "s", ["d0", "d1"], 4, FIXED, round=value)
    assert refused.value.field == "round" and refused.value.value is value
    assert refused.value.reason == f"must be an integer in [0, 1000000], got {value!r}"
