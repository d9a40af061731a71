"""Time the ``cadr-theta-count-dropout`` canary's D' sampler (helper B's measurement script).

Usage: python scripts/B_time_count.py RUNS [EPS] -> CPU seconds per run and a digest of
the outputs (equal digests = identical draws)."""

import hashlib
import sys
import time

import numpy as np
from ldpfleet.collector.audit.cadr_count_canary import CADR_COUNT_BOUND, dropout_count_release

runs = int(sys.argv[1])
eps = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
rng = np.random.default_rng(0)
started = time.process_time()
out = np.array([dropout_count_release(eps, CADR_COUNT_BOUND, rng) for _ in range(runs)])
cpu = time.process_time() - started
digest = hashlib.sha256(out.tobytes()).hexdigest()[:16]
print(f"dropout eps={eps} runs={runs} cpu={cpu:.2f}s per_run={1000 * cpu / runs:.2f}ms {digest}")
