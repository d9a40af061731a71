"""Helper G: which answers of ``scripts/cpr_period_same.py``'s reference set (3,540 streams:
grid, aperiodic, phase jumps, edge cases) change with step 3c's named-period margin
(``VETO_NAMED_MARGIN`` as set) against the rule off (None)? Both in one process, per stream.

    python scripts/G_same.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpr_period_same as same
from ldpfleet.collector import period_search
from ldpfleet.collector.period import detect_period


def main() -> None:
    """Print every stream whose estimate differs, then the counts."""
    margin = period_search.VETO_NAMED_MARGIN
    total = changed = 0
    for key, x in same.streams():
        period_search.VETO_NAMED_MARGIN = margin
        new = same.as_dict(detect_period(x))
        period_search.VETO_NAMED_MARGIN = None
        old = same.as_dict(detect_period(x))
        total += 1
        if new != old:
            changed += 1
            print(f"{key}: off {old['period']} -> on {new['period']}")
    print(f"streams {total}, different {changed} (margin {margin} against None)")


if __name__ == "__main__":
    main()
