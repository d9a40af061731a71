"""The search machine of one ``detect_period`` call (``_Search``, steps 1-10 of
``collector/period.py``'s docstring) and the local-period helpers of steps 7-7b."""

from __future__ import annotations

import math

import numpy as np
from ldpfleet.collector.period_constants import (
    CANDIDATES,
    DEFAULT_MIN_CYCLES,
    DIVISOR_CANDIDATES,
    DIVISOR_SHARE,
    EDGE_BEYOND,
    EDGE_MARGIN,
    EDGE_MULTIPLES,
    FAST_FOLD_HARMONICS,
    FAST_FOLD_MIN_DIRECT,
    FAST_FOLD_TOLERANCE,
    FLOOR_GATE,
    FLOOR_MIN_HARMONICS,
    FLOOR_MIN_SPAN,
    HARMONIC_LEVELS,
    LOCAL_CLAIM_FACTOR,
    LOCAL_CLAIM_MANY,
    LOCAL_MULTIPLES,
    LOCAL_TAIL,
    MAX_MULTIPLE,
    MAX_SPAN,
    PENALTY_CYCLES,
    RANK_HEAD,
    SETTLE_FACTOR,
    SHORT_ANOVA_ALPHA,
    SHORT_CYCLES_ALPHA,
    SHORT_CYCLES_MARGIN,
    SHORT_CYCLES_STREAM,
    SHORT_CYCLES_WINDOW,
    SHORT_STREAM,
    VETO_NAMED_MARGIN,
)
from ldpfleet.collector.period_refine import (
    _batch_pays,
    _fold_energies_bounded,
    _fold_energy,
    _fold_energy_bounded,
    _fundamental,
    _limit,
    _longer_multiple,
    _prime_factors,
    _resolving_level,
    _span_floor,
)
from ldpfleet.collector.period_result import (
    PeriodEstimate,
)
from ldpfleet.collector.period_screen import (
    _screen,
    _screen_lazy,
    _screen_logp,
)
from ldpfleet.collector.period_stats import (
    _explained_by,
    _harmonic_power,
    _level_logp,
    anova_logp,
    few_cycles_penalty,
    masked_logp,
    neighbour_logp,
    segment_logp,
)
from ldpfleet.collector.period_whiten import (
    _detrend_at,
    _dot,
    _whiten,
    _within_scale,
)
from scipy import special


