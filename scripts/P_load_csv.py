"""Time one CSV source read, the way a run reads it (``CsvSpec`` of column ``t3``):

    python scripts/P_load_csv.py FILE [DECIMAL]

under ``/usr/bin/time -v`` for the peak memory (helper P, 2026-12-07; docs/scenarios.md,
"Large CSV files"; the files: scripts/P_big_csv.py)."""

import sys
import time

from ldpfleet.devices.sources import CsvSpec

start = time.perf_counter()
CsvSpec(sys.argv[1], "t3", decimal=sys.argv[2] if len(sys.argv) > 2 else ".")
print(f"CsvSpec: {time.perf_counter() - start:.2f} s")
