"""Time the graph canary's D sampler (``cadr_release`` runs) (helper B's measurement script).

Usage: python scripts/B_time_graph.py KIND RUNS [SEED]  -> CPU seconds per run and a
digest of the outputs (equal digests = identical draws)."""

import hashlib
import sys
import time

import numpy as np
from ldpfleet.collector.audit.graph_canaries import THETA, construction, graph_audit_canary

kind, runs = sys.argv[1], int(sys.argv[2])
seed = int(sys.argv[3]) if len(sys.argv) > 3 else 0
gc = construction(kind)
rng = np.random.default_rng(seed)
started = time.process_time()
out = graph_audit_canary(gc, THETA, 1.0).sample_d(rng, runs)  # the battery's path
cpu = time.process_time() - started
print(
    f"{kind} runs={runs} cpu={cpu:.2f}s per_run={1000 * cpu / runs:.2f}ms "
    f"digest={hashlib.sha256(out.tobytes()).hexdigest()[:16]}"
)
