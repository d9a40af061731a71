"""``secure_sum()`` as a user calls it from collector code (held-out user QA, helper F,
2026-12-05)."""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector.secure_sum import secure_sum
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.secagg.encoding import FixedPoint


def test_one_string_of_devices_is_refused_not_split_into_letters() -> None:
    """Fails before the fix: ``devices="abc"`` ran a session of the devices 'a', 'b' and
    'c', which waited for its deadlines and aborted ("only 0 of 3 devices advertised")."""
    fixed_point = FixedPoint(-1.0, 1.0, 2.0**16)
    with pytest.raises(ParameterError) as error:
        asyncio.run(
            secure_sum(MemoryTransport(), "r", "s", "abc", 3, fixed_point, stage_timeout=0.2)
        )
    assert error.value.field == "devices"
    assert "'abc'" in str(error.value) and "one string" in str(error.value)
