"""Near the top of the range (helper E, round 3): signed errors of ``detect_period`` for a
prime period T at n = 3 T exactly (T = n // 3, the largest admissible period) against n a
little longer (the range reaches past T), SW at eps0, fresh seeds ``[SEED, 9, cell, trial]``;
``clean`` runs the noise-free stream once per trial instead.

Run: ``python scripts/E3_diag_edge.py TRIALS EPS0 SOURCE T N [N ...]``
(SOURCE: a template of ``E3_user_streams``)."""

from __future__ import annotations

import sys
from collections import Counter

import numpy as np
from E3_user_streams import SEED, clean_stream

import ldpfleet


def main(argv: list[str]) -> None:
    trials, eps0, source, period = int(argv[0]), argv[1], argv[2], int(argv[3])
    for ci, n in enumerate(int(a) for a in argv[4:]):
        answers = Counter()
        for trial in range(trials):
            rng = np.random.default_rng([SEED, 9, ci, trial])
            x = clean_stream(source, period, n, rng)
            if eps0 != "clean":
                x = ldpfleet.SquareWave(float(eps0)).perturb(x, rng)
            est = ldpfleet.detect_period(x)
            answers[None if est.period is None else est.period - period] += 1
        print(source, period, n, eps0, dict(sorted(answers.items(), key=str)), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
