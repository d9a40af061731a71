"""Helper P (2026-12-07): the fast path of the CSV reader (``devices.sources._fast_table``)
returns exactly what the careful path returns, on larger files than test_P_csv_pin's
(hundreds of rows, many blocks), and reads a large file without holding every cell as a
Python string.

The comparison runs each file twice: once as a run reads it, once with the fast path
switched off (``_fast_table`` returning None, so ``_parse_table`` takes the careful path
it always took). Results (names, matrix bits, dropped / broken / gap columns with their
order, mask) or refusals (type, sentence, field) must be equal."""

from __future__ import annotations

import random
import tracemalloc

import numpy as np
import pytest
from ldpfleet.devices import sources
from ldpfleet.devices.sources import clear_table_cache, load_table

ODD = ["NA", "", "nan", "-", "x", "1_000", "12345678901234567", "inf", " 2.5", "2.5 ", "null"]


def _cell(rng: random.Random, kind: str, k: int, comma: bool) -> str:
    if kind == "time":
        return f"2026-01-{1 + k // 1440:02d} {k // 60 % 24:02d}:{k % 60:02d}:00"
    if kind == "label":
        if rng.random() < 0.0002:  # a record of two lines: left to the careful path
            return '"two\nlines"'
        return rng.choice(["a", "b", "room 1", '"a, b"', '"x""y"', '" q"'])
    if kind == "int":
        text = str(rng.randrange(0, 2))
    else:
        text = f"{rng.gauss(20, 5):.{rng.randrange(0, 5)}f}"
    if rng.random() < 0.02:
        text = rng.choice(ODD)
    return text.replace(".", ",") if comma else text


def _file(seed: int) -> tuple[bytes, str]:
    rng = random.Random(seed)
    comma = rng.random() < 0.3
    delimiter = rng.choice([";", "\t"]) if comma else rng.choice([",", ";", "\t"])
    kinds = [rng.choice(["num", "num", "int", "time", "label"]) for _ in range(rng.randint(1, 6))]
    lines = [delimiter.join(f"c{j}" for j in range(len(kinds)))] if rng.random() < 0.9 else []
    leading_gap = rng.random() < 0.2
    quote = rng.random() < 0.3
    for k in range(rng.randint(50, 800)):
        cells = [_cell(rng, kind, k, comma) for kind in kinds]
        if leading_gap and k < 3:
            cells[0] = "NA"
        if quote and rng.random() < 0.9:  # R's write.csv quotes text, a script every field
            cells = [cell if cell.startswith('"') else f'"{cell}"' for cell in cells]
        if rng.random() < 0.3 and rng.random() < 0.1:
            cells = [" " + cell for cell in cells]
        lines.append(delimiter.join(cells))
        if rng.random() < 0.01:
            lines.append(rng.choice(["", " ", delimiter * (len(kinds) - 1)]))
    if rng.random() < 0.1:
        lines = [line + delimiter for line in lines]
    end = "\r\n" if rng.random() < 0.2 else "\n"
    if quote and lines and rng.random() < 0.5:
        lines[0] = delimiter.join(f'"{name}"' for name in lines[0].split(delimiter))
    return (end.join(lines) + end).encode(), "," if comma else "."


def _outcome(path: str, header, decimal: str) -> str:
    clear_table_cache()
    try:
        names, matrix, dropped, broken, gaps, mask = sources._table(path, header, decimal)
    except Exception as exc:  # every refusal is part of the result
        return f"{type(exc).__name__}|{exc}|{getattr(exc, 'field', None)}"
    return "|".join(
        [
            repr(names),
            repr(matrix.shape),
            matrix.tobytes().hex(),
            repr(dropped),
            repr(broken),
            repr(gaps),
            "None" if mask is None else mask.tobytes().hex(),
            repr((matrix.flags.writeable, mask is None or mask.flags.writeable)),
        ]
    )


@pytest.mark.parametrize("block", [16, 300, 1 << 20])
def test_the_fast_path_returns_what_the_careful_path_returns(tmp_path, monkeypatch, block):
    monkeypatch.setattr(sources, "_FAST_BLOCK", block)
    served = []
    real = sources._fast_table

    def fast(*args):
        result = real(*args)
        served.append(result is not None)
        return result

    path = tmp_path / "data.csv"
    for seed in range(60):
        raw, decimal = _file(seed)
        path.write_bytes(raw)
        for header in (None, True):
            monkeypatch.setattr(sources, "_fast_table", fast)
            quick = _outcome(str(path), header, decimal)
            monkeypatch.setattr(sources, "_fast_table", lambda *args: None)
            careful = _outcome(str(path), header, decimal)
            assert quick == careful, (seed, header)
    clear_table_cache()
    # the comparison compared something: most files are read by the fast path (files with
    # a leading-space cell, a blank line of another width or refused ones are not)
    assert sum(served) >= len(served) // 2


def test_a_large_file_is_read_without_a_string_per_cell(tmp_path, monkeypatch):
    """tracemalloc's peak (deterministic, unlike a time or the RSS): about 3.4 x the
    file's size with blocks of 64 KiB, against 15.9 x on commit 71fb7b5c, which held
    every cell as a string in a list per row until the matrix was built."""
    rng = random.Random(5)
    text = "time,a,b,c,d\n" + "".join(
        f"2026-01-01 {k // 3600:02d}:{k // 60 % 60:02d}:{k % 60:02d},{rng.gauss(20, 3):.4f},"
        f"{rng.gauss(0, 1):.6f},{rng.randrange(2)},{rng.random():.3f}\n"
        for k in range(20000)
    )
    path = tmp_path / "big.csv"
    path.write_text(text)
    monkeypatch.setattr(sources, "_FAST_BLOCK", 1 << 16, raising=False)
    clear_table_cache()
    tracemalloc.start()
    try:
        names, matrix = load_table(str(path))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        clear_table_cache()
    assert names == ["a", "b", "c", "d"] and matrix.shape == (20000, 4)
    assert np.isfinite(matrix).all()
    assert peak < 6 * len(text), peak / len(text)
