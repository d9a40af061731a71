"""Baseline for scripts/E_audit.py: the star canary k = theta = 1 (``degree-star-tight``),
same trials and seed, eps_LB only (its proven loss is 2 (1 - alpha) eps)."""

import json
import sys

from ldpfleet.collector.audit.core import audit
from ldpfleet.collector.audit.graph_canaries import GRAPH_FINDINGS

trials, seed = int(sys.argv[1]), int(sys.argv[2])
for eps in (0.5, 1.0, 2.0):
    spec = GRAPH_FINDINGS["degree-star-tight"](eps, 0.0)
    r = audit(spec.canary, spec.witnesses, eps=2 * eps, n_sel=trials // 2, n_eval=trials // 2,
              seed=seed)  # fmt: skip
    print(json.dumps({"eps": eps, "claim_2eps": 2 * eps, "eps_lb": r.eps_lb,
                      "witness": r.witness, "verdict": r.verdict}))  # fmt: skip
