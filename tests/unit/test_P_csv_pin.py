"""Helper P (2026-12-07): the CSV reader's results pinned before it was made fast.

``devices.sources._parse_table`` got a fast path for large files (columns split once and
converted by numpy, falling back to the careful per-cell path on anything unusual). This
test pins what the reader returned BEFORE that change, over many awkward small files
(generated from a fixed seed, plus a list written by hand): the column names, the matrix
bit for bit, the dropped / broken / gap columns (with their dict order), the mask, and for
a refused file its error's type, sentence and field. The digest was computed on commit
71fb7b5c (the reader as it was); a change of any result changes it.

The fast path splits a file in blocks; the test runs with the default block size and with
a block of a few characters, so that every file crosses many block boundaries.
"""

from __future__ import annotations

import hashlib
import random

import numpy as np
import pytest
from ldpfleet.devices import sources
from ldpfleet.devices.sources import clear_table_cache

# sha256 over every case's result, on the reader of commit 71fb7b5c
PINNED = "540ebc2e9699132138d5d18bfeb972d2fe0f703b2e36c780fd15dfab57322c81"

NUMBERS = ["1.5", "-2", "3e2", "0.125", "+.5", "7", "1e-3", "21.4375", "0", "-0.0", "12."]
ODD = [
    "1_000", "12345678901234567", "-98765432109876543210", "9007199254740993.0", "NA",
    "", "nan", "-", "None", "inf", "-Infinity", "abc", "２１．５", "١٢", "２０",
    "20,5", "1.234,5", "1 234,5", "\u22123", "0x10", " 4.25", "4.25 ", "\u00a05",
    "1e400", "N/A", "null", "1,5e3", "-0,5", ",5",
]  # fmt: skip
TIMES = [
    "2020-01-01 00:00:00", "2020-01-01 00:01:00", "2020-01-01T00:02:00",
    "2020-01-01 00:00:30", "2020-01-01 00:03:00+01:00", "2020-01-02", "01/02/2020",
]  # fmt: skip
NAMES = ["t", "temp", " Temp ", "hum", "CO2", "Light", "date", "x", "Témp", "1", "2020"]


def _cell(rng: random.Random, kind: str, k: int, decimal: str) -> str:
    if kind == "num":
        text = rng.choice(NUMBERS)
    elif kind == "int":
        text = str(rng.randrange(-5, 100))
    elif kind == "time":
        text = f"2020-01-01 {k // 60:02d}:{k % 60:02d}:00"
    elif kind == "label":
        text = rng.choice(["a", "b", "room 1", "x y", "a;b"])
    else:  # "mixed"
        text = rng.choice(NUMBERS + ODD + TIMES)
    if rng.random() < 0.03:
        text = rng.choice(ODD + TIMES)
    if decimal == "," and rng.random() < 0.8:
        text = text.replace(".", ",")
    if rng.random() < 0.05:
        text = " " + text
    if rng.random() < 0.02:
        text = text + " "
    return text


def _random_file(seed: int) -> bytes:
    rng = random.Random(seed)
    decimal = "," if rng.random() < 0.25 else "."
    delimiter = rng.choice([",", ";", "\t"] if decimal == "." else [";", "\t", ","])
    width = rng.randint(1, 5)
    kinds = [rng.choice(["num", "num", "int", "time", "label", "mixed"]) for _ in range(width)]
    rows = rng.randint(1, 12)
    lines = []
    if rng.random() < 0.75:
        names = [rng.choice(NAMES) for _ in range(width)]
        lines.append(delimiter.join(names))
    if rng.random() < 0.1:
        lines.insert(0, f"sep={delimiter}")
    for k in range(rows):
        cells = [_cell(rng, kind, k, decimal) for kind in kinds]
        r = rng.random()
        if r < 0.01:
            cells = cells[:-1]
        elif r < 0.02:
            cells.append("")
        elif r < 0.025:
            cells.insert(0, str(k + 1))
        if rng.random() < 0.01:
            cells = [f'"{c}"' for c in cells]
        lines.append(delimiter.join(cells))
        if rng.random() < 0.05:
            lines.append(rng.choice(["", "   ", delimiter * (width - 1), " " + delimiter]))
    if rng.random() < 0.1 and len(lines) > 2:
        lines.append(lines[0])
    if rng.random() < 0.15:  # every row one id more than the header, or a trailing delimiter
        add = rng.choice(["id", "trail"])
        lines = [
            (f"{n}{delimiter}{line}" if add == "id" else f"{line}{delimiter}") if n else line
            for n, line in enumerate(lines)
        ]
    end = rng.choice(["\n", "\n", "\r\n", "\r"])
    text = end.join(lines) + (end if rng.random() < 0.8 else "")
    if rng.random() < 0.05:
        text += "\x1a"
    raw = text.encode("utf-8")
    if rng.random() < 0.05:
        raw = b"\xef\xbb\xbf" + raw
    return raw


