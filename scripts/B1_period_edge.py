"""Periods just beyond detect_period's searched range (docs/cpr.md, "Using it"; helper B1,
2026-12-06): what it answers on 600 samples (searched (3, 200)) for noise-free sines and
for SW reports, with the default min_cycles and with min_cycles=2.

    python scripts/B1_period_edge.py
"""

from collections import Counter

import numpy as np
from ldpfleet.protocol.sw import SquareWave

import ldpfleet

t = np.arange(600)
for period in (201, 210, 230, 250, 300, 400):
    wave = np.sin(2 * np.pi * t / period)
    default, two = ldpfleet.detect_period(wave), ldpfleet.detect_period(wave, min_cycles=2)
    print(
        f"sine T={period}: {default.period} (confidence {default.confidence:.3g}), "
        f"min_cycles=2: {two.period}"
    )
for eps in (2.0, 5.0):
    sw = SquareWave(eps)
    for period in (180, 230, 400):
        answers = Counter(
            ldpfleet.detect_period(
                sw.perturb(0.5 + 0.4 * np.sin(2 * np.pi * t / period), np.random.default_rng(s))
            ).period
            for s in range(1000, 1020)
        )
        print(f"SW eps0={eps} T={period}, 20 seeds: {dict(answers)}")
