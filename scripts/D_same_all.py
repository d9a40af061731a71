"""Every answer that changed between a ``cpr_period_same.py record`` cache (OLD) and the
installed ``detect_period``, with the stream's true period where it has one (issue 19,
helper D; ``cpr_period_same.py check`` prints only the first 20).

Run: ``python scripts/D_same_all.py CACHE.json``; counts exact answers lost and gained.
"""

from __future__ import annotations

import json
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from cpr_period_same import as_dict, streams
from ldpfleet.app import cpr_phase_jumps as pj
from ldpfleet.collector.period import detect_period


def truth(key: str):
    """The true period of a grid (``g``) or phase-jump (``j``) stream, else None."""
    parts = key.split("/")
    if parts[0].startswith("g"):
        return int(parts[2])
    if parts[0] == "j":
        return pj.cells()[int(parts[1])][1]
    return None


def main(path: str) -> None:
    with open(path) as handle:
        old = json.load(handle)
    lost = gained = changed = 0
    for key, x in streams():
        new = json.loads(json.dumps(as_dict(detect_period(x))))
        if new["period"] == old[key]["period"]:
            continue
        changed += 1
        true = truth(key)
        lost += old[key]["period"] == true
        gained += new["period"] == true
        print(key, "truth", true, "old", old[key]["period"], "new", new["period"])
    print(f"changed {changed}, exact lost {lost}, exact gained {gained}")


if __name__ == "__main__":
    main(sys.argv[1])
