"""Audit and run helper D's round-3 plugins (scripts/D3_plugins) as a user would: the
runner of round 2 (``scripts/D2_run.py``: the documented ``ldpfleet audit MOD:CLS --eps E``
from a non-editable install, the plugins on PYTHONPATH, and a fleet run on the memory
transport) on the round-3 plugins.

    nice -n 5 python scripts/D3_run.py audit OUT.jsonl [--eps 1] [--ldpfleet PATH] [CLS...]
    nice -n 5 python scripts/D3_run.py run OUT.jsonl [--ldpfleet PATH] [CLS...]
    python scripts/D3_run.py table OUT.jsonl
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import D2_run

if __name__ == "__main__":
    D2_run.use_round("d3")
    D2_run.main()
