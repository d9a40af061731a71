"""CADR-LDP budget split and its ledger — theory of operation.

The CADR-LDP spec (``/work/shared/reference/cadr-ldp.md``; Zhang et al., arXiv 2507.10627)
spends a node's total budget ``eps`` on three releases that all read the node's adjacency
list, with ``0 < alpha < 1`` (the seed's Fig. 6 uses ``alpha = 0.1``):

- NDOE: ``alpha eps / 2``, the exponential mechanism (McSherry & Talwar, FOCS 2007);
- LPEA-LOW: ``alpha eps / 2``, Warner randomized response (Warner, JASA 1965);
- DSR: ``(1 - alpha) eps``, the Laplace mechanism (Dwork et al., TCC 2006).

By sequential composition the three together are ``eps``-node-LDP.

The DP θ search (``protocol.cadr_theta_noise``; the "dp" pipeline) is a fourth release:
the collector opens one secure sum of noisy bucket counts. Its budget comes out of the
``alpha`` part, so that DSR keeps ``(1 - alpha) eps`` (the release's noise, and the
post-processing aimed at it, do not change): with ``theta_fraction = f``

- θ search: ``f alpha eps``, the two-sided geometric mechanism by Pólya shares;
- NDOE and LPEA: ``(1 - f) alpha eps / 2`` each;
- DSR: ``(1 - alpha) eps``,

still ``eps`` in all, now covering everything the collector sees (the θ-search sum, the
NDOE codes, the RR answers, the release). ``f = 0`` is the paper's split (exact θ search,
charged nothing). The "dp" pipeline uses ``THETA_FRACTION = 0.6`` (eps = 3, alpha = 0.1:
0.18 for θ, 0.06 each for NDOE and LPEA). Measured (docs/cadr-private.md, θ-search
accuracy): at 1/3 the noisy θ was within 25% of the exact rule's θ in 23-33% of seeds at
eps = 0.5-1, at 0.6 in 40-78%; the NDOE codes are near-uniform even at the paper's 0.15.

Small ε (``theta_extra``, issue 20). The θ search's counts are also the post-processing's
prior (``collector.degree_postprocess``): when the releases carry little information the
release is the prior's median, so the prior must be good enough to name the median. With
``f α ε`` alone it was not at ε = 0.5 (ε_θ = 0.03: each bucket's noise sd ≈ 94 for 3,000
-4,000 devices; the release was 1-2 % above the constant true median on Erdős–Rényi and
Barabási–Albert graphs). So the dp pipeline takes ``ε_θ = max(f α ε, min(ε / 2,
THETA_EPS_CAP, HISTOGRAM_TARGET / n))`` and the difference ``β ε`` out of DSR (``dsr = (1 -
α - β) ε``; NDOE and LPEA unchanged). Why these numbers: a count below a threshold sums
the noise of the buckets below it; for 16 buckets its sd is ``√16 · 2√2 · √(1/0.9) / ε_θ
≈ 12 / ε_θ`` (two-sided geometric for sensitivity 2, shares for 90 % of the devices),
1 % of n at ``ε_θ = 1200 / n``; at most half of ε (the other half stays with the
release, which is what beats the constant when ε is large) and at most 0.5 (n ≥ 2,400
need less; smaller fleets stop there: beyond it the release's own noise matters more),
except mid-size fleets (``MID_FLEET_MIN_DEVICES`` = 25 to ``MID_FLEET_DEVICES`` = 150
devices), which stop at ``MID_FLEET_THETA_EPS_CAP`` = 1.5 from ε = 1 up: there the θ
search's count noise in the prior, not θ nor the release's noise, kept the release above
the constant median (with exact counts the excess vanished); pre-registered on 150 fresh
cells, summed MAE 296.19 -> 289.13, cells above the constant median 79 -> 59, larger
graphs identical (docs/cadr-private.md, "Mid-size fleets: θ above the largest degree").
ego-Facebook (n = 4,039): ε_θ = 0.25 / 0.297 / 0.297 / 0.297 / 0.3 at ε = 0.5 / 1 / 2 /
3 / 5 (was 0.03 / 0.06 / 0.12 / 0.18 / 0.3). A function of the public ε, α and n only;
the plan carries ``theta_extra`` to the devices.

Very small ε (issue 20, third step). At ε = 0.5 the rule above left DSR ε_dsr ≈ 0.23: a
Laplace scale of 4θ, so no node's posterior left the prior's median (every cell of the
grid tied or was the private median), and the release was the θ search's median alone —
one degree off in some seeds where the true median is a knife-edge (Barabási–Albert n =
1,000: F(14) = 0.524, 24 devices above n/2, against a CDF noise sd of 30–40 at ε_θ =
0.25). So at ``ε <= SMALL_EPS_LOW`` (0.5) the θ search takes everything but NDOE's and
LPEA's shares and ``DSR_FLOOR · ε`` (DSR keeps 10 %: ε_θ = 0.86 ε at α = 0.1), from
``SMALL_EPS_HIGH`` (1) up the rule above, linear in ε in between (continuous; ε ≥ 1 is
unchanged). Chosen on 10 of the grid's 19 graphs, checked on the other 9 and 3 graphs
never used before (docs/cadr-private.md): at ε = 0.5 above the constant true median in 3
cells of 22 (was 5), at 0.75 in 2 (was 5) — but at 0.75 ego-Facebook and wiki-Vote lose
the DSR gain they had (31.87 → 32.02, 26.69 → 26.75): the linear part is a trade-off, an
n-dependent transition not yet measured. Public: ε, α, n only.

Weak counts (``SIGNAL_RATIO_TARGET``, issue 20, helper A second step). Where the θ search's
counts carry little signal — the public ratio ``n / (√K σ)`` (``signal_ratio``) below
``SIGNAL_RATIO_TARGET`` = 8 — the prior they make, not the release, decides the per-node
error (docs/cadr-private.md: with exact counts the excess over the constant median nearly
vanished). So from ε > ``SMALL_EPS_LOW`` a fleet of ``MID_FLEET_MIN_DEVICES`` to
``WEAK_COUNT_MAX_DEVICES`` (25 to 150) devices takes ``ε_θ = max(rule above, min(s,
MID_FLEET_THETA_EPS_CAP, ε*))``: ``s`` the very-small-ε share (DSR keeps ``DSR_FLOOR ·
ε``), ``ε*`` the least ε_θ at which the ratio reaches the target
(``eps_for_signal_ratio``). It moves ε in (0.5, ~2.5) only (n = 80, ε = 1: ε_θ 0.5 ->
0.86; from ε = 3 the mid-size cap 1.5 already binds); n > 150 and ε ≤ 0.5 are unchanged;
continuous and non-decreasing in ε. 8 is ``collector.degree_postprocess.
UNIMODAL_RATIO_MAX``. Calibrated on 300 cells (scripts/A2_signal.py, summed MAE 585.19 ->
580.28, cells above the constant median 133 -> 124); pre-registered twice
(docs/preregistration/A-weak-counts.md): for every n ≥ 25 it FAILED (150 fresh cells:
304.38 -> 306.68, one run of n = 175 at ε = 5), for 25 ≤ n ≤ 150 it PASSED on a second
fresh set (150 cells: 308.73 -> 303.61, cells above the constant median 55 -> 49, at ε = 1
17 -> 14; ego-Facebook and wiki-Vote identical).

Tiny fleets (``small_fleet_theta``, issue 20). Below a public size the θ search's noisy
bucket counts cannot place the fleet: when ``n < √K · σ`` — ``σ`` the standard deviation
of one bucket count's two-sided geometric noise at the search's ε_θ (``sqrt(2 (n/m) a) /
(1 - a)``, ``a = exp(-ε_θ / 2)``, ``m = noise_parties(n)``), ``K`` its buckets — the noise
summed over the buckets is larger than the whole fleet. There the dp pipeline runs NO θ
search: θ = ⌈√D⌉ and the split is a given θ's (``for_pipeline(..., searched=False)``:
ε_θ = 0, NDOE and LPEA αε/2 each, DSR (1 - α)ε), the release the DSR values' own
deconvolution. A function of the public ε, α, n and D, known before any data
(``plan_theta``; ``privacy_claim(..., small_fleet=True)`` names it). The threshold 1 is
not fitted; ⌈√D⌉ was chosen among D, ⌊D/2⌋ and ⌈√D⌉ on 80 calibration cells. On four
fresh sets of tiny graphs (docs/cadr-private.md, "Small graphs: the limit and the guard")
it lowered the summed MAE by 17-40 % and the cells above all zeros from 10-33 to 1-3, but
put 3 of 425 cells newly above all zeros (stars and hub-and-leaves graphs, whose leaves
lose their only edge at θ = ⌈√D⌉): its pre-registered per-cell criterion failed. It fires
for n ≤ 23 at ε 1-5 (≤ 27 at ε = 0.5, D = n - 1) and never on ego-Facebook or wiki-Vote
at ε ≥ 0.5; below ε = 0.5 on larger fleets (measured: docs/cadr.md "Small ε"; beats
the θ search, not the constant median): n ≤ 56 at ε = 0.25, 142 at
0.1, 1,428 at 0.01, 4,764 at 0.003 (ego-Facebook too), where the θ search's floor
(``theta_search_min_eps``) then does not apply: no search runs. A wider test at ε ≤
``SMALL_EPS_LOW`` (``n < 1.8 √K σ``, ``SMALL_FLEET_SMALL_EPS_RATIO``; helper R, answering 6 of
30 sparse G(n, 4/(n-1)), n 28-60, above all zeros at ε = 0.5) FAILED its pre-registration
(docs/preregistration/R-small-eps.md: 52 changed cells of 210 fresh graphs, summed MAE 101.45
-> 149.51, cells above all zeros 2 -> 4): off.

Range of eps (``check_run_eps``). A run's total ε must lie in ``[CADR_EPS_MIN,
CADR_EPS_MAX] = [0.001, 50]``: the scenario schema, ``bench cadr``, ``bench cadr-sweep``
and the in-process reference all refuse a value outside it, naming ``eps``, the range and
the value. Below 0.001 no CADR release carries information (DSR's Laplace scale is
``θ / ε_dsr`` >= 1,100 θ) and the floating arithmetic fails further down (found by QA: with
a given θ, ``thm35_bound`` divided by zero at ε = 1e-300, ``noise_weight`` raised a bare
ValueError at 1e-308, the paper pipeline overflowed at 1e-310 and a fleet run waited out
the 120 s relay timeout). A dp θ search needs more: ``ε_θ >= THETA_EPS_MIN``, ε >=
``theta_search_min_eps(alpha)`` (0.005814 at α = 0.1), which a scenario file is checked
against when it loads.

The public degree bound D (``resolve_degree_bound``). Every part above reads D: the θ
search's thresholds (``bucket_grid(D)``), NDOE's partitions and the exponential
mechanism's sensitivity, the largest θ, the post-processing's support ``0..D``; the plan
broadcasts it. It must not come from the data: the graph's maximum degree (the paper's
experiments' reading of its public ``d_max``) is one node's exact degree, released to
everyone in the plan and covered by no ε. Under the "dp" pipeline D is ``n - 1`` by
default — the bound of every simple graph on the public ``n`` devices (a device's degree
above a configured D is clipped to D) — or an integer the operator configures; the
"paper" pipeline keeps the graph's maximum, and the claim names it as not covered.
Measured against the graph's maximum (docs/cadr-private.md, "The degree bound"): per-node
MAE within -0.3 ... +1.2 % on ego-Facebook, Barabási–Albert, Erdős–Rényi, powerlaw-cluster
and star graphs at ε 0.5-5.

Method clip (``NEGOTIATION_FREE``, issue 20, claims D3/A5). No NDOE, no LPEA, no relay
phase: after the same θ search (the same ``theta`` part, θ rule and small-fleet rule as
ll in the same pipeline and fleet size) each device releases ``clip(d_i, 0, θ) +
Laplace(θ / ε_dsr)`` with ``d_i`` the length of its OWN list (at most D) and ``ε_dsr = ε -
ε_θ`` (the "paper" pipeline and a given θ: ``ε_dsr = ε``); NDOE and LPEA are 0 and not
charged (``CadrBudget(..., negotiation=False)``, ``for_pipeline(..., method="clip")``), so
every ledger totals ε. Proof: node-LDP neighbours differ in one node v's list; the only
messages that read v's list are v's own θ-search answer (its one-hot bucket vector plus
Pólya noise, opened only inside the ε_θ-DP secure sum; none under the paper's exact search
is DP, which the claim names) and v's DSR value (a function of ``min(d_v, θ)``, sensitivity
θ, Laplace of scale θ / ε_dsr: ε_dsr-DP for any θ fixed before it). θ is post-processing of
the opened sum, so the DSR release is chosen adaptively after it; by adaptive sequential
composition the collector's whole view is ``(ε_θ + ε_dsr) = ε``-node-LDP. No other
device's message depends on v's list (no negotiation), which is exactly what LPEA's hard
cap breaks. What it gives up: no projected graph (kept edges), only the degree sequence and
histogram. ``privacy_claim(budget, "clip")`` states it.

Clip at small ε (``clip_theta_extra``, ``CLIP_DSR_USEFUL_EPS``, issue 20, claim D9; helper Z).
Where ll's split would leave clip's DSR part ``ε - ε_θ`` below ``CLIP_DSR_USEFUL_EPS``, clip's θ
search takes ``(1 - CLIP_DSR_SHARE) ε`` (DSR keeps 5 %: ``theta_extra = 1 - 0.05 - f α = 0.89 <
1 - α``, which the plan carries unchanged, so devices and the in-process reference compute the
same split). At ε = 0.5 the DSR values (ε_dsr = 0.07, Laplace scale > 10 θ) carry nothing and
the release is the counts' prior median, whose error is the counts' noise. OFF by default
(None): the pre-registered τ = 0.2 FAILED (docs/preregistration/Z-small-eps.md, graph seeds
3701-3740: summed MAE 141.01 -> 139.11 on the 66 changed cells but cells above the constant
median 36 -> 38); τ = 1.0 passed on two fresh sets (3801-3840 as worded, 3901-3940: summed MAE
317.36 -> 315.24, above the constant median 61 -> 53, EMD -23 %); docs/preregistration/
Z-small-eps-wide.md and Z-small-eps-confirm.md; but on ego-Facebook and wiki-Vote at ε = 1
it collapses the per-node release onto the prior's median (31.21 -> 32.02, 26.19 -> 26.75, the
constant median's), so it stays off. Public: ε, α and n (through ll's split).

Clip at small ε, weak counts only (``CLIP_SMALL_EPS_MAX_DEVICES``, issue 20, claim D9; helper
L). The same rule limited to fleets of at most ``CLIP_SMALL_EPS_MAX_DEVICES`` devices — where
the θ search's counts are weak (``signal_ratio`` < 8 at ε ≤ 1) and claim D9 failed most —
with its own threshold ``CLIP_SMALL_EPS_DSR_EPS`` = 0.12 on ll's clip DSR part: at α = 0.1 it
fires for n ≤ 150 at ε ≤ 0.75 (and at smaller ε, not measured), never at ε ≥ 1, never above
the limit (ego-Facebook, wiki-Vote: no change by construction). The gate (n ≤ 150 rather
than ``signal_ratio`` < 8, which also reaches n of 151-230 and, at ε < 0.05, ego-Facebook)
and 0.12 were chosen on Z's four used sets (graph seeds 3601-3940, scripts/L_small_eps.py:
summed MAE 239.40 -> 233.34 on the 107 changed cells, above the constant median 78 -> 68;
τ ≥ 0.5 adds ε = 1, which lost on two of the four). Pre-registered
(docs/preregistration/L-clip-small-eps-weak.md, -confirm.md): PASSED on graph seeds
4101-4140 (34 changed cells: summed MAE 74.57 -> 72.20, above the constant median 22 -> 18,
EMD -32 %; helper I's real small graphs 54.47 -> 53.21) but FAILED the confirmation on
4201-4240 (30 cells: MAE 70.76 -> 57.71, EMD -30 %, yet above the constant median 23 -> 24),
and a third, larger set (4301-4380, L2: 70 cells, summed MAE 156.77 -> 160.17, two cells newly above
all zeros at ε = 0.5), so it is OFF (None); 150 turns it on. Public: ε, α, n; the plan carries
the split as ``theta_extra``.

``open_ledger`` gives a device a ``PrivacyLedger`` with one total-budget account ``"node"``
of ``eps``; ``charge_all`` charges the parts with their mechanism labels, so the account's
spend is ``eps`` (up to floating rounding, far below ``1e-12``) and any further charge is
refused with ``BudgetExhausted`` by the ledger (whose relative tolerance is ``1e-9``: a
charge below ``1e-9 eps`` would be absorbed as rounding, any real release is far above
that).

``privacy_claim(budget, method)`` states the claim part by part, for results.json and the
report: every part the collector (or a neighbour) sees, its mechanism, its ε, whether the
ledger charges it, and whether this implementation establishes the ε for it — with the
parts that are NOT covered named (the relay phases' wall-clock durations — the LPEA
phase's number of rounds is public since the relay pads it, ``protocol.peer_relay``, and
with ``[cadr] peer_deadline_seconds`` their durations too: the timing part is then covered
for a run whose phases all held the deadline, ``privacy_claim(..., deadline=,
overrun=)``, and names the phase and seconds of one that overran it; LPEA's establish refusals and
once-per-node RR charge, under which the audited released sequence is 2(1−α)ε-node-LDP on
a star, not ε: docs/audit-graph.md). The relay's phase report holds public facts only
(the relay keeps its counts), and the relay itself is a communication role with the
broker's trust (``covered = "trust"``). The ledger total (``eps``) is what every device is
charged, not a proof that the whole view is ``eps``-node-LDP.

Caveat on LPEA (recorded, not resolved here): the spec charges Warner RR ``alpha eps / 2``
ONCE per node, and this module follows it. A node that answers ``k`` edge-add requests gives
``k`` independent RR answers about its own state ``|Bbar_j| < theta``; sequential composition
alone bounds that by ``k alpha eps / 2``, so the once-per-node charge relies on the paper's
own argument (not restated in the spec) and should be checked by whoever wires LPEA.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from ldpfleet.protocol.cadr_theta_noise import (
    bucket_count,
    bucket_grid,
    noise_parties,
    noise_sd,
)
from ldpfleet.protocol.device_noise import by_device_noise
from ldpfleet.protocol.errors import BudgetExhausted, LocalProtocolError, ParameterError
from ldpfleet.protocol.ledger import BudgetAccount, PrivacyLedger
from ldpfleet.protocol.validate import integer_at_least, positive_real

__all__ = [
    "ACCOUNT",
    "ALPHA_DEFAULT",
    "CADR_EPS_MAX",
    "CADR_EPS_MIN",
    "DEGREE_BOUND_RULES",
    "MECHANISM_LABELS",
    "NEGOTIATION_FREE",
    "PART_NAMES",
    "SIGNAL_RATIO_TARGET",
    "SMALL_FLEET_THETA_CLAIM",
    "THETA_EPS_MIN",
    "THETA_FRACTION",
    "THETA_LABEL",
    "THETA_RULE_SOURCES",
    "CadrBudget",
    "ThetaPlan",
    "by_device_noise",
    "check_run_eps",
    "check_theta_within_bound",
    "claim_device_noise",
    "clip_theta_extra",
    "eps_for_signal_ratio",
    "fleet_signal",
    "known_kept_ratio",
    "negotiates",
    "noise_part",
    "plan_theta",
    "privacy_claim",
    "release_warnings",
    "resolve_degree_bound",
    "restate_device_noise",
    "signal_ratio",
    "small_fleet_theta",
    "theta_extra",
    "theta_search_min_eps",
]

ACCOUNT = "node"
ALPHA_DEFAULT = 0.1
MECHANISM_LABELS = ("exponential", "warner_rr", "laplace")
THETA_LABEL = "geometric"  # the DP θ search's two-sided geometric mechanism
# mechanism label -> the budget part it spends (results.json ``budget``, bench ``spent``)
PART_NAMES = {THETA_LABEL: "theta", "exponential": "ndoe", "warner_rr": "lpea", "laplace": "dsr"}
THETA_FRACTION = 0.6  # the dp pipeline's share of the alpha part for the θ search
# methods with no negotiation (module docstring, "Method clip"): every message a device
# sends depends on its own list only, so the whole view is ε-node-LDP
NEGOTIATION_FREE = ("clip",)
HISTOGRAM_TARGET = 1200.0  # n · ε_θ at which a 16-bucket count's noise sd is ~1% of n
THETA_EPS_CAP = 0.5  # the most ε_θ the rule takes from DSR: at most ε/2, and at most 0.5
# mid-size fleets (MID_FLEET_MIN_DEVICES <= n <= MID_FLEET_DEVICES) take up to
# MID_FLEET_THETA_EPS_CAP from ε = 1 up (pre-registered on n = 30-150; below 25 devices
# the small-fleet rule's decision stays as it was; docs/cadr-private.md, "Mid-size fleets:
# θ above the largest degree", helper A)
MID_FLEET_MIN_DEVICES = 25
MID_FLEET_DEVICES = 150
MID_FLEET_THETA_EPS_CAP = 1.5
# weak counts (``signal_ratio`` below this at the rule's ε_θ): from ε > SMALL_EPS_LOW a fleet
# of MID_FLEET_MIN_DEVICES to WEAK_COUNT_MAX_DEVICES takes ε_θ up to the very-small-ε share,
# at most MID_FLEET_THETA_EPS_CAP and at most what brings the ratio to this target (helper
# A, second step, pre-registered: docs/preregistration/A-weak-counts.md; None: off). 8 =
# collector.degree_postprocess.UNIMODAL_RATIO_MAX, the ratio from which the counts' noise
# no longer shapes the prior
SIGNAL_RATIO_TARGET: float | None = 8.0
# the largest fleet the weak-count rule acts on (None: any n, which FAILED its
# pre-registration; MID_FLEET_DEVICES passed the second: ε_θ from ε >= 3 is already
# MID_FLEET_THETA_EPS_CAP there, so the rule acts on ε in (0.5, ~2.5) only)
WEAK_COUNT_MAX_DEVICES: int | None = MID_FLEET_DEVICES
# method clip at small ε (helper Z, issue 20, claim D9): where the split leaves DSR less than
# CLIP_DSR_USEFUL_EPS, the θ search takes all but CLIP_DSR_SHARE of ε (module docstring,
# "Clip at small ε"). Off (None: clip keeps ll's θ part). The primary pre-registration's 0.2
# FAILED (cells above the constant median 36 -> 38, docs/preregistration/Z-small-eps.md); 1.0,
# registered after it, passed two fresh sets of generated graphs (n <= 3,000: above the median
# 57 -> 48 and 61 -> 53, summed MAE -0.5 / -0.67 %), but on the large SNAP graphs at ε = 1 it
# collapses the per-node release onto the prior's median (ego-Facebook 31.21 -> 32.02,
# wiki-Vote 26.19 -> 26.75: no better than the constant median), so it is not the default
# (docs/cadr-private.md, "Clip at small ε"). 1.0 turns it on.
CLIP_DSR_USEFUL_EPS: float | None = None
# the same rule limited to fleets whose θ-search counts are weak (helper L, issue 20, claim D9;
# docs/preregistration/L-clip-small-eps-weak.md): for n <= CLIP_SMALL_EPS_MAX_DEVICES only,
# with the threshold CLIP_SMALL_EPS_DSR_EPS on ll's clip DSR part (module docstring, "Clip at
# small ε, weak counts only"). None: off — it passed its fresh set (4101-4140) but failed the
# confirmation (4201-4240: cells above the constant median 23 -> 24, summed MAE -18 %);
# failed a third set too (4301-4380: summed MAE +2.2 %,
# docs/preregistration/L2-clip-small-eps-weak-third.md);
# fleets above it (ego-Facebook, wiki-Vote) never move
CLIP_SMALL_EPS_MAX_DEVICES: int | None = None
# chosen on Z's four used sets (graph seeds 3601-3940): 0.12 takes ε <= 0.75 at n <= 150
# (ll's clip DSR 0.07 / 0.105) and leaves ε = 1 (0.14-0.35), where τ >= 0.5 lost on two sets
CLIP_SMALL_EPS_DSR_EPS = 0.12
CLIP_DSR_SHARE = 0.05  # DSR's share of ε when the rule fires (> (1 - f) α = 0.04: the plan's bound)
SMALL_EPS_LOW = 0.5  # at ε <= this the θ search takes all but NDOE, LPEA and DSR_FLOOR·ε
SMALL_EPS_HIGH = 1.0  # from this ε up the rule above (ε/2, 0.5, 1200/n); linear in between
DSR_FLOOR = 0.1  # the share of ε DSR keeps at very small ε
# the least ε_θ the dp θ search runs at: a device's exact Pólya share costs O(1/ε_θ²) coins
# (17 entries, m = 3,636: 1.1 ms at ε_θ = 0.3, 10 ms at 0.005, 155 ms at 0.001, 2.4 s at 3e-4)
THETA_EPS_MIN = 0.005
# the range of a run's total budget eps ([cadr] eps, `bench cadr`, `bench cadr-sweep`, the
# in-process reference): below CADR_EPS_MIN every release is noise (DSR's Laplace scale is
# θ / (0.9 ε) >= 1,100 θ at alpha = 0.1) and the arithmetic gives out further down (Thm
# 3.5's bound divided by zero at 1e-300, the post-processing's noise weight at 1e-308, the
# paper pipeline's θ at 1e-310); module docstring, "Range of eps"
CADR_EPS_MIN = 0.001
CADR_EPS_MAX = 50.0
# [cadr] degree_bound: "auto" (dp: "devices", paper: "graph-max"), "devices" (n - 1), the
# graph's maximum degree (not private), or a configured integer
DEGREE_BOUND_RULES = ("auto", "devices", "graph-max")
# who chose a run's θ (``plan_theta``): the configuration, the θ search, the small-fleet rule
THETA_RULE_SOURCES = ("configured", "search", "small-fleet")
# the small-fleet test at ε <= SMALL_EPS_LOW (helper R, issue 20, claim D9): there clip's DSR
# keeps 0.14 ε after the θ search, the release is the counts' prior median, and on fleets whose
# count-signal ratio n / (√K σ) is below this the noisy top buckets can put that median (and θ)
# far above every degree (G's trial: 6 of 30 G(n, 4/(n-1)) graphs, n 28-60, above all zeros).
# So at ε <= SMALL_EPS_LOW the rule fires when n < SMALL_FLEET_SMALL_EPS_RATIO · √K σ (1 above
# it and with None). Calibrated on G's 30 graphs (scripts/R_cal.py: 1.8). Pre-registered
# (docs/preregistration/R-small-eps.md) and FAILED on 210 fresh graphs: 52 changed cells at ε =
# 0.5, summed MAE 101.45 -> 149.51, cells above all zeros 2 -> 4, above the constant median
# 368 -> 378 (the no-search deconvolution at ε_dsr = 0.5 is worse than the counts' prior on
# most graphs). Off (None); 1.8 turns it on
SMALL_FLEET_SMALL_EPS_RATIO: float | None = None
SMALL_FLEET_THETA_CLAIM = "θ: chosen by the public small-fleet rule (n < √K·σ), no θ search"


def resolve_degree_bound(
    setting: int | str, pipeline: str, devices: int, graph_max: int
) -> tuple[int, str]:
    """The public degree bound D of a run and where it comes from (module docstring, "The
    public degree bound"): ``(D, source)`` with ``source`` one of ``"configured"`` (an
    integer ``setting``), ``"devices"`` (``n - 1``, at least 1) or ``"graph-max"`` (the
    graph's maximum degree ``graph_max``, at least 1: NOT private). ``"auto"``:
    ``"devices"`` under pipeline "dp", ``"graph-max"`` under "paper"."""
    if isinstance(setting, int) and not isinstance(setting, bool):
        if setting < 1:
            raise ParameterError(
                f"must be an integer >= 1, got {setting}",
                field="degree_bound",
                limit="an integer >= 1",
                value=setting,
            )
        return setting, "configured"
    if setting not in DEGREE_BOUND_RULES:
        raise ParameterError(
            f"must be an integer >= 1 or one of {', '.join(DEGREE_BOUND_RULES)}, got {setting!r}",
            field="degree_bound",
            limit=f"an integer >= 1 or one of {', '.join(DEGREE_BOUND_RULES)}",
            value=setting,
        )
    rule = setting if setting != "auto" else ("graph-max" if pipeline == "paper" else "devices")
    if rule == "devices":
        return max(int(devices) - 1, 1), "devices"
    return max(int(graph_max), 1), "graph-max"


def check_theta_within_bound(theta_rule: int | str, bound: tuple[int, str]) -> None:
    """Refuse a given θ above the public degree bound ``bound = (D, source)``
    (``resolve_degree_bound``): every device refuses such a θ (θ ≤ D, the plan's largest
    θ), so the fleet would wait for releases that never come (the in-process reference,
    where no device refuses, still runs it). A θ rule (``"auto-dev"``, ``"auto-sum"``)
    picks θ ≤ D itself."""
    if isinstance(theta_rule, bool) or not isinstance(theta_rule, int):
        return
    limit, source = bound
    if theta_rule > limit:
        raise ParameterError(
            f"must be <= the degree bound D = {limit} ({source}), got {theta_rule}; "
            "raise degree_bound or lower theta",
            field="theta",
            limit=f"<= the degree bound D = {limit} ({source})",
            value=theta_rule,
        )


def _check_theta_eps(budget: CadrBudget) -> None:
    """Refuse a dp θ search below ``THETA_EPS_MIN``: its exact Pólya noise would take each
    device seconds to minutes (the run hangs in the θ stage). Names the smallest eps that
    works at this alpha (``theta_search_min_eps``) or, for an eps above it refused at a
    large fleet (ε_θ = max(f α ε, 1,200 / n) from ε = 1 up), the alpha x eps that works."""
    if budget.theta >= THETA_EPS_MIN:
        return
    floor = theta_search_min_eps(budget.alpha)
    if budget.eps < floor:
        fix = f"use eps >= {floor}"
    else:  # only f α ε is left to raise: the fleet's share 1,200 / n is below the floor
        product = THETA_EPS_MIN / THETA_FRACTION
        need = math.ceil(product / budget.alpha * 1e6) / 1e6
        fix = f"raise alpha x eps to >= {product:.6g} (eps >= {need} at this alpha)"
    raise ParameterError(
        f"must give the dp pipeline's θ search ε_θ >= {THETA_EPS_MIN} (its exact Pólya "
        f"noise costs each device O(1/ε_θ²) coin flips), got eps = {budget.eps!r} "
        f"(ε_θ = {budget.theta:.3g} at alpha = {budget.alpha!r}): {fix}, a given theta "
        '(no θ search) or pipeline = "paper"',
        field="eps",
        limit=f"ε_θ >= {THETA_EPS_MIN} ({fix})",
        value=budget.eps,
    )


def theta_search_min_eps(alpha: float) -> float:
    """The smallest total ``eps`` (rounded up to 1e-6) at which the dp pipeline's θ search
    runs at this ``alpha``: ``ε_θ >= THETA_EPS_MIN`` (0.005814 at alpha = 0.1).

    Computed from the split ``CadrBudget.for_pipeline`` uses: at ``ε <= SMALL_EPS_LOW`` its
    ε_θ is proportional to ε and does not depend on the fleet size n, so the floor is the
    same for every n. A run refuses every eps below it (``_check_theta_eps``); above it,
    only a fleet of more than 240,000 devices with alpha x eps < THETA_EPS_MIN /
    THETA_FRACTION can still be refused (from ε = 1 up ε_θ = max(f α ε, 1,200 / n))."""
    a = positive_real(alpha, "alpha")
    if a >= 1.0:
        raise ParameterError(
            f"must satisfy 0 < alpha < 1, got {alpha!r}",
            field="alpha", limit="0 < alpha < 1", value=alpha,
        )  # fmt: skip
    eps = SMALL_EPS_LOW  # any ε up to it gives the same ε_θ / ε, whatever n
    per_eps = CadrBudget(eps, a, THETA_FRACTION, theta_extra(eps, a, 1)).theta / eps
    return math.ceil(THETA_EPS_MIN / per_eps * 1e6) / 1e6


def check_run_eps(eps: float) -> float:
    """A run's total budget ``eps`` as a float, refused (``ParameterError`` naming
    ``eps``, the range and the value) outside ``[CADR_EPS_MIN, CADR_EPS_MAX]``, NaN, inf
    and bools included. Every CADR run path calls it (``CadrBudget.for_pipeline``,
    ``CadrBudget.with_fraction``, the scenario schema and the bench commands' options)."""
    e = positive_real(eps, "eps")
    if not CADR_EPS_MIN <= e <= CADR_EPS_MAX:
        raise ParameterError(
            f"must be in [{CADR_EPS_MIN:g}, {CADR_EPS_MAX:g}], got {eps!r} (below "
            f'{CADR_EPS_MIN:g} every CADR release is noise: docs/cadr.md, "Range of eps")',
            field="eps",
            limit=f"in [{CADR_EPS_MIN:g}, {CADR_EPS_MAX:g}]",
            value=eps,
        )
    return e


def fleet_signal(eps_dsr: float, devices: int) -> float:
    """``ε_DSR · √(n / 2)``: how far the DSR release can place the fleet as a whole. The mean
    of the n released values ``k_i + Lap(θ / ε_DSR)`` has noise of standard deviation
    ``√2 · θ / (ε_DSR · √n)``, and every kept degree lies in ``[0, θ]``: below 1 that noise
    exceeds θ, the whole range of a kept degree, whatever θ is, so no post-processing can
    tell one fleet from another and the per-node release is close to a guess that does not
    depend on the data (docs/cadr.md "Small ε": 171 of 185 measured cells where the
    small-fleet rule fires were below it, every one of them above the constant median).
    Pure and public: the split's ε_DSR and the number of devices."""
    e = positive_real(eps_dsr, "eps_dsr")
    n = integer_at_least(devices, "devices", 1)
    return e * math.sqrt(n / 2)


def release_warnings(eps_dsr: float, devices: int, *, searched: bool = False) -> list[str]:
    """results.json ``warnings`` of a CADR run, from public figures only: one sentence when
    ``fleet_signal`` is below 1 (the release cannot place the fleet), else none.
    ``searched``: θ was chosen by the DP θ search, whose noisy counts give the degree
    distribution the post-processed release reads — the release is then close to that
    distribution's median for every device, not a data-independent guess."""
    signal = fleet_signal(eps_dsr, devices)
    if signal >= 1:
        return []
    if searched:
        outcome = (
            "the per-node release is close to the median of the degree distribution the "
            "theta search's noisy counts give, the same for every device"
        )
    else:
        outcome = "the per-node release is close to a data-independent guess"
    return [
        f"at eps_dsr = {eps_dsr:.4g} over {devices:,} devices the DSR release cannot place the "
        f"fleet (eps_dsr * sqrt(n / 2) = {signal:.3g} < 1: the noise on the fleet's mean kept "
        f"degree exceeds theta, whatever theta is); {outcome}: judge it against the constant "
        'baselines (results.json baselines; docs/cadr.md "Small eps")'
    ]


def theta_extra(eps: float, alpha: float, devices: int) -> float:
    """The dp pipeline's extra θ-search share ``β`` of ``eps`` taken from DSR (module
    docstring, "Small ε" and "Very small ε"): ``ε_θ = max(f α ε, want)`` with ``f =
    THETA_FRACTION``, ``want = min(ε / 2, THETA_EPS_CAP, HISTOGRAM_TARGET / n)`` from ε = 1
    up, ``(1 - (1 - f) α - DSR_FLOOR) ε`` at ε <= 0.5, linear in between; ``β = (ε_θ - f α
    ε) / ε`` (0 when ``f α ε`` already reaches it). A function of the public eps, alpha
    and n only."""
    e = positive_real(eps, "eps")
    a = positive_real(alpha, "alpha")
    if isinstance(devices, bool) or not isinstance(devices, int) or devices < 1:
        raise ParameterError(
            f"must be an integer >= 1, got {devices!r}",
            field="devices", limit="an integer >= 1", value=devices,
        )  # fmt: skip
    base = THETA_FRACTION * a * e
    want = _wanted_theta_eps(e, a, devices)
    return max(0.0, want - base) / e


def clip_theta_extra(eps: float, alpha: float, extra: float, devices: int | None = None) -> float:
    """Method clip's ``theta_extra`` under the dp θ search (module docstring, "Clip at small
    ε"): ``extra`` (ll's, ``theta_extra``) unless the DSR part it leaves clip, ``ε - (f α +
    extra) ε``, is below the threshold (``_clip_useful_eps``: ``CLIP_DSR_USEFUL_EPS`` for
    every fleet, or ``CLIP_SMALL_EPS_DSR_EPS`` for fleets of at most
    ``CLIP_SMALL_EPS_MAX_DEVICES`` ``devices``); then ``1 - CLIP_DSR_SHARE - f α`` (ε_θ =
    ``(1 - CLIP_DSR_SHARE) ε``, ε_dsr = ``CLIP_DSR_SHARE · ε`` > 0), never less than
    ``extra``. Pure and public: ε, α, n and ll's share (itself of ε, α and n)."""
    useful = _clip_useful_eps(devices)
    if useful is None:
        return extra
    base = THETA_FRACTION * alpha
    if eps - (base + extra) * eps >= useful:
        return extra
    return max(extra, 1.0 - CLIP_DSR_SHARE - base)


def _clip_useful_eps(devices: int | None) -> float | None:
    """The DSR part below which clip's θ search takes almost all of ε: ``CLIP_DSR_USEFUL_EPS``
    when set (every fleet), else ``CLIP_SMALL_EPS_DSR_EPS`` for a fleet of at most
    ``CLIP_SMALL_EPS_MAX_DEVICES`` devices (weak counts), else None (the rule is off)."""
    if CLIP_DSR_USEFUL_EPS is not None:
        return CLIP_DSR_USEFUL_EPS
    limit = CLIP_SMALL_EPS_MAX_DEVICES
    if limit is None or devices is None or devices > limit:
        return None
    return CLIP_SMALL_EPS_DSR_EPS


def _wanted_theta_eps(eps: float, alpha: float, devices: int) -> float:
    """ε_θ before the floor ``f α ε`` (module docstring, "Small ε" and "Very small ε"):
    ``min(ε / 2, THETA_EPS_CAP, HISTOGRAM_TARGET / n)`` from ``SMALL_EPS_HIGH`` up (the cap
    ``MID_FLEET_THETA_EPS_CAP`` for fleets of ``MID_FLEET_MIN_DEVICES`` to
    ``MID_FLEET_DEVICES`` devices: their counts' noise, not θ, is what kept the release
    above the constant median; docs/cadr-private.md); at
    ``ε <= SMALL_EPS_LOW`` everything but NDOE's and LPEA's shares and ``DSR_FLOOR · ε``;
    linear in ε in between (continuous at both ends)."""
    mid = MID_FLEET_MIN_DEVICES <= devices <= MID_FLEET_DEVICES
    cap = MID_FLEET_THETA_EPS_CAP if mid else THETA_EPS_CAP
    large = min(eps / 2.0, cap, HISTOGRAM_TARGET / devices)
    small = eps * (1.0 - (1.0 - THETA_FRACTION) * alpha - DSR_FLOOR)
    if eps <= SMALL_EPS_LOW:
        return small
    if eps >= SMALL_EPS_HIGH:
        rule = large
    else:
        w = (eps - SMALL_EPS_LOW) / (SMALL_EPS_HIGH - SMALL_EPS_LOW)
        rule = (1.0 - w) * small + w * large
    return max(rule, _weak_count_theta_eps(small, devices))


def _weak_count_theta_eps(share: float, devices: int) -> float:
    """The ε_θ a fleet with weak counts takes (module docstring, "Weak counts"): the
    very-small-ε ``share`` of ε, at most ``MID_FLEET_THETA_EPS_CAP`` and at most
    ``eps_for_signal_ratio(SIGNAL_RATIO_TARGET, n, ...)``; 0 below
    ``MID_FLEET_MIN_DEVICES`` or above ``WEAK_COUNT_MAX_DEVICES`` devices, or with the rule
    off."""
    if SIGNAL_RATIO_TARGET is None or devices < MID_FLEET_MIN_DEVICES:
        return 0.0
    if WEAK_COUNT_MAX_DEVICES is not None and devices > WEAK_COUNT_MAX_DEVICES:
        return 0.0
    most = min(share, MID_FLEET_THETA_EPS_CAP)
    return eps_for_signal_ratio(SIGNAL_RATIO_TARGET, devices, most)


def signal_ratio(eps_theta: float, devices: int) -> float:
    """``n / (√K σ)``: the fleet's ``n`` devices against the standard deviation of the
    noise summed over the θ search's ``K = bucket_count(n, ε_θ) + 1`` bucket counts (``σ``
    per count: ``protocol.cadr_theta_noise.noise_sd`` with ``noise_parties(n)``; as
    ``collector.degree_postprocess.count_signal_ratio``, with the largest grid of that
    bucket count). Pure and public: ε_θ and n."""
    e = positive_real(eps_theta, "eps_theta")
    n = integer_at_least(devices, "devices", 1)
    buckets = bucket_count(n, e) + 1
    return n / (math.sqrt(buckets) * noise_sd(e, n, noise_parties(n)))


def eps_for_signal_ratio(target: float, devices: int, most: float) -> float:
    """The least ε_θ in ``(0, most]`` at which ``signal_ratio`` reaches ``target``
    (bisection, 60 halvings: deterministic), or ``most`` when even ``most`` does not reach
    it. Pure and public: the target, n and the bound."""
    goal = positive_real(target, "target")
    n = integer_at_least(devices, "devices", 1)
    hi = positive_real(most, "most")
    if signal_ratio(hi, n) < goal:
        return hi
    lo = 0.0
    for _ in range(60):
        mid = (lo + hi) / 2.0
        if signal_ratio(mid, n) < goal:
            lo = mid
        else:
            hi = mid
    return hi


@dataclass(frozen=True)
class CadrBudget:
    """The split of a node's budget ``eps`` into θ search / NDOE / LPEA / DSR (module
    docstring); ``theta_fraction = 0`` (default): the paper's three parts, ``theta = 0``."""

    eps: float
    alpha: float = ALPHA_DEFAULT
    theta_fraction: float = 0.0
    theta_extra: float = 0.0
    # False: a method without negotiation (``NEGOTIATION_FREE``, "clip"): no NDOE, no LPEA,
    # DSR takes everything the θ search leaves (module docstring, "Method clip")
    negotiation: bool = True
    theta: float = field(init=False, compare=False)
    ndoe: float = field(init=False, compare=False)
    lpea: float = field(init=False, compare=False)
    dsr: float = field(init=False, compare=False)

    def __post_init__(self) -> None:
        eps = positive_real(self.eps, "eps")
        alpha = positive_real(self.alpha, "alpha")  # refuses alpha <= 0, NaN, inf, bools
        if alpha >= 1.0:
            raise ParameterError(
                f"must satisfy 0 < alpha < 1, got {self.alpha!r}",
                field="alpha", limit="0 < alpha < 1", value=self.alpha,
            )  # fmt: skip
        f = self.theta_fraction
        if isinstance(f, bool) or not isinstance(f, int | float) or not 0.0 <= f < 1.0:
            raise ParameterError(
                f"must satisfy 0 <= theta_fraction < 1, got {f!r}",
                field="theta_fraction", limit="0 <= theta_fraction < 1", value=f,
            )  # fmt: skip
        x = self.theta_extra
        if (
            isinstance(x, bool)
            or not isinstance(x, int | float)
            or not 0.0 <= x < 1.0 - alpha
            or (x > 0 and f == 0.0)
        ):
            raise ParameterError(
                f"must satisfy 0 <= theta_extra < 1 - alpha (and 0 unless theta_fraction > 0), "
                f"got {x!r}",
                field="theta_extra",
                limit="0 <= theta_extra < 1 - alpha (0 unless theta_fraction > 0)",
                value=x,
            )
        object.__setattr__(self, "eps", eps)
        object.__setattr__(self, "alpha", alpha)
        object.__setattr__(self, "theta_fraction", float(f))
        object.__setattr__(self, "theta_extra", float(x))
        object.__setattr__(self, "theta", f * alpha * eps + x * eps if x else f * alpha * eps)
        if not isinstance(self.negotiation, bool):
            raise ParameterError(
                f"must be True or False, got {self.negotiation!r}",
                field="negotiation", limit="True or False", value=self.negotiation,
            )  # fmt: skip
        if not self.negotiation:  # clip: no NDOE, no LPEA; DSR gets the rest of eps
            object.__setattr__(self, "ndoe", 0.0)
            object.__setattr__(self, "lpea", 0.0)
            object.__setattr__(self, "dsr", eps - self.theta)
            return
        if f == 0.0:  # the paper's split, with its floating operations
            object.__setattr__(self, "ndoe", alpha * eps / 2.0)
            object.__setattr__(self, "lpea", alpha * eps / 2.0)
        else:
            object.__setattr__(self, "ndoe", (1.0 - f) * alpha * eps / 2.0)
            object.__setattr__(self, "lpea", (1.0 - f) * alpha * eps / 2.0)
        object.__setattr__(self, "dsr", (1.0 - alpha - x) * eps if x else (1.0 - alpha) * eps)

    @classmethod
    def for_pipeline(
        cls, eps: float, alpha: float, pipeline: str, searched: bool, devices: int,
        method: str = "ll",
    ) -> CadrBudget:  # fmt: skip
        """The split a run of ``devices`` devices uses: ``THETA_FRACTION`` and the
        ``theta_extra`` rule when the "dp" pipeline searches θ (``searched``: the rule is
        not a given θ), the paper's split otherwise. ``method``: a ``NEGOTIATION_FREE``
        method ("clip") takes the same θ part and gives DSR the rest (``negotiation =
        False``); every other method's split does not depend on it."""
        if pipeline not in ("dp", "paper"):
            raise ParameterError(
                f"must be 'dp' or 'paper', got {pipeline!r}",
                field="pipeline", limit="'dp' or 'paper'", value=pipeline,
            )  # fmt: skip
        check_run_eps(eps)
        negotiation = negotiates(method)
        if pipeline == "dp" and searched:
            extra = theta_extra(eps, alpha, devices)
            if not negotiation:
                extra = clip_theta_extra(eps, alpha, extra, devices)
            budget = cls(eps, alpha, THETA_FRACTION, extra, negotiation=negotiation)
            _check_theta_eps(budget)
            return budget
        return cls(eps, alpha, 0.0, negotiation=negotiation)

    @classmethod
    def with_fraction(cls, eps: float, alpha: float, theta_fraction: float) -> CadrBudget:
        """A run's split with a fixed θ-search share ``theta_fraction`` of the alpha part
        (no ``theta_extra``; ``bench cadr-sweep``'s θ-search rows), under the same checks
        as ``for_pipeline``: eps in range (``check_run_eps``) and, when it searches θ,
        ``ε_θ >= THETA_EPS_MIN``."""
        budget = cls(check_run_eps(eps), alpha, theta_fraction)
        if budget.theta > 0:
            _check_theta_eps(budget)
        return budget

    def parts(self) -> tuple[tuple[str, float], ...]:
        """``(mechanism label, budget)`` in release order: the θ search (only when
        ``theta_fraction > 0``), NDOE, LPEA, DSR (without negotiation: the θ search and
        DSR only)."""
        if not self.negotiation:
            dsr = (("laplace", self.dsr),)
            return ((THETA_LABEL, self.theta), *dsr) if self.theta > 0 else dsr
        paper = tuple(zip(MECHANISM_LABELS, (self.ndoe, self.lpea, self.dsr), strict=True))
        return ((THETA_LABEL, self.theta), *paper) if self.theta > 0 else paper

    def as_dict(self) -> dict[str, float]:
        """The split by part name (``theta`` only when it is charged): results.json's
        ``budget``."""
        return {PART_NAMES[label]: eps for label, eps in self.parts()}

    def open_ledger(self, owner: str) -> PrivacyLedger:
        """A fresh ledger for device ``owner`` with one ``BudgetAccount`` ``"node"`` of eps."""
        ledger = PrivacyLedger(owner)
        ledger.open_account(ACCOUNT, BudgetAccount(self.eps))
        return ledger

    def charge_all(self, ledger: PrivacyLedger) -> None:
        """Charge every part (``parts()``) to the ledger's ``"node"`` account, all or
        nothing: if they do not fit in what is left, ``BudgetExhausted`` is raised before any
        charge is recorded."""
        acct = ledger.account(ACCOUNT)
        if not isinstance(acct, BudgetAccount):
            raise LocalProtocolError(f"account {ACCOUNT!r} must be a total budget", field="ledger")
        total = math.fsum(eps for _, eps in self.parts())
        if not acct.can_charge(total):
            acct.refusals += 1
            raise BudgetExhausted(
                f"the CADR-LDP releases need {total:.6g} but only {acct.remaining:.6g} "
                f"of eps = {acct.eps:.6g} is left",
                field="eps",
            )
        for label, eps in self.parts():
            ledger.charge(ACCOUNT, eps, mechanism=label)


def negotiates(method: str) -> bool:
    """Whether ``method`` negotiates a projection between neighbours (NDOE, LPEA: ll, lh,
    ra; er's deletion too) — False for the ``NEGOTIATION_FREE`` methods ("clip")."""
    return method not in NEGOTIATION_FREE


def known_kept_ratio(method: str) -> float | None:
    """The kept ratio r of ``method``'s DSR model when it is known before the release: 1
    for the ``NEGOTIATION_FREE`` methods (clip releases min(d, θ) of the device's own list,
    exactly its model), None for the negotiated ones (the projection keeps an unknown share
    of each degree; the post-processing estimates it)."""
    return None if negotiates(method) else 1.0


METHOD_AUTO = "auto"
DEFAULT_METHODS = {"dp": "clip", "paper": "ll"}


def resolve_method(method: str, pipeline: str) -> str:
    """The method a run uses: ``method`` itself, or for ``"auto"`` (the scenario's and the
    CLI's default) the pipeline's default — ``"clip"`` under "dp" (no negotiation: the
    whole view is ε-node-LDP, and it passed a pre-registered accuracy comparison with
    ``"ll"``: docs/preregistration/V-clip-default.md), ``"ll"`` (LPEA-LOW, the paper's)
    under "paper"."""
    if method != METHOD_AUTO:
        return method
    if pipeline not in DEFAULT_METHODS:
        raise ParameterError(
            f"must be 'dp' or 'paper' to resolve method 'auto', got {pipeline!r}",
            field="pipeline", limit="'dp' or 'paper'", value=pipeline,
        )  # fmt: skip
    return DEFAULT_METHODS[pipeline]


def _listed(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def privacy_claim(
    budget: CadrBudget,
    method: str = "ll",
    *,
    deadline: float = 0.0,
    overrun: Mapping[str, float] | None = None,
    theta_searched: bool = True,
    degree_bound: tuple[int, str] | None = None,
    small_fleet: bool = False,
    device_noise: str | None = "seeded",
) -> dict:
    """The run's privacy claim, part by part (module docstring): ``parts`` (what is seen,
    by whom, mechanism, ε, charged in the ledger, ``covered``: "yes" when this
    implementation establishes the ε for that part alone, "caveat" or "no"),
    ``charged_total`` (the ledger's sum for ``method``: ``er`` has no NDOE/LPEA, ``ra`` no
    NDOE, ``clip`` none and DSR gets the rest: module docstring, "Method clip"),
    ``not_covered`` (the parts outside any ε) and one-sentence ``statement``.

    The relay phases' timing (``negotiated`` methods): ``deadline`` is the run's public
    per-phase deadline in seconds (``[cadr] peer_deadline_seconds``; 0 = none) and
    ``overrun`` the phases that ended after it, with the seconds. Covered only when a
    deadline was set and no phase overran it (``protocol.peer_relay``, "Deadline").
    ``degree_bound``: the run's ``resolve_degree_bound`` answer, stated as the first part
    (covered unless it is the graph's maximum degree). ``small_fleet``: θ was chosen by the
    public small-fleet rule (``plan_theta``; no θ search, ε_θ = 0). ``device_noise``: where
    the devices' noise came from ("seeded", "os"; None: not known here, a split run's
    collector side): the last row (``noise_part``) and the clip statement say it."""
    if not negotiates(method):
        return _clip_claim(budget, theta_searched, degree_bound, small_fleet, device_noise)
    negotiated = method in ("ll", "lh", "ra")
    parts = [] if degree_bound is None else [_degree_bound_part(*degree_bound)]
    parts.append(_theta_part(budget, theta_searched, small_fleet))
    if method in ("ll", "lh"):
        parts.append(_part("NDOE codes", PEER_SEEN_BY, "exponential", budget.ndoe))
    if negotiated:
        parts.append(_lpea_part(budget))
    parts.append(_dsr_part(budget, negotiated))
    parts.append(_post_part())
    if negotiated:
        parts.extend(_relay_parts())
        parts.append(_timing_part(deadline, dict(overrun or {})))
    return _claim(parts, device_noise, lambda charged, uncovered: _claim_statement(
        budget, method, charged, uncovered
    ))  # fmt: skip


def _post_part() -> dict:
    """The claim's row for the collector's post-processing (no budget)."""
    return _part(
        "post-processed release and histogram", "collector, public", "post-processing", 0.0,
        charged=False, note="reads only the θ-search sum and the DSR releases",
    )  # fmt: skip


SEED_PART = "device noise: each device's generator is seeded from the run's seed"
SEED_NOTE = (
    "default_rng([seed, device index]) (scenarios.cadr_run), for same-seed-same-values "
    "reproducibility; the seed is in the scenario and results.json, so whoever holds it "
    "(the collector's operator) can replay every Pólya share and DSR noise and remove "
    "them: every ε above holds only against an observer without the seed; a deployment "
    "must seed each device from its own entropy (os.urandom)"
)


OWN_ENTROPY_PART = "device noise: each device's generator is seeded from its own OS entropy"
OWN_ENTROPY_NOTE = (
    '[privacy] device_noise = "os" (devices.noise_entropy): numpy SeedSequence() from '
    "os.urandom, per device, kept in the device and never written to results, ledgers or "
    "traces; no one can replay the Pólya shares or the DSR noise (the data, the graph and "
    "the dropout choice stay seeded)"
)
UNKNOWN_NOISE_PART = "device noise: the fleet side's own choice, unknown to the collector"
UNKNOWN_NOISE_NOTE = (
    "a split run's collector cannot tell how the devices seeded their noise: with "
    '[privacy] device_noise = "seeded" whoever holds the run\'s seed can replay and remove '
    'it (every ε above then holds only against an observer without the seed); with "os" '
    "no one can (the merged results.json says which)"
)
# the clip statement's last words, by device noise (``_clip_statement``; a split run's merge
# swaps them, ``restate_device_noise``)
CLIP_NOISE_CAVEATS = {
    "seeded": " against an observer without the run's seed, which seeds the devices' noise)",
    "os": " each device's noise is drawn from its own OS entropy, which no one can replay)",
    None: " against an observer without the run's seed if the devices seeded their noise "
    "from it, the fleet side's choice)",
}


def noise_part(device_noise: str | None = "seeded") -> dict:
    """The row every claim carries last: where the devices' noise came from. "seeded":
    reproducible from the seed (covered only by trust in whoever holds it); "os": the
    device's own secret (covered); None: unknown here (trust)."""
    row = by_device_noise(
        device_noise,
        seeded=(SEED_PART, "whoever holds the scenario", "trust", SEED_NOTE),
        os=(OWN_ENTROPY_PART, "no one (never written)", "yes", OWN_ENTROPY_NOTE),
        unknown=(UNKNOWN_NOISE_PART, "whoever holds the scenario, if seeded", "trust",
                 UNKNOWN_NOISE_NOTE),
    )  # fmt: skip
    part, seen_by, covered, note = row
    return _part(part, seen_by, None, None, charged=False, covered=covered, note=note)


def _clip_noise_caveat(device_noise: str | None) -> str:
    """The clip statement's last words for ``device_noise`` (``CLIP_NOISE_CAVEATS``)."""
    caveats = CLIP_NOISE_CAVEATS
    return by_device_noise(
        device_noise, seeded=caveats["seeded"], os=caveats["os"], unknown=caveats[None]
    )


def claim_device_noise(claim: dict) -> str | None:
    """The noise source a claim's last row states ("seeded", "os" or None)."""
    part = claim["parts"][-1]["part"]
    return {OWN_ENTROPY_PART: "os", UNKNOWN_NOISE_PART: None}.get(part, "seeded")


def restate_device_noise(claim: dict, device_noise: str | None) -> dict:
    """``claim`` (``privacy_claim``'s, read back from a results.json) with its noise row
    and the clip statement's caveat for ``device_noise``: a split run's merge
    (``scenarios.cadr_sides``), whose collector side built the claim with None (it could
    not tell) and which holds the claim only, not the budget it was built from.
    ``privacy_claim`` itself builds the claim once for its ``device_noise``."""
    before, after = _clip_noise_caveat(claim_device_noise(claim)), _clip_noise_caveat(device_noise)
    statement = claim["statement"].replace(before, after)
    parts = [*claim["parts"][:-1], noise_part(device_noise)]
    return {**claim, "parts": parts, "statement": statement, "device_noise": device_noise}


def _claim(parts: list[dict], device_noise: str | None, statement) -> dict:
    """``privacy_claim``'s dict: the parts with the noise row last (``noise_part``), the
    ledger's total of the charged ones, the parts covered by no ε, ``statement(charged,
    not_covered)`` and ``device_noise``."""
    parts = [*parts, noise_part(device_noise)]
    charged = math.fsum(p["eps"] for p in parts if p["charged"])
    not_covered = [p["part"] for p in parts if p["covered"] == "no"]
    return {
        "parts": parts,
        "charged_total": charged,
        "not_covered": not_covered,
        "statement": statement(charged, not_covered),
        "device_noise": device_noise,
    }


CLIP_DSR_NOTE = (
    "ε_dsr for the device's own degree; no other device's value depends on this "
    "device's list (exact sampler on a 2^-20 grid)"
)


def _clip_claim(
    budget: CadrBudget,
    theta_searched: bool,
    degree_bound: tuple[int, str] | None,
    small_fleet: bool,
    device_noise: str | None,
) -> dict:
    """``privacy_claim`` of a method without negotiation ("clip"; module docstring,
    "Method clip"): the degree bound, θ, each device's DSR release of its OWN degree and
    the post-processing — no relay phase runs, so no NDOE, LPEA, relay or timing rows —
    and the statement that the whole view is ε-node-LDP."""
    parts = [] if degree_bound is None else [_degree_bound_part(*degree_bound)]
    parts.append(_theta_part(budget, theta_searched, small_fleet))
    dsr = _part(
        "DSR release: clip(d, 0, θ) + Laplace(θ/ε_dsr), d = the device's own list length",
        "collector, public", "laplace", budget.dsr, note=CLIP_DSR_NOTE,
    )  # fmt: skip
    parts.extend([dsr, _post_part()])
    return _claim(parts, device_noise, lambda charged, uncovered: _clip_statement(
        budget, charged, uncovered, device_noise
    ))  # fmt: skip


def _clip_statement(
    budget: CadrBudget, charged: float, not_covered: list[str], device_noise: str | None
) -> str:
    """The clip claim in one sentence: the whole view is ε-node-LDP, ending on where the
    devices' noise came from (``CLIP_NOISE_CAVEATS``), or, when a part is not covered —
    the paper's exact θ search, the graph's maximum as D — what stops it."""
    head = f"every device's ledger is charged {charged:.6g} of ε = {budget.eps:g}; "
    reason = (
        "each device's messages depend only on its own list (the θ search's one-hot answer "
        "and its DSR value), so by adaptive sequential composition"
    )
    if not not_covered:
        return (
            head + "the whole view IS ε-node-LDP: " + reason
            + f" the collector's view of a run is {charged:.6g}-node-LDP (no relay phase runs;"
            + _clip_noise_caveat(device_noise)
        )  # fmt: skip
    return (
        head
        + "each device's DSR value is ε_dsr-DP and depends on its own list only, but "
        + f"{len(not_covered)} part(s) are covered by no ε: {'; '.join(not_covered)}; so "
        + "node-LDP of the whole view is NOT established for this run"
    )


def _part(
    part: str,
    seen_by: str,
    mechanism: str | None,
    eps: float | None,
    *,
    charged: bool = True,
    covered: str = "yes",
    note: str = "",
) -> dict:
    """One row of the claim (``privacy_claim``'s ``parts``)."""
    return {
        "part": part,
        "seen_by": seen_by,
        "mechanism": mechanism,
        "eps": eps,
        "charged": charged,
        "covered": covered,
        "note": note,
    }


def _theta_part(budget: CadrBudget, theta_searched: bool, small_fleet: bool = False) -> dict:
    """The θ row: chosen by the small-fleet rule or given in the configuration (no search),
    the dp search's one noisy secure sum, or the paper's exact secure sums (covered by no
    ε)."""
    if small_fleet:
        return _part(
            SMALL_FLEET_THETA_CLAIM, "collector", None, 0.0, charged=False,
            note="θ = ⌈√D⌉ from the public n, ε, α and D: the θ search's bucket counts "
            "would carry less than one fleet of signal, so none is opened and its budget "
            "stays with NDOE, LPEA and DSR (protocol.cadr_budget, \"Tiny fleets\")",
        )  # fmt: skip
    if not theta_searched:
        return _part(
            "θ: given in the configuration, no θ search", "collector", None, 0.0,
            charged=False, note="a public constant; the collector opens no secure sum for θ",
        )  # fmt: skip
    if budget.theta > 0:
        return _part(
            "θ search: one secure sum of one-hot bucket counts + Pólya shares", "collector",
            THETA_LABEL, budget.theta,
            note="exact two-sided geometric of ratio <= exp(-ε/2) (protocol.samplers); "
            "the noise of the honest devices, >= noise_parties survivors",
        )  # fmt: skip
    return _part(
        "θ search: exact secure sums (counts above each probed θ)", "collector", None, None,
        charged=False, covered="no",
        note="pipeline 'paper': exact aggregates, not DP (the paper's choice)",
    )  # fmt: skip


def _lpea_part(budget: CadrBudget) -> dict:
    """LPEA's row: charged once per node, with the caveat the audit measured."""
    return _part(
        "LPEA: RR answers and establish/refuse decisions", PEER_SEEN_BY, "warner_rr",
        budget.lpea, covered="caveat",
        note="RR charged once per node though a node answers every request; a node "
        "at θ refuses an establish exactly (the hard cap), so kept degrees depend on "
        "neighbours' lists (audited: the released sequence is 2(1-α)ε-node-LDP on a "
        "star, not ε; docs/audit-graph.md)",
    )  # fmt: skip


def _dsr_part(budget: CadrBudget, negotiated: bool) -> dict:
    """The DSR release's row: ε_dsr for the device's own kept degree."""
    note = (
        "ε_dsr for the device's own kept degree (exact sampler on a 2^-20 grid); "
        "the kept degree itself depends on the negotiation (LPEA caveat)"
        if negotiated
        else "ER's deletion is not randomised: the kept degree depends on neighbours"
    )
    return _part(
        "DSR release: clip(kept, 0, θ) + Laplace(θ/ε_dsr)", "collector, public", "laplace",
        budget.dsr, covered="caveat" if negotiated else "yes", note=note,
    )  # fmt: skip


def _relay_parts() -> list[dict]:
    """The relay's rows (negotiated methods): its phase report, data-independent, and the
    peer graph, which the collector's side can read (``PEER_GRAPH_NOTE``)."""
    report = _part(
        "relay phase report: the phase, ok, the public round count (no count of the "
        "negotiation)", "collector", None, 0.0, charged=False,
        note="data-independent: the LPEA phase is padded to a public number of "
        "rounds (protocol.lpea.padded_rounds), so the report is the same message "
        "whatever the lists; the relay keeps its rounds, supersteps, items and edges "
        "added per round (protocol.peer_relay, Padding), and its round broadcasts "
        "are closed to the collector's login (broker.auth.DENIED)",
    )  # fmt: skip
    peers = _part(PEER_GRAPH_PART, PEER_SEEN_BY, None, None, charged=False, covered="no",
                  note=PEER_GRAPH_NOTE)  # fmt: skip
    return [report, peers]


# Who sees the relay's traffic (privacy review V2, 2026-12-07): each device sends its
# negotiation items in the clear on its own ``ldp/{run}/dev/{me}/up/peer_batch``, each item
# naming the neighbour it is for. The collector side runs the relay and the trace recorder
# (``scenarios.cadr_run.collect_cadr``, every layout), and the collector's login may
# subscribe ``ldp/{run}/dev/+/up/#`` (``broker.auth``; only the relay's round broadcasts
# ``ctl/peer_step`` are denied to it), so the collector's operator can read every edge of
# the graph (171 of 171 read back from a paper-pipeline run's trace) with the NDOE codes and
# LPEA items: the codes and answers keep their ε, the graph itself is covered by none.
PEER_SEEN_BY = "neighbours, through the relay, the trace recorder and the collector's login"
PEER_GRAPH_PART = (
    "peer graph: who talks to whom (each peer_batch item names its neighbour, in the clear)"
)
PEER_GRAPH_NOTE = (
    "the collector side runs the relay and the trace recorder (scenarios.cadr_run."
    "collect_cadr), and the collector's login may subscribe ldp/{run}/dev/+/up/#, which "
    "carries every device's up/peer_batch (broker.auth denies it only ctl/peer_step): "
    "the collector's operator can read the whole edge list, covered by no ε, and time "
    "every round (so a held peer deadline hides the rounds' pace from the relay's "
    "broadcasts only); the LDP "
    "model assumes private peer channels, which would need a relay run by another party "
    "and up/peer_batch denied to the collector's login (or items encrypted per neighbour)"
)


def _claim_statement(
    budget: CadrBudget, method: str, charged: float, not_covered: list[str]
) -> str:
    """The claim in one sentence: what the ledger charges, which parts are ε-DP, and
    (negotiated methods) that node-LDP of the whole view is not established."""
    uncovered = "; ".join(not_covered) or "none"
    if method not in ("ll", "lh", "ra"):
        return f"every device's ledger is charged {charged:.6g}; uncovered: {uncovered}"
    dp_parts = (["the θ search"] if budget.theta > 0 else []) + (
        ["the NDOE codes"] if method in ("ll", "lh") else []
    )  # ra runs no NDOE: its claim must not name one
    dp_parts.append("each device's own DSR value")
    verb = " are ε-DP parts of it; NOT " if len(dp_parts) > 1 else " is an ε-DP part of it; NOT "
    return (
        f"every device's ledger is charged {charged:.6g} of ε = {budget.eps:g}; "
        + _listed(dp_parts)
        + verb
        + "established: node-LDP of the whole view (LPEA caveat: proven n(1-α)ε over n "
        + "devices by group privacy, 2(1-α)ε on a star; beyond the star one node's list "
        + "moves other nodes' kept degrees, docs/audit-graph.md) "
        f"and {len(not_covered)} uncovered part(s): {uncovered}"
    )


def _degree_bound_part(bound: int, source: str) -> dict:
    """The claim's row for the public degree bound D (``resolve_degree_bound``)."""
    notes = {
        "devices": "n - 1, the bound of every simple graph on the public n devices",
        "configured": "given in the configuration (public if chosen without the data)",
        "graph-max": "the graph's maximum degree (the paper's reading): one node's exact "
        "degree, read from the data and published in the plan; covered by no ε "
        '(set [cadr] degree_bound = "devices" or an integer)',
    }
    return {
        "part": f"degree bound D = {bound} ({source})",
        "seen_by": "everyone (the plan)",
        "mechanism": None,
        "eps": None if source == "graph-max" else 0.0,
        "charged": False,
        "covered": "no" if source == "graph-max" else "yes",
        "note": notes[source],
    }


TIMING_PART = "stage timing: the relay phases' (NDOE, LPEA) wall-clock durations"


def _timing_part(deadline: float, overrun: dict[str, float]) -> dict:
    """The claim's timing row: open without a deadline, covered when every relay phase
    held it, not covered (this run) when one overran it."""
    part = {"part": TIMING_PART, "seen_by": "collector", "mechanism": None, "eps": None,
            "charged": False}  # fmt: skip
    if not deadline > 0:
        return {
            **part,
            "covered": "no",
            "note": "a timing channel, narrowed: the number of rounds is public (padding) "
            "but a real round (many supersteps, many items) takes longer than a padding "
            "round, and NDOE's length grows with the codes, so the durations depend on the "
            "lists; not covered by any ε. [cadr] peer_deadline_seconds (off) closes it: "
            "every phase then lasts at least that long",
        }
    if overrun:
        late = ", ".join(f"{phase} by {seconds:g} s" for phase, seconds in sorted(overrun.items()))
        return {
            **part,
            "covered": "no",
            "deadline_seconds": deadline,
            "overran_seconds": overrun,
            "note": f"overran the public deadline of {deadline:g} s ({late}): that phase "
            "ended when its work did, so its duration depends on the lists; raise "
            "[cadr] peer_deadline_seconds above the slowest phase",
        }
    return {
        **part,
        "covered": "yes",
        "deadline_seconds": deadline,
        "overran_seconds": {},
        "note": f"held to the public deadline {deadline:g} s: the relay ended every phase "
        "(its report, and the finished broadcast on which devices release) at start + "
        f"{deadline:g} s; the collector sees only that the phase ended by the deadline "
        "(its round broadcasts are closed to the collector: broker.auth.DENIED)",
    }


def small_fleet_theta(eps: float, alpha: float, devices: int, degree_bound: int) -> int | None:
    """The dp pipeline's θ for a fleet its θ search could not place, else None (module
    docstring, "Tiny fleets"): ``⌈√D⌉`` when ``n < √K σ`` — ``σ`` the standard deviation
    of one bucket count's two-sided geometric noise at the search's ε_θ (``sqrt(2 (n/m) a)
    / (1 - a)``, ``a = exp(-ε_θ / 2)``, ``m = noise_parties(n)``), ``K`` its buckets. Pure
    and public: eps, alpha, the number of devices n and the degree bound D.

    Below ε = 0.5 it fires on larger fleets (n ≤ 142 at ε = 0.1, 1,428 at 0.01, 2,858 at
    0.005). Measured there (docs/cadr.md, "Small ε: the small-fleet rule on larger
    fleets"; 185 fresh cells, n 30-2,000): it beats the θ search it replaces (summed MAE
    660 against 7,421, at or below it in 120 of 131 cells), but the release is no better
    than knowing nothing — above the constant true median in 184 cells, above all zeros
    in 66 — because ``ε_dsr √n < √2`` there: no θ lets the DSR values' mean place the
    fleet, and the release is close to a data-free guess in ``[0, θ]``."""
    e = check_run_eps(eps)
    n = integer_at_least(devices, "devices", 1)
    bound = integer_at_least(degree_bound, "degree_bound", 1)
    eps_theta = CadrBudget(e, alpha, THETA_FRACTION, theta_extra(e, alpha, n)).theta
    buckets = len(bucket_grid(bound, bucket_count(n, eps_theta))) + 1
    sd = noise_sd(eps_theta, n, noise_parties(n))
    if n >= small_fleet_ratio(e) * math.sqrt(buckets) * sd:
        return None
    return max(1, math.ceil(math.sqrt(bound)))


def small_fleet_ratio(eps: float) -> float:
    """The count-signal ratio ``n / (√K σ)`` below which ``small_fleet_theta`` fires: 1, or
    ``SMALL_FLEET_SMALL_EPS_RATIO`` at ``ε <= SMALL_EPS_LOW`` when it is set (module
    docstring, "Tiny fleets"). Public: ε only."""
    wide = SMALL_FLEET_SMALL_EPS_RATIO
    if wide is not None and eps <= SMALL_EPS_LOW:
        return max(1.0, wide)
    return 1.0


@dataclass(frozen=True)
class ThetaPlan:
    """A run's θ decision (``plan_theta``): ``rule`` the θ it runs with (an integer) or the
    search it runs (``"auto-dev"``, ``"auto-sum"``), ``chosen_by`` one of
    ``THETA_RULE_SOURCES``."""

    rule: int | str
    chosen_by: str

    @property
    def searched(self) -> bool:
        """Whether the run searches θ (``CadrBudget.for_pipeline``'s ``searched``)."""
        return isinstance(self.rule, str)

    @property
    def small_fleet(self) -> bool:
        """Whether the small-fleet rule chose θ (no θ search where one was configured)."""
        return self.chosen_by == "small-fleet"


def plan_theta(
    theta_rule: int | str, pipeline: str, eps: float, alpha: float, devices: int,
    degree_bound: int,
) -> ThetaPlan:  # fmt: skip
    """The θ a run uses and who chose it: a configured integer θ as it is; under
    ``pipeline = "dp"`` a configured ``"auto-dev"`` becomes ``small_fleet_theta``'s θ where
    the rule fires (no θ search); otherwise the configured search. The in-process
    reference and the fleet's plan both ask here, so they search θ (or not) alike."""
    if not isinstance(theta_rule, str):
        return ThetaPlan(theta_rule, "configured")
    if pipeline == "dp" and theta_rule == "auto-dev":
        theta = small_fleet_theta(eps, alpha, devices, degree_bound)
        if theta is not None:
            return ThetaPlan(theta, "small-fleet")
    return ThetaPlan(theta_rule, "search")
