"""``app.gcdp_datasets.load_intel`` reads the Intel Lab matrices through the project's
table reader (``devices.sources.load_table``, as the CSV sources and the other data sets
read their files), not ``np.loadtxt``: compressed files, a BOM, UTF-16, a trailing Ctrl-Z,
other scripts' digits read; a word, a gap, an integer beyond 2**53 refused naming the
file (field ``data``).

Pinned first (passed with ``np.loadtxt`` and passes after): the shipped data loads into
byte-equal float64 arrays, writable and not shared between calls. Planted bug checked: a
word in the first row (a column the table reader drops as text) read without refusal
(the word test failed)."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest
from ldpfleet.app.gcdp_datasets import DATA_ROOT, load_intel
from ldpfleet.protocol.errors import ParameterError

NAMES = [f"intel{n}{p}.csv" for n in ("Temperature", "Humidity") for p in ("Train", "Test")]


def test_pin_the_shipped_intel_lab_data_loads_byte_equal_to_numpys_reading():
    folder = DATA_ROOT / "intel-lab"
    arrays = load_intel(folder)
    for name, array in zip(NAMES, arrays, strict=True):
        expected = np.loadtxt(folder / name, delimiter=",", ndmin=2)
        assert array.dtype == np.float64 and array.shape == expected.shape == (50, array.shape[1])
        assert array.tobytes() == expected.tobytes(), name
        assert array.flags.writeable and array.flags.c_contiguous
    again = load_intel(folder)
    again[0][0, 0] += 1.0  # a caller's change stays its own
    assert load_intel(folder)[0].tobytes() == arrays[0].tobytes()


def _folder(tmp_path: Path, write) -> Path:
    """Four 3 x 4 matrices; ``write(path, text)`` writes each."""
    for k, name in enumerate(NAMES):
        rows = [",".join(f"{20 + k + i + j / 10:.2E}" for j in range(4)) for i in range(3)]
        write(tmp_path / name, "\n".join(rows) + "\n")
    return tmp_path


def _expected(tmp_path: Path) -> list[np.ndarray]:
    """The arrays of the plain files."""
    plain = tmp_path / "plain"
    plain.mkdir()
    return list(load_intel(_folder(plain, lambda p, t: p.write_text(t))))


@pytest.mark.parametrize(
    "encode",
    [
        lambda t: "\ufeff".encode() + t.encode(),  # a BOM
        lambda t: t.encode("utf-16"),  # Excel's "Unicode Text"
        lambda t: t.encode() + b"\x1a",  # a DOS end-of-file mark
        lambda t: t.replace("2", "\uff12").encode(),  # full-width digits
    ],
    ids=["bom", "utf16", "ctrl-z", "full-width"],
)
def test_what_the_table_reader_reads_reads_as_the_plain_file(tmp_path, encode):
    expected = _expected(tmp_path)
    (tmp_path / "x").mkdir()
    folder = _folder(tmp_path / "x", lambda p, t: p.write_bytes(encode(t)))
    for got, want in zip(load_intel(folder), expected, strict=True):
        assert got.tobytes() == want.tobytes()


def test_a_compressed_file_reads_as_the_plain_file(tmp_path):
    """gzip data under the .csv name (devices/compressed.py unpacks it by its bytes)."""
    expected = _expected(tmp_path)
    (tmp_path / "x").mkdir()
    folder = _folder(tmp_path / "x", lambda p, t: p.write_bytes(gzip.compress(t.encode())))
    for got, want in zip(load_intel(folder), expected, strict=True):
        assert got.tobytes() == want.tobytes()


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("1,2,x\n", "'x'"),  # a word in the first row: a text column to the table reader
        ("1,2,3\n4,x,6\n", "'x'"),
        ("1,2,3\n4,5\n", "2 fields"),
        ("1,2,3\n4,,6\n", "missing value"),
        ("9007199254740993,2\n3,4\n", "2**53"),
    ],
    ids=["word-first-row", "word", "ragged", "gap", "beyond-2**53"],
)
def test_a_bad_file_is_refused_naming_it(tmp_path, text, said):
    folder = _folder(tmp_path, lambda p, t: p.write_text(t))
    (folder / "intelHumidityTest.csv").write_text(text)
    with pytest.raises(ParameterError) as info:
        load_intel(folder)
    error = info.value
    assert error.field == "data" and error.value == str(folder / "intelHumidityTest.csv")
    assert "intelHumidityTest.csv" in error.reason and said in error.reason, error.reason
    assert "source.missing" not in error.reason  # a scenario's setting: not the loader's


@pytest.mark.parametrize("decimal", [",", ";"])
def test_a_refused_decimal_mark_names_the_loaders_own_field(tmp_path, decimal):
    """A decimal comma for comma-separated files (or a mark that is no decimal mark) is
    refused under this loader's argument ``decimal``, not a scenario's ``source.decimal``."""
    folder = _folder(tmp_path, lambda p, t: p.write_text(t))
    with pytest.raises(ParameterError) as info:
        load_intel(folder, decimal=decimal)
    assert info.value.field == "decimal" and info.value.value == decimal, info.value
    assert str(info.value).startswith("decimal: ")
