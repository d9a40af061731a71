import numpy as np
from ldpfleet.app import bench_gcdp as b
from ldpfleet.app.gcdp_datasets import prepare
from ldpfleet.collector.gcdp import masking_deltas, empirical_influence, calibrate_from_data, release_scales, allocate_budget
prep = prepare("occupancy")
x = prep.train_nodes
print("N", x.shape, "means", x.mean(0).round(4))
d_occ = prep.masking()
print("occ deltas diag", np.diag(d_occ).round(5), "offdiag max", (d_occ-np.diag(np.diag(d_occ))).max())
# node-type mask, per window, mean and max over windows
W=30; n=x.shape[0]//W; wins = x[:n*W].reshape(n,W,-1).mean(1)
print("per-window mean of window means", wins.mean(0).round(4), "max", wins.max(0).round(4))
d_node = masking_deltas(lambda a: a.mean(axis=0), x, 0.0, 1.0)
print("node deltas diag", np.diag(d_node).round(4))
g = calibrate_from_data(x, tau=0.25)
print("rbar", g.exposure_norm.round(3)); print("edges", g.edges)
for name, dd in [("occ", d_occ), ("node", d_node)]:
    xi = empirical_influence(dd, g); s = release_scales(prep.bounds, xi)
    print(name, "xi", xi.round(4), "s", s.round(4), "budgets", allocate_budget(1.0, s, prep.utility, g.exposure_norm).round(4))
# 'own' reading of expansion: delta_j := delta_jj
own = np.diag(np.diag(d_node)) 
dn = np.diag(d_node)
xi_own = np.minimum(1, dn + 1.2*g.exposure_norm*(g.normalized@dn))
print("own-expansion xi (no compression)", xi_own.round(4))
print("utility", prep.utility)
