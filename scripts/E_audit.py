"""Black-box audit of the cascade canary (helper E, issue 20): the graph found by
``scripts/E_cascade.py climb --theta 1`` (v = node 0, D' = v's list emptied), through the
real CADR-LDP pipeline (``graph_canaries.cadr_release``), against the battery's 2 eps claim.

Usage: ``python scripts/E_audit.py --eps 1 --trials 4000 --seed 0``
"""

from __future__ import annotations

import argparse
import json

import numpy as np
from ldpfleet.collector.audit.core import audit
from ldpfleet.collector.audit.graph_canaries import (
    cascade_canary,
    cascade_witnesses,
    graph_audit_canary,
)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--eps", type=float, default=1.0)
    p.add_argument("--trials", type=int, default=4000, help="runs per world (half selection)")
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    gc = cascade_canary()
    result = audit(
        graph_audit_canary(gc, 1, a.eps),
        cascade_witnesses(gc, 1),
        eps=2 * a.eps,
        n_sel=a.trials // 2,
        n_eval=a.trials // 2,
        seed=a.seed,
        mechanism="cadr cascade",
    )
    out = {"eps": a.eps, "claim_2eps": 2 * a.eps, "trials": a.trials, "seed": a.seed}
    out.update({k: getattr(result, k) for k in ("eps_lb", "eps_lb_max", "verdict", "witness")})
    out["selection"] = {w.witness: w.selection_eps for w in result.selection}
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
