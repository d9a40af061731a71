"""Long periods over 10-20 cycles (helper E, round 3): a daily cycle sampled every 20 or 10
seconds (T = 4,320, 8,640) or every 43 s (T = 2,000), over 10 or 20 days, SW at eps0 1, 2,
5. Templates ``plain_full`` (a two-harmonic cycle, full range, ``E3_diag_offbyone``) and
``intel_hum_test`` (``E3_user_streams``). ``detect_period`` against the autocorrelation
baseline (folded variance only up to 50,000 samples: its scan is O(n^2)). Fresh seeds
``[SEED, BLOCK, cell, trial]`` (BLOCK 10 by default; 12 in the pre-registered evaluation).

Run: ``python scripts/E3_long_periods.py TRIALS OUT.jsonl [BLOCK]`` (about 2 CPU-min at 3)."""

from __future__ import annotations

import json
import sys
import time

import numpy as np
from E3_diag_offbyone import stream
from E3_user_streams import SEED, clean_stream
from ldpfleet.app.cpr_period_baselines import autocorrelation_period, folded_variance_period

import ldpfleet

PERIODS = (2000, 4320, 8640)
CYCLES = (10, 20)
EPS0 = (1.0, 2.0, 5.0)
SOURCES = ("plain_full", "intel_hum_test")


def clean(source: str, period: int, n: int, rng: np.random.Generator) -> np.ndarray:
    if source == "plain_full":
        return stream("plain_full", period, n, rng)
    return clean_stream(source, period, n, rng)


def main(argv: list[str]) -> None:
    trials, out = int(argv[0]), argv[1]
    block = int(argv[2]) if len(argv) > 2 else 10
    cells = [(s, t, c, e) for s in SOURCES for t in PERIODS for c in CYCLES for e in EPS0]
    with open(out, "w") as handle:
        for index, (source, period, cycles, eps0) in enumerate(cells):
            n = period * cycles
            ours, ac, fv, cpu = [], [], [], []
            for trial in range(trials):
                rng = np.random.default_rng([SEED, block, index, trial])
                x = ldpfleet.SquareWave(eps0).perturb(clean(source, period, n, rng), rng)
                start = time.process_time()
                ours.append(ldpfleet.detect_period(x).period)
                cpu.append(time.process_time() - start)
                ac.append(autocorrelation_period(x))
                fv.append(folded_variance_period(x) if n <= 50_000 else None)
            row = {
                "source": source,
                "period": period,
                "cycles": cycles,
                "eps0": eps0,
                "ours": ours,
                "ac": ac,
                "fv": fv,
                "cpu_s_median": float(np.median(cpu)),
            }
            handle.write(json.dumps(row) + "\n")
            handle.flush()
            print(source, period, cycles, eps0, ours, "ac", ac, "fv", fv, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
