"""Tuning constants of cycle recovery (``collector/period.py``, whose docstring gives the
theory and calibration of each). Read them as ``period.NAME``: setting ``period.NAME`` (a test's
``monkeypatch.setattr``) sets it in every ``period_*`` module that reads it (``period``'s
module class forwards the assignment)."""

from __future__ import annotations

DEFAULT_MIN_CYCLES = 3  # default max_period = n // min_cycles: every period with >= 3 whole cycles
DEFAULT_ALPHA = 0.01  # false-claim rate on aperiodic streams (family-wise, all tests)
HARMONIC_LEVELS = (1, 2, 4, 8, 16, 32)  # H of the partial harmonic sums (plus "all")
PAD = 4  # oversampling of the screening spectrum
CANDIDATES = 4  # screening winners refined exactly (at least top_peaks)
MAX_SPAN = 24  # largest refinement half-width, in samples
MAX_MULTIPLE = 6  # multiples m T tested for a line on a harmonic
# step 2b (issue 19, helper E, round 3): the near divisors round(P / m), m = 2 .. this, of a
# refined winner P that passes step 4's gate are settled and tested exactly too (0: off)
DIVISOR_CANDIDATES = MAX_MULTIPLE
# ... only a divisor P / m whose fundamental, harmonic m of P, holds at least this many times
# the power of P's first harmonic (v2: v1 tried every m and cost 22 % of the CPU at 10,000)
DIVISOR_SHARE = 2.0
MIN_EXTRA_SHARE = 1e-3  # ... and carry >= 0.1% of the power of the multiple's harmonics
ALPHA_SHAPE = 1e-3  # level of the multiple / divisor tests (extra harmonics)
ALPHA_CORROBORATE = 0.1  # step 3c: a multiple's extra harmonics, whitened, at least this level
# step 3c (helper G, docs/preregistration/G-named-masked-margin.md, PASSED on fresh seeds): where
# step 3's multiple was vetoed, a named period whose masked check at ITS OWN cycles passes by this
# margin (log p - few-cycles penalty - threshold <= -7) is claimed although the vetoed multiple
# fails step 3b (raw daily readings pass by 9-29, red-noise claims on this path by < 6; None: off)
VETO_NAMED_MARGIN: float | None = 7.0
SETTLE_FACTOR = 4  # the integer refinement compares folds on 4x the resolving harmonics
PENALTY_CYCLES = 12.0  # periods with fewer cycles than this need a smaller p-value ...
PENALTY_SLOPE = 6.0  # ... alpha * (cycles / 12) ** 6 (calibrated: module docstring)
SHORT_STREAM = 96  # streams of fewer samples than this use SHORT_PENALTY_SLOPE instead ...
SHORT_PENALTY_SLOPE = 3.0  # ... alpha * (cycles / 12) ** 3 (calibrated: step 4, "Short streams")
EDGE_MARGIN = 3.0  # step 10 (a): a period past the range must beat the claim's exact log p by this
EDGE_BEYOND = 0.06  # step 10 (a): ... and lie past max_period by more than this fraction of it
EDGE_MULTIPLES = False  # step 10 (b) off: it withdrew a true period of an amplitude-modulated cycle
SHORT_ANOVA_ALPHA = 0.002  # step 9: a short stream's best phase ANOVA, Bonferroni, at this level
SHORT_CYCLES_STREAM = 128  # step 9b: streams of SHORT_STREAM to this many samples (excl.) ...
SHORT_CYCLES_WINDOW = (4, 5)  # ... claim a refused candidate with this many whole cycles ...
SHORT_CYCLES_ALPHA = 5e-4  # ... if also the best phase ANOVA, Bonferroni, at this level ...
SHORT_CYCLES_MARGIN = 1.0  # ... and its log p-value beats both neighbours' T +- 1 by this much
LAZY_TOP = 128  # screening: F tails evaluated per level column before the bound (_screen_lazy)
LAZY_TINY = -500.0  # ... above this log p-value fdtrc is monotone (measured: _column_bound)
FULL_TAIL_FLOOR = 0.3  # ... an F ratio <= 1 has a tail above this (_full_column)
FULL_LEAD_MARGIN = 10.0  # ... nor one whose leading term is this far above the cut (log)
SEGMENT_CYCLES = 4  # step 7: cycles of L per segment of the Bartlett gate (segment_logp)
LOCAL_MULTIPLES = 8  # step 7b: lags within 1 of T / m, m = 2 .. 8, tested with a per-lag margin
LOCAL_TAIL = 3e-5  # ... false-rename tail of step 7b under a true period T (Bonferroni over them)
LOCAL_CLAIM_FACTOR = 2.0  # step 8: the segment-wise gate at alpha / 2 (calibrated: docstring)
LOCAL_CLAIM_MANY = 10.0  # ... and at alpha / 20 for a lag with >= PENALTY_CYCLES cycles
COMB_VECTOR = 1 << 20  # _comb_sums: index arrays up to this many terms, loops beyond
COMB_CACHE = 1 << 15  # ... cached (_comb_index, 2 lengths) for streams of up to this many samples
WITHIN_CACHE = 1 << 15  # _detrend_at: the within-phase trend cached (n, T) for streams up to this
MASKED_CACHE = 1 << 15  # masked_logp: the masked shapes cached (n, T) for streams up to this
SCREEN_CACHE_PERIODS = 8192  # _screen: harmonic bins cached for up to this many periods
WHITTLE_BLOCK = 4096  # columns per block of the long Whittle fits (_whittle_sums_blocked)
RANK_HEAD = 64  # _ranked: screening scores sorted in full only past this many
BLAS_SERIAL = 10_000  # _dot: OpenBLAS dot products of more elements run on its threads
MASKED_MIN_BINS = 8  # masked_logp: fewer bins than this fit no background (check skipped)
FAST_FOLD_HARMONICS = 32  # settle: a partial DFT for folds read on at most this many harmonics
FAST_FOLD_MIN_PERIOD = 1500  # ... of periods at least this long and not 5-smooth
FAST_FOLD_DIRECT = 4  # ... or at most this many harmonics (twiddles by exponentials) ...
FAST_FOLD_MIN_DIRECT = 600  # ... of periods at least this long and not 5-smooth
FAST_FOLD_WIDE = 4  # ... or at most this x FAST_FOLD_HARMONICS harmonics (_partial_pays) ...
FAST_FOLD_MIN_WIDE = 1500  # ... of periods at least this long ...
FAST_FOLD_PRIME = 200  # ... whose largest prime factor exceeds this
FAST_FOLD_TOLERANCE = 1e-9  # error bound: this x 2 L (sum |y|)^2 / T (_fold_energy_bounded)
FLOOR_MIN_HARMONICS = 64  # refine: a later candidate whose settle reads >= this many harmonics ...
FLOOR_MIN_SPAN = 9  # ... of >= this many periods, each >= FAST_FOLD_MIN_DIRECT samples, ...
FLOOR_GATE = 8.0  # ... and whose centre's exact log p is >= this above the best is first bounded
FLOOR_SLACK = 2.0  # ... (_span_floor: log p minus this covers _log_sf's jitter and its switch)
FAST_FOLD_BATCH = 1 << 15  # settle: batched partial DFTs, <= this many twiddles a call (512 KB)
BY_ROW_COLUMNS = 64  # _by_row: columns of a Fortran-ordered array per row of its flat view
SCRATCH_FLOATS = 1 << 18  # _scratch: Whittle temporaries up to this many floats reuse kept buffers
# step 11 (helpers K and K2, docs/preregistration/K2-quiet-permutation.md): a claim on a QUIET
# stream (quiet_ratio below QUIET_WIDTH) of at most PERMUTATION_STREAM samples is kept only if
# its fold statistic beats B random orders of its reports (permutation p <= PERMUTATION_ALPHA;
# exact on exchangeable, i.e. level-plus-noise, nulls)
PERMUTATION_STREAM = 300
PERMUTATION_DRAWS = 999  # B: p = (1 + #{draws >= observed}) / 1000, so <= 4 draws may reach it
PERMUTATION_ALPHA = 0.005
PERMUTATION_BATCH = 200  # draws per batch; the count stops once the gate cannot pass (curtailed)
QUIET_SHARE = 0.5  # quiet_ratio: the narrowest window holding this share of the reports ...
QUIET_WIDTH = 0.125  # ... is at most this fraction of their range (max - min)
# step 12 (helper L, docs/preregistration/L-level-shift.md): changepoints of the step model
# whose residual a claim must survive where that model explains at least the fold's variance
SHIFT_CHANGES = 2
TRIM = 25.0  # bins with P / S > TRIM are lines, refitted without (P(Exp > 25) = 1.4e-11)


MEMORY_GRID = (0.1, 0.2, 0.3, 0.4, 0.5)  # long-memory shapes d of both background fits
PHI_GRID = (0.0, 0.3, 0.6, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.998, 0.999, 0.9995, 0.9999, 1.0)
