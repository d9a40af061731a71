"""Run a CPR check script or module with an OLD ``detect_period`` (issue 19, helper D).

``ldpfleet.collector.period.detect_period`` and ``ldpfleet.detect_period`` are replaced by
those of ``OLD`` (a copy of an earlier ``collector/period.py``) before the target is
imported, so the target's ``from ... import detect_period`` binds the old one; everything
else (streams, seeds, baselines) is the installed package's. Old against new on the same
streams: run the target once through this wrapper and once directly.

Run: ``python scripts/D_as_old.py OLD SCRIPT.py ARGS...`` or
``python scripts/D_as_old.py OLD -m MODULE ARGS...``, e.g.
``python scripts/D_as_old.py /tmp/period_old.py scripts/cpr_user_heldout.py periodic 20
P_old.jsonl``.
"""

from __future__ import annotations

import runpy
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
import ldpfleet.collector.period as period
from cpr_period_ab import load_old

import ldpfleet


def main(argv: list[str]) -> None:
    old = load_old(argv[0])
    period.detect_period = old.detect_period
    ldpfleet.detect_period = old.detect_period
    if argv[1] == "-m":
        sys.argv = [argv[2], *argv[3:]]
        runpy.run_module(argv[2], run_name="__main__", alter_sys=True)
    else:
        sys.argv = [argv[1], *argv[2:]]
        sys.path.insert(0, argv[1].rsplit("/", 1)[0] if "/" in argv[1] else ".")
        runpy.run_path(argv[1], run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
