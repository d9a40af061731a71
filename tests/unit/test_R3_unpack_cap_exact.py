"""Helper R's review (round 3): ``$LDPFLEET_MAX_UNPACKED`` is read through a float, so a byte
count above 2**53 is not the cap asked for (9007199254740993 -> ...992: the cap is one byte
lower than set), and 2**63 - 1 bytes, a size of at least one byte by any reading, is refused
as "must be a size of at least one byte" (its float rounds to 2**63, which the overflow
guard of f3a3eb94 treats as too large and words as too small)."""

import pytest
from ldpfleet.devices.compressed import MAX_UNPACKED_ENV, max_unpacked
from ldpfleet.protocol.errors import ParameterError


@pytest.mark.parametrize("size", [2**53 + 1, 2**63 - 1])
def test_a_byte_count_is_the_cap_exactly(monkeypatch, size):
    monkeypatch.setenv(MAX_UNPACKED_ENV, str(size))
    assert max_unpacked() == size


def test_a_size_too_large_is_not_called_too_small(monkeypatch):
    monkeypatch.setenv(MAX_UNPACKED_ENV, "9" * 400)
    with pytest.raises(ParameterError) as refused:
        max_unpacked()
    # whatever the rule for an absurd size, it is not "at least one byte"
    assert "at least one byte" not in refused.value.reason