HAND = [
    b"t,v\n1,2\n3,4\n",
    b"t,v\n1,2\n\n3,4\n",
    b"t,v\n1,2\n,\n3,4\n",
    b"t , v\n1 , 2\n3, 4\n",
    b"t,v\r\n1,2\r\n3,4\r\n",
    b"t,v\r1,2\r3,4\r",
    b"t,v\n1,2\r\n3,4\n",
    b"t,v\n1,2\n3,4\n5,6,\n",
    b"t,v,\n1,2,\n3,4,\n",
    b"t,v\n1,2,\n3,4,\n",
    b"v\n1,2\n3,4\n",
    b"v\n1,5\n2,7\n",
    b'"t","v"\n"1",2\n"2",3\n',
    b'"date","T"\n"1","2020-01-01 00:00:00",20.5\n"2","2020-01-01 00:01:00",21.5\n',
    b"date,T\n2020-01-01 00:01:00,1\n2020-01-01 00:00:00,2\n",
    b"date,T\n2020-01-01 00:01:00,1\nlater,2\n2020-01-01 00:00:00,3\n",
    b"date,T\n2020-01-01 00:01:00,1\n2020-01-01 00:00:00+01:00,2\n",
    b"date,T\n2020-01-01 00:01:00+01:00,1\n2020-01-01 00:00:00+02:00,2\n",
    b"t,v\n1,NA\n2,3\n",
    b"t,v\nNA,x\n2,3\n",
    b"t,v\nNA,1\nNA,2\n",
    b"t,v\nNA,1\nfoo,2\n",
    b"t,v\n1,2\nt,v\n3,4\n",
    b"t,v\n1,2\nt,5\n",
    b"1,2\n3,4\n",
    b"2020-01-01 00:00:00,1\n2020-01-01 00:01:00,2\n",
    b"a\n",
    b"",
    b"\n\n  \n",
    b"t,v\n1,1_000\n2,3\n",
    b"t,v\n1,12345678901234567\n2,3\n",
    b"t,v\n1,12345678901234567\n2,x\n",
    b"t;v\n1;20,5\n2;21,5\n",
    b"t;v\n1;1.234,5\n2;1 234,5\n",
    b"t;v\n1;1.5\n2;2,5\n",
    b"t\n20,5\n21,5\n",
    b"# exported\nt,v\n1,2\n",
    b"t,v\n1 2,3\n",
    b"t v\n1 2\n3 4\n",
    b"t,v\n\xef\xbc\x92\xef\xbc\x91\xef\xbc\x8e\xef\xbc\x95,1\n2,3\n",
    b"t,v\n\xe2\x88\x923,1\n",
    b"t,v\n1,2\x00\n",
    b't,v\n1,"2\n3"\n',
    b"sep=;\nt;v\n1;2\n",
    b"sep=|\nt|v\n1|2\n",
    b'{"t": 1}\n{"t": 2}\n',
    b"t,v\n1,2\n3,4\n\x1a",
    b"\xef\xbb\xbft,v\n1,2\n",
    "t,v\n1,2\n".encode("utf-16"),
    b"t,\xb0C\n1,2\n",
    b"t,v\n1,inf\n2,-inf\n",
    b"t,v\n1,nan\n2,-\n",
    b"T\xc3\xa9mp,v\n1,2\n",
    b"t,t\n1,2\n3,4\n",
    b"t,t\nx,2\ny,4\n",
    b"t,v\n1,2\n3\n",
    b"t,v\n1,2\n3,4,5\n",
    b"\t\n t,v\n 1, 2\n",
    b"t,v\n 1,\xc2\xa02\n",
    b"t,v\n1,2\n3,\xe3\x80\x804\n",
    b"t,v\n1," + b"9" * 140000 + b"\n",
]


def _describe(raw: bytes, path, header, decimal) -> str:
    path.write_bytes(raw)
    clear_table_cache()
    try:
        names, matrix, dropped, broken, gaps, mask = sources._table(str(path), header, decimal)
    except Exception as exc:  # every refusal is part of the result
        return "|".join(
            [
                type(exc).__name__,
                str(exc).replace(str(path), "PATH"),
                str(getattr(exc, "field", None)),
                repr(getattr(exc, "limit", None)),
                repr(getattr(exc, "value", None)),
            ]
        )
    assert matrix.dtype == np.float64 and not matrix.flags.writeable
    assert mask is None or (mask.dtype == bool and not mask.flags.writeable)
    return "|".join(
        [
            repr(names),
            repr(matrix.shape),
            matrix.tobytes().hex(),
            repr(dropped),
            repr(broken),
            repr(gaps),
            "None" if mask is None else repr(mask.shape) + mask.tobytes().hex(),
        ]
    )


def _cases():
    files = [(f"hand{k}", raw) for k, raw in enumerate(HAND)]
    files += [(f"seed{s}", _random_file(s)) for s in range(600)]
    for name, raw in files:
        for header in (None, True, False):
            for decimal in (".", ","):
                yield name, raw, header, decimal


def _digest(tmp_path) -> tuple[str, list[str]]:
    path = tmp_path / "data.csv"
    h = hashlib.sha256()
    lines = []
    for name, raw, header, decimal in _cases():
        line = f"{name} {header} {decimal} {_describe(raw, path, header, decimal)}"
        lines.append(line)
        h.update(line.encode("utf-8", "surrogatepass") + b"\n")
    clear_table_cache()
    return h.hexdigest(), lines


@pytest.mark.parametrize("block", [None, 7])
def test_results_as_pinned(tmp_path, monkeypatch, block):
    if block is not None and hasattr(sources, "_FAST_BLOCK"):
        monkeypatch.setattr(sources, "_FAST_BLOCK", block)
    digest, lines = _digest(tmp_path)
    if digest != PINNED:  # the first differing case helps; compare with a dump of the old
        (tmp_path / "cases.txt").write_text("\n".join(lines), encoding="utf-8")
    assert digest == PINNED, f"results changed (cases written to {tmp_path / 'cases.txt'})"
