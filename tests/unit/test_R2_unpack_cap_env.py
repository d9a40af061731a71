"""Helper R2's review (2026-12-08): a bad $LDPFLEET_MAX_UNPACKED is a typed ParameterError
naming the variable on every path.

- A size whose digits overflow a float ('9' * 400, or '1' * 400 + 'GiB') raised
  OverflowError ("cannot convert float infinity to integer") out of
  ``devices.compressed.max_unpacked``: ``ldpfleet run`` on a scenario with a .csv.gz
  source printed a traceback and exited 1.
- ``bench gcdp``'s Occupancy reader (``app.gcdp_datasets._load``) wrapped the variable's
  refusal as "cannot read an Occupancy-format file ...: LDPFLEET_MAX_UNPACKED: ..." with
  field ``train_file``: the field, limit and value named the option, not the variable.
"""

from __future__ import annotations

import gzip

import pytest
from ldpfleet.devices.compressed import MAX_UNPACKED_ENV, max_unpacked
from ldpfleet.protocol.errors import ParameterError


@pytest.mark.parametrize("text", ["9" * 400, "1" * 400 + "GiB"], ids=["bytes", "gib"])
def test_a_cap_beyond_a_float_is_a_typed_error_or_a_size(monkeypatch, text):
    monkeypatch.setenv(MAX_UNPACKED_ENV, text)
    try:
        size = max_unpacked()
    except ParameterError as error:  # refused: naming the variable and the value
        assert error.field == MAX_UNPACKED_ENV and error.value == text
    else:  # or read as the (huge) size it is
        assert size >= 10**399


def test_a_bad_cap_under_bench_gcdp_names_the_variable(tmp_path, monkeypatch):
    from ldpfleet.app.gcdp_datasets import occupancy_windows

    path = tmp_path / "train.txt.gz"
    header = b'"date","Temperature","Humidity","Light","CO2","HumidityRatio","Occupancy"\n'
    line = b'"2015-02-04 17:51:00",23.18,27.272,426,721.25,0.00479298817650529,1\n'
    path.write_bytes(gzip.compress(header + line * 100))
    monkeypatch.setenv(MAX_UNPACKED_ENV, "lots")
    with pytest.raises(ParameterError) as caught:
        occupancy_windows(None, 10, train_file=path)
    assert caught.value.field == MAX_UNPACKED_ENV, str(caught.value)
    assert caught.value.value == "lots"