class _Search:
    """One ``detect_period`` call after validation: the whitened stream, the screening
    statistics and the memoised folds that the steps share (module docstring, steps 1-7).

    ``screen`` ranks and refines the candidates (steps 1-2); ``decide`` applies the claim
    gates (steps 4-6) and renames a claim (step 3's fundamental, step 7's local period)."""

    def __init__(
        self, arr: np.ndarray, xd: np.ndarray, min_period: int, max_period: int, alpha: float
    ) -> None:
        n = arr.size
        self.arr, self.xd, self.n = arr, xd, n
        self.min_period, self.max_period, self.alpha = min_period, max_period, alpha
        self.parts: dict = {}  # _whiten's periodogram of the centred stream, for masked_logp
        self.xw, self.level = _whiten(xd, self.parts)
        self.dfd = max(1.0, (n // 2) / 3.0 - 3.0)  # the fit: ~n/6 independent bins, 3 fitted
        self.periods = np.arange(min_period, max_period + 1)
        self.stats, self.autocorr = _screen(self.xw, self.periods)
        self.tests = int(self.stats[3].sum() + self.periods.size)
        self.threshold = float(np.log(alpha) - np.log(self.tests))
        self.t = np.arange(n)
        self.flat: dict[int, np.ndarray] = {}
        self.cache: dict[int, np.ndarray] = {}
        self.energies: dict[tuple[int, int, int], float] = {}
        self.bounds: dict[tuple[int, int, int], tuple[float, float]] = {}
        self.gaps: dict[tuple[int, int], float] = {}
        self.norms: dict[int, float] = {}
        self.wholes: dict[tuple[int, int, int], np.ndarray] = {}  # whole(): memoised powers
        self.floors: dict[int, float] = {}  # beaten(): _span_floor's bound of each period
        self.vetoed: int | None = None  # step 3c: a multiple significant detrended only

    # -- memoised folds --------------------------------------------------------------------

    def xs_at(self, period: int) -> np.ndarray:
        """The refinement input for ``period``: the stream detrended jointly with its fold
        at ``period`` (``_detrend_at``), centred and flat-normalised."""
        if period not in self.flat:
            xj = _detrend_at(self.arr, period)
            self.flat[period] = (xj - xj.mean()) / np.sqrt(self.level)
        return self.flat[period]

    def power(self, period: int) -> np.ndarray:
        """Exact harmonic powers of the whitened stream at ``period`` (memoised)."""
        if period not in self.cache:
            self.cache[period] = _harmonic_power(self.xw, self.t, period)
        return self.cache[period]

    def whole(self, period: int, base: int, cycles: int | None = None) -> np.ndarray:
        """Harmonic powers over whole cycles only: a (T / m)-periodic signal leaks nothing
        into the harmonics of T that are not multiples of m. Of the stream detrended jointly
        with the fold at ``base`` (the null of the multiple test: periodic at ``base``)."""
        cycles = self.n // period if cycles is None else cycles
        key = (period, base, cycles)
        if key not in self.wholes:  # step 3 reads the chosen multiple twice (issue 19, helper F)
            self.wholes[key] = _harmonic_power(
                self.xs_at(base)[: cycles * period], self.t[: cycles * period], period
            )
        return self.wholes[key]

    def whitened_whole(self, period: int) -> np.ndarray:
        """Harmonic powers of the WHITENED stream over whole cycles of ``period`` (step 3's
        second reading of a multiple's added harmonics: against the fitted background)."""
        size = (self.n // period) * period
        return _harmonic_power(self.xw[:size], self.t[:size], period)

    def exact_logp(self, q: int) -> tuple[float, int]:
        """Step 2's exact test of ``q``: harmonic sums over the within-phase mean square,
        F(2 H, n - q); the smallest log p-value over the levels and its level."""
        n = self.n
        return _level_logp(self.power(q) / _within_scale(self.xw, self.t, q), (n - q) / 2.0)

    # -- refinement (step 2) -----------------------------------------------------------------

    def span(self, center: int, harmonics: int) -> int:
        """Refinement half-width ``T^2 / (n H)``, between 2 and ``MAX_SPAN`` samples."""
        return min(MAX_SPAN, max(2, math.ceil(center * center / (self.n * max(harmonics, 1)))))

    def settle(self, center: int, harmonics: int, upper: int | None = None) -> int:
        """The integer near ``center`` whose fold of the whole stream captures the most
        energy in its first ``SETTLE_FACTOR * harmonics`` harmonics. Every neighbour folds
        the same input: the stream detrended jointly with the fold at ``center``
        (``_detrend_at``; the plain quadratic moved a noise-free sine of period 365 in 4
        cycles to 366, and a trend fitted per neighbour favours the shorter ones).

        Speed (issue 19, helper K): each neighbour's energy is first read by
        ``_fold_energy_bounded`` (a partial DFT on long awkward lengths, with an error
        bound); only the neighbours whose interval reaches the best one's get the exact
        ``_fold_energy``. The others' exact energies are provably below the winner's, so
        the winner (the first maximum of the exact energies) is the same.

        Speed (issue 19, helper A): a neighbour already folded for an earlier centre ``c``
        (the winner is settled again at its own centre, the walk at the next) first gets
        the interval ``borrowed_energy`` derives from that fold (``sqrt`` of the energy
        moves by at most the distance of the two inputs); only the contenders among such
        neighbours are folded again, then the exact energies decide as above.

        ``upper``: the largest period compared (``max_period`` if None; the range-edge check
        of step 10 passes a larger one)."""
        span = self.span(center, harmonics)
        upper = self.max_period if upper is None else upper
        span_q = range(max(self.min_period, center - span), min(upper, center + span) + 1)
        borrowed = [self.borrowed_energy(center, q, harmonics) for q in span_q]
        missing = [q for q, b in zip(span_q, borrowed, strict=True) if b is None]
        self.bound_span(center, missing, harmonics)
        bounded = [
            b if b is not None else self.bounded_energy(center, q, harmonics)
            for q, b in zip(span_q, borrowed, strict=True)
        ]
        contenders = _contenders(bounded)
        if len(contenders) > 1 and any(borrowed[i] is not None for i in contenders):
            self.bound_span(center, [span_q[i] for i in contenders], harmonics)
            for i in contenders:
                bounded[i] = self.bounded_energy(center, span_q[i], harmonics)
            contenders = _contenders(bounded)
        if len(contenders) == 1:
            return span_q[contenders[0]]
        exact = [self.exact_energy(center, span_q[i], harmonics) for i in contenders]
        return span_q[contenders[int(np.argmax(exact))]]

    def borrowed_energy(self, center: int, q: int, harmonics: int) -> tuple[float, float] | None:
        """``(value, tol)`` holding the exact energy of the fold at ``q`` of the input of
        ``settle(center)``, derived without folding from an earlier centre ``c`` whose fold
        at ``q`` is known (the nearest input), or None (none known; or this centre's own
        value is). Why it holds: the energy is ``E(x) = 2 / q sum_{j <= L} |Y_j|^2`` of the
        fold ``y_p = S_p / sqrt(count_p)``, and ``sqrt(E)`` is a seminorm of the input
        ``x``, so ``|sqrt(E(a)) - sqrt(E(b))| <= sqrt(E(a - b))``; by Parseval (``L <= (q -
        1) / 2``) ``E(d) <= sum_p y_p^2`` and by Cauchy-Schwarz ``y_p^2 <= sum`` of the
        squares of phase ``p``'s samples, so ``sqrt(E(a - b)) <= ||a - b||``. The rounding
        of both computed energies (``_fold_energy_bounded``'s budget, ``(sum |y|)^2 / q
        <= ||x||^2``) is added twice over."""
        key = (center, q, harmonics)
        if key in self.bounds or key in self.energies:
            return None
        known = [c for c in self.flat if c != center and (c, q, harmonics) in self.bounds]
        if not known:
            return None
        c = min(known, key=lambda other: self.distance(center, other))
        value, tol = self.bounds[(c, q, harmonics)]
        gap = self.distance(center, c)
        low = max(0.0, math.sqrt(max(value - tol, 0.0)) - gap) ** 2
        high = (math.sqrt(value + tol) + gap) ** 2
        limit = _limit(SETTLE_FACTOR * harmonics, q)
        scale = max(self.square_norm(center), self.square_norm(c))
        slack = 2.0 * FAST_FOLD_TOLERANCE * 2.0 * limit * scale
        return 0.5 * (low + high), (0.5 * (high - low) + slack) * (1.0 + 1e-12)

    def distance(self, a: int, b: int) -> float:
        """``||xs_at(a) - xs_at(b)||`` rounded up (memoised)."""
        key = (min(a, b), max(a, b))
        if key not in self.gaps:
            diff = self.xs_at(a) - self.xs_at(b)
            self.gaps[key] = math.sqrt(_dot(diff, diff)) * (1.0 + 1e-9)
        return self.gaps[key]

    def square_norm(self, center: int) -> float:
        """``||xs_at(center)||^2`` (memoised)."""
        if center not in self.norms:
            xs = self.xs_at(center)
            self.norms[center] = _dot(xs, xs)
        return self.norms[center]

    def bound_span(self, center: int, qs: list[int], harmonics: int) -> None:
        """``bounded_energy`` of the folds at ``qs`` of the input of ``settle(center)``, the
        ones ``_fold_energy_bounded`` reads by the partial DFT batched (``_fold_energies_bounded``,
        issue 19, helper E: one DFT call per batch of neighbours instead of one per neighbour;
        the same interval semantics); the others are left to ``bounded_energy``."""
        count = SETTLE_FACTOR * harmonics
        todo = [
            q
            for q in qs
            if (center, q, harmonics) not in self.bounds
            and (center, q, harmonics) not in self.energies
            and _batch_pays(q, _limit(count, q))
        ]
        if len(todo) < 2:
            return
        bounds = _fold_energies_bounded(self.xs_at(center), todo, count)
        for q, bound in zip(todo, bounds, strict=True):
            self.bounds[(center, q, harmonics)] = bound
            if bound[1] == 0.0:  # a fold of zeros: its value is exact
                self.energies[(center, q, harmonics)] = bound[0]

    def bounded_energy(self, center: int, q: int, harmonics: int) -> tuple[float, float]:
        """``_fold_energy_bounded`` of the fold at ``q`` of the input of ``settle(center)``
        (memoised: neighbourhoods overlap, and the winner is settled twice)."""
        key = (center, q, harmonics)
        if key not in self.bounds:
            if key in self.energies:
                self.bounds[key] = (self.energies[key], 0.0)
            else:
                value, tol = _fold_energy_bounded(self.xs_at(center), q, SETTLE_FACTOR * harmonics)
                self.bounds[key] = (value, tol)
                if tol == 0.0:  # the exact route was taken
                    self.energies[key] = value
        return self.bounds[key]

    def exact_energy(self, center: int, q: int, harmonics: int) -> float:
        """``_fold_energy`` of the fold at ``q`` of the input of ``settle(center)``
        (memoised)."""
        key = (center, q, harmonics)
        if key not in self.energies:
            self.energies[key] = _fold_energy(
                self.xs_at(center), self.t, q, SETTLE_FACTOR * harmonics
            )
        return self.energies[key]

    def walk(self, period: int, harmonics: int) -> int:
        """Step 4b: settle repeatedly while the winner moves to a strictly higher fold energy
        (a hill climb on the same statistic). ``settle`` looks at most ``MAX_SPAN`` samples
        either way, but the spread of a smooth cycle seen over few cycles is
        ``T^2 / (n h)``: a noise-free sine of period 1,000 in 3,000 samples screened at 906
        and settled twice stopped at 954. Runs only on a CLAIMED period (it renames a claim,
        never creates or drops one). Each settle detrends at its own centre, so a period
        already visited stops the climb (no cycling between two neighbours)."""
        visited = {period}
        energy = self.exact_energy
        for _ in range(self.max_period - self.min_period + 1):
            q = self.settle(period, harmonics)
            if q in visited or energy(period, q, harmonics) <= energy(period, period, harmonics):
                return period
            visited.add(q)
            period = q
        return period

    def screen(self, top_peaks: int) -> tuple[float, int, int]:
        """Steps 1-2: the lazy screening's ranking refined (every period's screening values
        when the ranking reached a period the lazy screening left out). Returns
        ``(log p, period, harmonics)`` of the best refined candidate."""
        logp, exact = _screen_lazy(self.stats, self.dfd)
        best = self.refine(logp, exact, top_peaks)
        if best is None:  # every period's screening values after all
            best = self.refine(_screen_logp(self.stats, self.dfd), None, top_peaks)
        return self.divisors(best)

    def divisors(self, best: tuple[float, int, int]) -> tuple[float, int, int]:
        """Step 2b (issue 19, helper E, round 3; docs/preregistration/E3-long-divisors.md):
        a refined winner ``P`` that passes step 4's penalised gate is compared with its near
        divisors ``round(P / m)``, ``m = 2 .. DIVISOR_CANDIDATES``, each settled and tested
        exactly as a screening candidate; the smallest exact log p-value wins. Why: a smooth
        cycle with a long period seen 10-20 times (T = 4,320 or 8,640 over 10-20 cycles) was
        answered as ~3 T or ~6 T. The screening's nearest-bin reading gave the periods around
        the multiple one identical, better score, so T was never refined although its exact
        test is the best; and step 3 could not move down: the claim is rarely an exact
        multiple, and the multiple's harmonics that T lacks sit between Fourier bins, where
        they catch the sidelobes of T's strong lines. Runs only on a claim step 4 would
        make, and moves only to a period with more cycles and a smaller exact p-value. Only
        a divisor whose fundamental (harmonic ``m`` of ``P``) holds at least
        ``DIVISOR_SHARE`` times the power of ``P``'s first harmonic is tried (v2: trying
        every ``m`` cost 22 % of the CPU time at 10,000 reports and failed its
        pre-registered speed criterion)."""
        value, period, _ = best
        if DIVISOR_CANDIDATES < 2 or not math.isfinite(value):
            return best
        if value - few_cycles_penalty(self.n / period, self.n) >= self.threshold:
            return best
        power = self.power(period)
        for m in range(2, DIVISOR_CANDIDATES + 1):
            near = round(period / m)
            if near < self.min_period or m > power.size:
                break
            if power[m - 1] < DIVISOR_SHARE * power[0]:
                continue  # P's own fundamental dominates: P / m is no candidate (v2, speed)
            q = self.settle(near, _resolving_level(self.power(near)))
            logp, harmonics = self.exact_logp(q)
            if logp < best[0]:
                best = (logp, q, harmonics)
        return best

    def refine(self, logp: np.ndarray, exact: np.ndarray | None, top_peaks: int):
        """Screening winners, then exact refinement and an exact test of each; None if the
        ranking reached a period the lazy screening left out (``_screen_lazy``)."""
        score = logp.min(axis=1)
        level_of = np.argmin(logp, axis=1)
        order = _ranked(score)
        chosen: list[int] = []
        best = (np.inf, 0, 0)  # (log p, period, harmonics)
        for i in order:
            if len(chosen) >= max(CANDIDATES, top_peaks):
                break
            if exact is not None and not exact[i]:
                return None
            p0 = int(self.periods[i])
            h0 = HARMONIC_LEVELS[level_of[i]] if level_of[i] < len(HARMONIC_LEVELS) else p0 // 2
            reach = self.span(p0, h0)
            if any(abs(p0 - c) <= reach for c in chosen):
                continue
            chosen.append(p0)
            harmonics = _resolving_level(self.power(p0))
            if self.beaten(p0, harmonics, best[0]):
                continue
            q = self.settle(p0, harmonics)
            value, hq = self.exact_logp(q)
            if value < best[0]:
                best = (value, q, hq)
        return best

    def beaten(self, center: int, harmonics: int, best: float) -> bool:
        """Whether no period ``settle(center, harmonics)`` can return has an exact log
        p-value below ``best`` (issue 19, helper F): ``refine`` then skips that settle and
        its exact test, whose ``value < best`` would be False for whichever integer it
        settled on, so ``best`` and every answer stay the same (the settle's memoised folds
        only speed later settles up). Proven by ``_span_floor`` over the settle's whole
        neighbourhood; tried only where the settle is expensive (``FLOOR_MIN_HARMONICS``
        harmonics or more over ``FLOOR_MIN_SPAN`` periods or more, each at least
        ``FAST_FOLD_MIN_DIRECT`` samples: 2-6 ms each at T = 1,000 here, the bound ~2 ms;
        not while ``FAST_FOLD_HARMONICS`` is below the bound's 32 harmonics: the partial DFT
        is then off) and likely to succeed (the centre's own exact log p-value at least
        ``FLOOR_GATE`` above ``best``: on the issue-19 speed streams the multiples 2 T and
        3 T of a claimed T, 11 to 800 above it from eps0 = 1 up; there 36 of 36 bounds
        tried skipped their settle)."""
        if not math.isfinite(best) or SETTLE_FACTOR * harmonics < FLOOR_MIN_HARMONICS:
            return False
        if HARMONIC_LEVELS[-1] > FAST_FOLD_HARMONICS:  # the bound's partial DFT is off
            return False
        span = self.span(center, harmonics)
        low, high = max(self.min_period, center - span), min(self.max_period, center + span)
        if high - low + 1 < FLOOR_MIN_SPAN or low < FAST_FOLD_MIN_DIRECT:
            return False
        if self.exact_logp(center)[0] < best + FLOOR_GATE:
            return False
        missing = [q for q in range(low, high + 1) if q not in self.floors]
        if missing:  # neighbourhoods of candidates overlap (3 T - 25, 3 T + 1 at T = 1,000)
            self.floors.update(zip(missing, _span_floor(self.xw, missing).tolist(), strict=True))
        return min(self.floors[q] for q in range(low, high + 1)) >= best

    # -- claim gates (steps 4-6) and renames (steps 3, 7) ----------------------------------

    def decide(self, best_logp: float, period: int, harmonics: int) -> PeriodEstimate:
        """Steps 4-6 on the best refined candidate, then its renames (steps 3 and 7); a
        rename to a longer period with fewer than ``PENALTY_CYCLES`` cycles must pass step
        6's masked check at that period (step 3b) or the gates abstain."""
        n, tests = self.n, self.tests
        if not np.isfinite(best_logp):
            return PeriodEstimate(None, 0.0, {}, (n,), 1.0, 0, tests, self.max_period)
        # the penalty of the candidate as refined, before its neighbourhood is settled again
        margin = best_logp - few_cycles_penalty(n / period, n)
        # the neighbourhoods of several candidates can overlap a stretch of integers: settle
        # the winner's neighbourhood once more
        settled = _resolving_level(self.power(period))
        period = self.settle(period, settled)
        adjusted = float(min(1.0, np.exp(best_logp + np.log(tests))))
        if not self.claims(margin, best_logp, period):
            local = self.fallback_claim(period)
            if local is not None:
                return local
            return PeriodEstimate(
                None, 0.0, {}, (n,), adjusted, 0, tests, self.max_period, best_logp, period
            )
        gated = period
        period = self.renamed(period, settled, harmonics)
        # step 3c: a multiple vetoed by the whitened reading is checked as if moved to, so
        # that the veto changes which period is named, not whether one is claimed; unless
        # the named period passes its own masked check by VETO_NAMED_MARGIN (helper G: raw
        # daily readings, 288 named, 576 vetoed and failing at its 5 cycles)
        checked = period if self.vetoed is None else max(period, self.vetoed)
        if (
            checked > gated
            and n / checked < PENALTY_CYCLES
            and self.masked(checked) - few_cycles_penalty(n / checked, n) >= self.threshold
        ):
            # a rename to a longer period (step 3's multiple) claims fewer cycles than the
            # gates saw: the claimed period must pass step 6's masked check at its own
            # cycles, as every claim with fewer than PENALTY_CYCLES cycles does (step 3b)
            local = self.fallback_claim(checked)
            if local is not None:
                return local
            if not self.named_clears_veto(period):
                return PeriodEstimate(
                    None, 0.0, {}, (n,), adjusted, 0, tests, self.max_period, best_logp, checked
                )
        if self.beyond(period) is not None:
            # step 10: a period longer than the searched range folds the stream better than
            # the claim at the top of the range: the true period is not admissible
            return PeriodEstimate(
                None, 0.0, {}, (n,), adjusted, 0, tests, self.max_period, best_logp, period
            )
        return PeriodEstimate(
            int(period),
            1.0 - adjusted,
            {int(period): 1},
            (n,),
            adjusted,
            harmonics,
            tests,
            self.max_period,
            best_logp,
            int(period),
        )

    def beyond(self, period: int) -> int | None:
        """Step 10, the range-edge check (issue 19, helper C, 2026-12-06): a period longer
        than ``max_period`` with at least 2 whole cycles (``<= n // 2``) that explains the
        claimed ``period`` better by the statistic the pipeline compares such periods with;
        None if there is none (the claim stands). (a) Where the refinement of ``period``
        was cut by ``max_period`` (its neighbourhood ``period + span`` reaches past it): the
        same settle with the cut lifted to ``min(period + span, n // 2)``; its winner if it
        lies more than ``EDGE_BEYOND`` (6 %) past ``max_period`` (docs/preregistration/
        C-range-edge-v3.md) and its exact test (step 2, the statistic ``refine``
        ranks candidates by) beats the claim's by more than ``EDGE_MARGIN`` in log p (3
        cycles do not resolve ``n // 3`` from ``n // 3 + 1``: without the margin true
        periods at the top lost 12 of 253 exact answers, with it 4, while 53 of the 86
        wrong claims withdrawn stayed withdrawn; calibration seed 5101,
        ``scripts/C_edge_margin.py``). (b) Step 3's multiple test on the multiples ``m T``
        whose window reaches beyond ``max_period`` (``_longer_multiple``), only with
        ``EDGE_MULTIPLES`` (off: docs/preregistration/C-range-edge-v3.md). A claim with
        neither a neighbourhood nor a multiple (``m <= MAX_MULTIPLE``) past ``max_period``
        is not looked at."""
        top = self.n // 2
        if top <= self.max_period:
            return None
        harmonics = _resolving_level(self.power(period))
        upper = min(period + self.span(period, harmonics), top)
        if upper > self.max_period:
            winner = self.settle(period, harmonics, upper)
            gain = self.exact_logp(period)[0] - self.exact_logp(winner)[0]
            if winner > self.max_period * (1.0 + EDGE_BEYOND) and gain > EDGE_MARGIN:
                return winner
        if not EDGE_MULTIPLES or period * MAX_MULTIPLE + MAX_MULTIPLE <= self.max_period:
            return None
        return _longer_multiple(
            period,
            _level_logp(self.power(period))[1],
            self.whole,
            self.whitened_whole,
            self.xs_at,
            self.max_period,
            top,
        )

    def claims(self, margin: float, best_logp: float, period: int) -> bool:
        """Steps 4-6: the penalised Bonferroni gate, or (few cycles, Bonferroni passed) the
        neighbour test; a few-cycles claim must also pass the masked-background check."""
        n, threshold = self.n, self.threshold
        few = n / period < PENALTY_CYCLES
        claim = margin < threshold or (
            few
            and best_logp < threshold
            and neighbour_logp(self.xw, period) + np.log(self.tests) < np.log(self.alpha)
        )
        if claim and few:
            # the same test once more against a background fitted to the raw periodogram
            # without the candidate's harmonic bins (module docstring, step 6)
            claim = self.masked(period) - few_cycles_penalty(n / period, n) < threshold
        return claim

    def named_clears_veto(self, period: int) -> bool:
        """Step 3c (helper G): where step 3's multiple was vetoed and fails step 3b, and step
        8 claims nothing, the named ``period`` is still claimed if its own masked check, at
        its own cycles (any number of them), passes with margin ``VETO_NAMED_MARGIN``.

        Returns:
            True if a multiple was vetoed, the margin is set and the named period's masked
            log p minus its few-cycles penalty minus the threshold is at most ``-margin``.
        """
        if self.vetoed is None or VETO_NAMED_MARGIN is None:
            return False
        return self.named_margin(period) <= -VETO_NAMED_MARGIN

    def named_margin(self, period: int) -> float:
        """Step 6's masked check at ``period`` as a margin (< 0 passes).

        Returns:
            The masked log p at ``period`` minus its few-cycles penalty minus the threshold.
        """
        return float(
            self.masked(period) - few_cycles_penalty(self.n / period, self.n) - self.threshold
        )

    def masked(self, period: int) -> float:
        """``masked_logp`` of the detrended stream at ``period``, on the periodogram the
        whitening computed (the same values: ``_whiten``'s ``parts``)."""
        return masked_logp(self.xd, period, self.parts.get("power"))

    def renamed(self, period: int, settled: int, harmonics: int) -> int:
        """A claimed ``period`` after the hill climb (step 4b), the fundamental (step 3) and
        the local period of a stream with phase jumps (steps 7, 7a, 7b)."""
        period = self.walk(period, settled)
        base, period, self.vetoed = _fundamental(
            period,
            harmonics,
            self.power,
            self.whole,
            self.whitened_whole,
            self.xs_at,
            self.min_period,
            self.max_period,
        )
        if self.vetoed is not None:
            # step 3c: where step 7 renames the vetoed multiple (a phase-jump stream), its
            # answer stands, as before the veto; the veto only keeps T where it would not
            unvetoed = self.local(base, self.vetoed)
            if unvetoed != self.vetoed:
                self.vetoed = None
                return unvetoed
        return self.local(base, period)

    def local(self, base: int, period: int) -> int:
        """Step 7 on ``period`` (``base``: the period before step 3's multiple move)."""
        local = _local_period(self.autocorr, period, self.min_period, self.passes)
        if (
            local == period
            and base < period
            and _undo_multiple(self.autocorr, base, period) == base
        ):
            local = _local_period(self.autocorr, base, self.min_period, self.passes)
        return local

    def fallback_claim(self, candidate: int | None = None) -> PeriodEstimate | None:
        """Where the gates abstain: step 8's local claim, else (streams shorter than
        ``SHORT_STREAM``) step 9's phase ANOVA, or (``SHORT_STREAM`` to ``SHORT_CYCLES_STREAM``
        samples) step 9b's on ``candidate``, the period the gates refused."""
        local = self.local_claim()
        if local is None and self.n < SHORT_STREAM:
            local = self.short_claim()
        elif local is None and self.n < SHORT_CYCLES_STREAM:
            local = self.cycles_claim(candidate)
        return local

    def anova_scan(self) -> tuple[range, list[float]]:
        """Steps 9 and 9b: the periods with ``DEFAULT_MIN_CYCLES`` whole cycles or more (their
        calibration's range; at ``min_cycles = 2`` the 2-cycle periods of 60 aperiodic
        samples got 5 claims of 720) and the log p-value of the phase ANOVA at each
        (``anova_logp``); an empty range if there is none."""
        top = min(self.max_period, self.n // DEFAULT_MIN_CYCLES)
        periods = range(self.min_period, max(top, self.min_period - 1) + 1)
        return periods, [anova_logp(self.arr, q) for q in periods]

    def short_claim(self) -> PeriodEstimate | None:
        """Step 9 (issue 19, short streams; module docstring): the period with the smallest
        one-way ANOVA p-value of the phases over the whole cycles of the reports
        (``anova_logp``), claimed if that p-value times the number of periods searched is
        below ``SHORT_ANOVA_ALPHA``. None otherwise."""
        periods, values = self.anova_scan()
        if not periods:
            return None
        best = int(np.argmin(values))
        value, period = values[best], periods[best]
        adjusted = float(min(1.0, np.exp(value) * len(periods)))
        if adjusted >= SHORT_ANOVA_ALPHA:
            return None
        return self.anova_estimate(period, value, adjusted)

    def cycles_claim(self, candidate: int | None) -> PeriodEstimate | None:
        """Step 9b (issue 19, 4-5 cycles; module docstring): ``candidate`` (the period the
        gates refused) is claimed if it has ``SHORT_CYCLES_WINDOW`` whole cycles, is ALSO the
        period with the smallest phase-ANOVA p-value, that p-value times the number of
        periods searched is below ``SHORT_CYCLES_ALPHA``, and its log p-value is below both
        neighbours' (``T - 1``, ``T + 1``, where searched) by ``SHORT_CYCLES_MARGIN``. None
        otherwise."""
        periods, values = self.anova_scan()
        fewest, most = SHORT_CYCLES_WINDOW
        if candidate is None or candidate not in periods:
            return None
        if not fewest <= self.n // candidate <= most:
            return None
        best = int(np.argmin(values))
        if periods[best] != candidate:
            return None
        value = values[best]
        adjusted = float(min(1.0, np.exp(value) * len(periods)))
        if adjusted >= SHORT_CYCLES_ALPHA:
            return None
        neighbours = [values[i] for i in (best - 1, best + 1) if 0 <= i < len(values)]
        if neighbours and min(neighbours) - value < SHORT_CYCLES_MARGIN:
            return None
        return self.anova_estimate(candidate, value, adjusted)

    def anova_estimate(self, period: int, value: float, adjusted: float) -> PeriodEstimate:
        """The claim of steps 9 and 9b: ``period`` with its ANOVA log p-value ``value`` and
        Bonferroni-adjusted p-value ``adjusted``."""
        _, harmonics = self.exact_logp(period)
        return PeriodEstimate(
            int(period),
            1.0 - adjusted,
            {int(period): 1},
            (self.n,),
            adjusted,
            harmonics,
            self.tests,
            self.max_period,
            float(value),
            int(period),
        )

    def local_claim(self) -> PeriodEstimate | None:
        """Step 8 (issue 19, phase jumps; module docstring): where the gates of steps 4-6
        abstain, the lag ``L`` with the largest overlap autocorrelation of the whitened
        stream (``_overlap_rho``: under a phase jump only the ``L`` pairs straddling it
        mismatch, while the whole-stream fold is smeared) is claimed if its segment-wise
        test (``segment_logp``) passes the penalised gate of step 4 at ``alpha /
        LOCAL_CLAIM_FACTOR`` (``alpha / (LOCAL_CLAIM_FACTOR * LOCAL_CLAIM_MANY)`` when ``L``
        has ``PENALTY_CYCLES`` cycles or more); then moved to the smallest divisor that
        explains it (``divisor_of``). None otherwise."""
        n = self.n
        rho = _overlap_rho(self.autocorr, np.arange(self.max_period + 1))
        lag = self.min_period + int(np.argmax(rho[self.min_period :]))
        value = segment_logp(self.xw, lag) + float(np.log(LOCAL_CLAIM_FACTOR))
        if n / lag >= PENALTY_CYCLES:
            value += float(np.log(LOCAL_CLAIM_MANY))
        if value - few_cycles_penalty(n / lag, n) >= self.threshold:
            return None
        lag = self.divisor_of(lag, rho)
        _, harmonics = self.exact_logp(lag)
        adjusted = float(min(1.0, np.exp(value + np.log(self.tests))))
        return PeriodEstimate(
            int(lag),
            1.0 - adjusted,
            {int(lag): 1},
            (n,),
            adjusted,
            harmonics,
            self.tests,
            self.max_period,
            float(value),
            int(lag),
        )

    def divisor_of(self, lag: int, rho: np.ndarray) -> int:
        """The smallest divisor ``q = lag / m`` (``q >= min_period``) whose ``rho`` is within
        the rename margin of ``rho(lag)`` (``_rename_margin``, ``z`` Bonferroni over the lags
        scanned at ``LOCAL_TAIL``, ``f = 1 - rho(lag)``), whose segment-wise test passes the
        penalised gate of step 4, and which explains the fold energy of ``lag``
        (``_explained_by``: the harmonics of ``lag`` off the multiples of ``m`` are noise);
        ``lag`` itself if none does. Under a global period ``T`` the lags ``2 T``, ``3 T``
        repeat the stream as well as ``T``; the former move (any prime divisor within the
        margin that passed the gate) also took a true 12 to 6 or 4, 144 to 48."""
        z = float(-special.ndtri(LOCAL_TAIL / max(1, self.max_period - self.min_period + 1)))
        share = min(1.0, max(0.0, 1.0 - float(rho[lag])))
        margin = _rename_margin(z, self.n - lag, share)
        for small in range(self.min_period, lag // 2 + 1):
            if (
                lag % small == 0
                and rho[lag] - rho[small] <= margin
                and segment_logp(self.xw, small) - few_cycles_penalty(self.n / small, self.n)
                < self.threshold
                and _explained_by(self.xw, lag, lag // small)
            ):
                return small
        return lag

    def passes(self, q: int) -> bool:
        """The claim gate of step 4 for ``q`` on its own (exact F test, penalty), on the
        whole-stream fold or on the segment-wise (Bartlett) fold (``segment_logp``)."""
        value, _ = self.exact_logp(q)
        value = min(value, segment_logp(self.xw, q))
        return value - few_cycles_penalty(self.n / q, self.n) < self.threshold


def _contenders(bounded: list[tuple[float, float]]) -> list[int]:
    """The indices whose interval ``value +- tol`` reaches the lower end of the interval
    with the largest value (``settle``): every other exact value lies below the winner's."""
    top = max(range(len(bounded)), key=lambda i: bounded[i][0])
    floor = bounded[top][0] - bounded[top][1]
    return [i for i, (value, tol) in enumerate(bounded) if value + tol >= floor]


def _ranked(score: np.ndarray):
    """The indices of ``score`` in the order of ``np.argsort(score, kind="stable")``, lazily:
    the refinement reads only the first few. The head (every score below the
    ``RANK_HEAD``-th smallest, ascending, ties in index order) is exactly the prefix of that
    order; the full sort (``n log n``; 60 ms of 333,331 scores at n = 10^6) only if the
    caller reads past it."""
    if score.size <= 4 * RANK_HEAD:
        yield from np.argsort(score, kind="stable")
        return
    kth = np.partition(score, RANK_HEAD)[RANK_HEAD]
    head = np.flatnonzero(score < kth)
    yield from head[np.argsort(score[head], kind="stable")]
    yield from np.argsort(score, kind="stable")[head.size :]


def _undo_multiple(ac: np.ndarray, base: int, period: int) -> int:
    """Step 7a (phase jumps): undo step 3's move from ``base`` to the multiple ``period``
    when the lag ``base`` repeats the whitened stream markedly better than the lag
    ``period``. The move claims a cycle ``m T`` whose harmonics off the multiples of ``m``
    are significant; under that global period ``rho(T) - rho(m T) = -D + noise`` with ``D``
    the share of those harmonics (``_local_period``'s derivation, the same variance bound
    ``(2 f^2 + 8 f D) / (n - m T)``). A phase jump imitates those harmonics in the whole-
    stream fold (the phases before the jump's position in the fold hold one sample more of
    the old phase than the others) while ``rho(T)`` stays at least ``rho(m T)``. One lag
    fixed in advance, not a maximum over lags: the margin is ``4 f sqrt(2 / (n - m T))``
    (a one-sided N(0, 1) tail of 3e-5), ``f = 1 - rho(T)``. ``base`` passed the claim gate
    before the move; this only renames. Measured 2026-12-04 on white Gaussian noise
    (``D = 0``): the undo fires on 15 of 40,000 streams at n = 240 (T = 12, m = 3), 4 at
    n = 480, 1 at n = 2,880, i.e. up to ~4e-4, not 3e-5: ``f = 1 - rho(T)`` shrinks
    exactly when the difference is large (step 7's note). With step 7's noise share and
    ``_rename_margin(4, n - m T, f)`` it fired on 1 of 40,000 at n = 240, but the phase-jump
    check lost 15 exact answers (1,429 -> 1,414) and 2 cells: left as is, open."""
    n = ac.size
    if period <= base or ac[0] <= 0.0:
        return period
    rho_base, rho_period = _overlap_rho(ac, np.array([base, period]))
    share = min(1.0, max(0.0, 1.0 - float(rho_base)))
    margin = 4.0 * share * np.sqrt(2.0 / (n - period)) + 1e-9
    return base if rho_base - rho_period > margin else period


def _local_period(ac: np.ndarray, period: int, min_period: int, passes) -> int:
    """Step 7 (phase jumps): RENAME a claimed ``period`` to a shorter lag that repeats the
    whitened stream markedly better in the time domain; never creates or drops a claim.

    ``ac``: the autocorrelation ``c_L = sum_t xw_t xw_{t+L}`` of the whitened stream for
    ``L = 0 .. n - 1`` (``_screen_sums`` has it: no extra transform);
    ``rho(L) = c_L / (n - L)`` divided by ``c_0 / n``. Under a global period
    ``T`` the lag ``T`` pairs equal signal values everywhere, so ``E rho(T) >= E rho(L)``
    for every ``L``. Under a stream with local period ``L`` whose cycle restarts with a phase
    shift, only the ``L`` pairs straddling each jump mismatch, while the fold at ``T`` (a
    near multiple, or a long period with many free phases) was chosen for its side lobes:
    ``rho(L) >> rho(T)``. ``L`` = the lag in ``[min_period, T)`` with the largest ``rho``,
    outside ``T``'s near window ``T^2 / n``; renamed when ``rho(L) - rho(T)`` exceeds the
    margin ``_rename_margin(z, n - T, f)`` with ``z = Phi^-1(1 - LOCAL_TAIL / K)`` over the
    ``K`` lags scanned (Bonferroni) AND ``L`` passes the claim gate on its own
    (``passes``); else step 7b (``_related_lag``: the few lags near ``T / m``, a smaller
    ``z``). Then the fundamental of ``L``: an exact divisor ``L / p`` (``p`` prime) whose
    ``rho`` is within the step-7 margin of ``rho(L)`` and which passes the gate (module
    docstring, step 7)."""
    n = ac.size
    near = max(1, int(np.ceil(period * period / n)))
    top = period - near  # lags [min_period, top) are candidates
    if top <= min_period or ac[0] <= 0.0:
        return period
    rho = _overlap_rho(ac, np.arange(period + 1))
    lag = min_period + int(np.argmax(rho[min_period:top]))
    # False-rename probability. Write xw = s + e (signal share 1 - f, noise share f of
    # rho(0)). Under a global period T, rho(L) - rho(T) = -D + noise, D = (1 - f)(1 -
    # r_s(L)) >= 0 (r_s the signal's autocorrelation). Its variance (iid e, times N = n -
    # T): noise x noise at most 2 f^2; signal x noise sum_u e_u (s_{u-L} + s_{u+L} - 2 s_u),
    # at most 8 f D (s_{u+-T} = s_u cancel; Cauchy-Schwarz). _rename_margin(z, N, f) is the
    # smallest margin whose z-score (D + m) / sqrt((2 f^2 + 8 f D) / N) is >= z for EVERY
    # D >= 0, so one lag exceeds it with probability <= 1 - Phi(z) (normal approximation of
    # a sum of N products); z = Phi^-1(1 - LOCAL_TAIL / K) makes the union over the K lags
    # scanned <= LOCAL_TAIL = 3e-5 (Bonferroni, no independence needed), before the claim
    # gate that L must also pass. The noise share: f = 1 - (rho(L) + rho(T)) / 2, whose
    # noise is uncorrelated with that of the difference rho(L) - rho(T) (equal variances)
    # and whose mean is f + D / 2 >= f under a global period. (The former estimate 1 -
    # rho(L) shrinks exactly when the difference is large: on white noise at n = 240 the
    # z-scores it gave had a one-sided tail of 3.4e-4 at z = 4 instead of 3.2e-5. It was
    # paired with z = 4 + sqrt(2 ln T), 6.5-7.5, far above the Bonferroni 4.6-5.3.)
    z = float(-special.ndtri(LOCAL_TAIL / (top - min_period)))
    margin = _lag_margin(rho, lag, period, z, n)
    if rho[lag] - rho[period] <= margin or not passes(lag):
        lag = _related_lag(rho, period, min_period, top, n, passes)
        if lag is None:
            return period
    moved = True
    while moved:
        moved = False
        for prime in _prime_factors(lag):
            small = lag // prime
            if small >= min_period and rho[lag] - rho[small] <= margin and passes(small):
                lag, moved = small, True
                break
    return lag


def _related_lags(period: int, min_period: int, top: int) -> np.ndarray:
    """Step 7b's lags, fixed by ``period`` alone before the data are looked at: the
    integers within 1 of ``period / m`` for ``m = 2 .. LOCAL_MULTIPLES``, in
    ``[min_period, top)``."""
    lags = set()
    for m in range(2, LOCAL_MULTIPLES + 1):
        centre = period / m
        lags.update(range(math.ceil(centre - 1.0), math.floor(centre + 1.0) + 1))
    return np.array(sorted(q for q in lags if min_period <= q < top), dtype=int)


def _overlap_rho(ac: np.ndarray, lags: np.ndarray) -> np.ndarray:
    """The whitened stream's autocorrelation at ``lags`` (``ac = c_L``, ``L = 0 .. n - 1``)
    normalised by the overlap count ``n - L`` and by ``c_0 / n``."""
    n = ac.size
    return ac[lags] / (n - lags) / (ac[0] / n)


def _lag_margin(rho: np.ndarray, lag: int, period: int, z: float, n: int) -> float:
    """Steps 7 and 7b: the margin ``rho(lag) - rho(period)`` must exceed, at ``z``, with
    the noise share ``f = 1 - (rho(lag) + rho(period)) / 2`` (``_local_period``)."""
    share = min(1.0, max(0.0, 1.0 - 0.5 * float(rho[lag] + rho[period])))
    return _rename_margin(z, n - period, share)


def _rename_margin(z: float, pairs: int, share: float) -> float:
    """Smallest margin ``m`` with ``(D + m) / sqrt((2 f^2 + 8 f D) / N) >= z`` for every
    signal share ``D >= 0`` (``_local_period``'s variance bound; ``f = share``,
    ``N = pairs``). The left side is smallest at ``D = max(0, m - f / 2)``: at ``D = 0``
    ``m = z f sqrt(2 / N)``, valid while that is at most ``f / 2``; beyond, the minimum
    ``sqrt(2 m / f - 1 / 2) sqrt(N) / 2 = z`` gives ``m = f (2 z^2 / N + 1 / 4)`` (the two
    agree at ``z sqrt(2 / N) = 1 / 2``)."""
    u = z * math.sqrt(2.0 / pairs)
    return share * (u if u <= 0.5 else 2.0 * z * z / pairs + 0.25) + 1e-9


def _related_lag(rho: np.ndarray, period: int, min_period: int, top: int, n: int, passes):
    """Step 7b (phase jumps, the margin-held renames): the local period ``L`` of a claim
    ``T`` that is a near multiple ``m L + d`` lies within 1 of ``T / m`` whenever
    ``|d| <= m``; those few lags (``_related_lags``, at most ``3 (LOCAL_MULTIPLES - 1)``,
    fixed by ``T`` alone) need no maximum over all ~``T`` lags in the margin. The lag of
    the set with the largest ``rho`` that beats ``rho(T)`` by its own margin and passes the
    claim gate on its own, or None.

    False-rename probability under a true global period ``T``: for each lag ``L`` of the
    set, ``rho(L) - rho(T) = -D_L + noise``, the noise ~normal with variance at most
    ``(2 f^2 + 8 f D_L) / N`` (``N = n - T`` pairs; ``_local_period``'s derivation). The
    margin ``_rename_margin(z, N, f)`` makes the z-score of an exceedance at least ``z``
    for EVERY ``D_L >= 0`` (not only at ``D_L = 0``), so each lag exceeds its margin with
    probability at most ``1 - Phi(z)``; with ``z = Phi^-1(1 - LOCAL_TAIL / K)``, ``K`` the
    size of the set, the union over the set is at most ``LOCAL_TAIL = 3e-5`` (Bonferroni;
    no independence needed), before the claim gate that ``L`` must also pass. Together with
    step 7's own test (also ``LOCAL_TAIL``) a true period is renamed with probability at
    most ``2 LOCAL_TAIL = 6e-5``. ``f = 1 - (rho(L) + rho(T)) / 2`` as in step 7.
    Measured on white Gaussian noise (the ``D = 0`` case; ``tests/unit/test_period.py``)."""
    lags = _related_lags(period, min_period, top)
    if lags.size == 0:
        return None
    z = float(-special.ndtri(LOCAL_TAIL / lags.size))
    for q in lags[np.argsort(-rho[lags], kind="stable")]:
        if rho[q] - rho[period] <= _lag_margin(rho, q, period, z, n):
            continue
        if passes(int(q)):
            return int(q)
    return None
