"""Write large CSV files for timing the CSV source reader (helper P, 2026-12-07).

    python scripts/P_big_csv.py OUTDIR [ROWS]

writes, with ROWS data rows (default 1,000,000) under a header line:

- ``big.csv``: ``time`` (ISO date-time, one a minute), five float columns
  ``t1 .. t5`` (values such as ``21.4375``), and a 0/1 column ``occupied``
  (about 29 MB for a million rows);
- ``big-comma.csv``: the same, fields separated by ``;`` and numbers written with a
  decimal comma (read with ``decimal = ","``);
- ``big.csv.gz``: ``big.csv`` gzip-compressed;
- ``big.toml``, ``big-comma.toml``, ``big-gz.toml``: a scenario that replays column ``t3`` of
  each file on 2 devices for 10 steps (``ldpfleet run FILE --broker memory``), the
  smallest run that reads the whole table the way every run does.

The values are drawn from a fixed seed, so the files are the same on every machine.
"""

from __future__ import annotations

import gzip
import sys
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

SCENARIO = """[scenario]
name = "{name}"
seed = 1
description = "helper P: the CSV reader on a {rows}-row file"

[fleet]
devices = 2

[stream]
steps = 10
eps = 5.0
w = 5
mechanism = "sw"

[source]
kind = "csv"
path = "{path}"
column = "t3"
bounds = [0.0, 50.0]
{extra}"""


def write(outdir: Path, rows: int) -> None:
    outdir.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(20261207)
    start = datetime(2026, 1, 1)
    times = [(start + timedelta(minutes=k)).isoformat(sep=" ") for k in range(rows)]
    # quarter-degree-ish readings with up to 4 decimals, as a logger writes them
    values = np.round(rng.normal(21.0, 3.0, size=(rows, 5)), 4)
    occupied = rng.integers(0, 2, size=rows)
    header = ["time", "t1", "t2", "t3", "t4", "t5", "occupied"]
    point_lines = [",".join(header)]
    comma_lines = [";".join(header)]
    for k in range(rows):
        cells = [repr(float(v)) for v in values[k]]
        point_lines.append(",".join([times[k], *cells, str(occupied[k])]))
        comma_lines.append(
            ";".join([times[k], *(c.replace(".", ",") for c in cells), str(occupied[k])])
        )
    point = "\n".join(point_lines) + "\n"
    (outdir / "big.csv").write_text(point, encoding="utf-8")
    (outdir / "big-comma.csv").write_text("\n".join(comma_lines) + "\n", encoding="utf-8")
    with gzip.open(outdir / "big.csv.gz", "wt", encoding="utf-8", compresslevel=6) as fh:
        fh.write(point)
    for name, path, extra in (
        ("big", "big.csv", ""),
        ("big-comma", "big-comma.csv", 'decimal = ","\n'),
        ("big-gz", "big.csv.gz", ""),
    ):
        (outdir / f"{name}.toml").write_text(
            SCENARIO.format(name=name, rows=rows, path=outdir.resolve() / path, extra=extra),
            encoding="utf-8",
        )


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    write(Path(argv[0]), int(argv[1]) if len(argv) == 2 else 1_000_000)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
