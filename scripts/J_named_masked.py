"""Helper J, exploratory (seeds already used by docs/preregistration/J-vetoed-multiple.md):
on the streams whose answer that rule changed, would a masked check at the NAMED period (at
its own cycles, whatever their number) have kept the daily gains and refused the red-stream
claims? Main's code; the named period and ``_Search`` are captured from ``decide``.

    python scripts/J_named_masked.py /tmp/J-daily.jsonl 7310141 daily ...
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import J_ab
from ldpfleet.collector import period_search
from ldpfleet.collector.period import detect_period
from ldpfleet.collector.period_stats import few_cycles_penalty

_cap: dict = {}
_renamed = period_search._Search.renamed


def _capture(self, period, settled, harmonics):
    out = _renamed(self, period, settled, harmonics)
    _cap.update(search=self, named=out, vetoed=self.vetoed)
    return out


period_search._Search.renamed = _capture


def margin(y) -> tuple[int | None, float | None]:
    """(named period, masked log p - penalty - threshold at it) on main; None where no rename."""
    _cap.clear()
    detect_period(y)
    if "search" not in _cap:
        return None, None
    s, p = _cap["search"], _cap["named"]
    return p, float(s.masked(p) - few_cycles_penalty(s.n / p, s.n) - s.threshold)


def main(argv: list[str]) -> None:
    """Print, per changed stream, the named period and its masked margin (< 0: passes)."""
    for path, seed, mode in zip(argv[0::3], argv[1::3], argv[2::3], strict=True):
        with open(path) as f:
            rows = [json.loads(line) for line in f]
        changed = defaultdict(set)
        index = defaultdict(int)
        for r in rows:
            if r["old"] != r["new"]:
                changed[r["cell"]].add(index[r["cell"]])
            index[r["cell"]] += 1
        gen = {
            "daily": lambda s: J_ab._daily(s, 20),
            "clean": lambda s: J_ab._aperiodic(s, 100, True),
            "aperiodic": lambda s: J_ab._aperiodic(s, 100, False),
            "worst": lambda s: J_ab._aperiodic(s, 2000, False, worst=True),
        }[mode](int(seed))
        seen = defaultdict(int)
        for row, truth, y in gen:
            i = seen[row["cell"]]
            seen[row["cell"]] += 1
            if i in changed[row["cell"]]:
                named, m = margin(y)
                print(f"{mode} {row['cell']} trial {i} T {truth}: named {named} margin {m:.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
