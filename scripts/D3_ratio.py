"""Per-stream new/old CPU ratios from the output of ``cpr_speed_same.py time`` (helper D).

Run: ``python scripts/cpr_speed_same.py time OLD 5 > out.txt; python scripts/D3_ratio.py
out.txt``: per T, the median and the range of the per-stream ratios new / old.
"""

from __future__ import annotations

import re
import sys

import numpy as np


def main(path: str) -> None:
    ratios: dict[str, list[float]] = {}
    with open(path, encoding="utf-8") as handle:
        lines = handle.readlines()
    for line in lines:
        match = re.match(r"(\S+): old ([\d.]+) ms, new ([\d.]+) ms", line)
        if match:
            key = match.group(1)
            period = "bench" if key.startswith("bench") else key.split("/")[1]
            ratios.setdefault(period, []).append(float(match.group(3)) / float(match.group(2)))
    for period, values in ratios.items():
        arr = np.array(values)
        print(
            f"T {period}: {arr.size} streams, ratio median {np.median(arr):.3f}, "
            f"min {arr.min():.3f}, max {arr.max():.3f}"
        )


if __name__ == "__main__":
    main(sys.argv[1])
