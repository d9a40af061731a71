"""Compare two runs of ``scripts/K3_bench_cpr_runs.sh`` (before and after helper K3's split of
``app/bench_cpr.py``): help texts, markdown and refusals byte for byte (markdown lines with
timings excepted), the JSON results equal once the timing keys are left out.

    scripts/K3_bench_cpr_runs.sh before   # on the code before
    scripts/K3_bench_cpr_runs.sh after    # on the code after
    python scripts/K3_bench_cpr_compare.py before after
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

OUT = Path("/tmp/K3")
TIMING_KEY = re.compile(r"(^|_)ms(_|$)|seconds")
TIMING_LINE = re.compile(r"\d ms\b|\d s\.")


def _untimed(value):
    """``value`` without its timing keys (at any depth)."""
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if not TIMING_KEY.search(k)}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def main(before: str, after: str) -> int:
    """0 when every output matches, else 1."""
    failed = 0
    for path in sorted(OUT.glob(f"{before}.*")):
        other = OUT / path.name.replace(before, after, 1)
        a, b = path.read_text(), other.read_text()
        if path.suffix == ".json":
            same = _untimed(json.loads(a)) == _untimed(json.loads(b))
        elif path.suffix == ".md":
            keep = lambda text: [ln for ln in text.splitlines() if not TIMING_LINE.search(ln)]  # noqa: E731
            same = keep(a) == keep(b)
        else:
            same = a == b
        print(f"{'same' if same else 'DIFFERS'} {path.name.removeprefix(before + '.')}")
        failed += not same
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
