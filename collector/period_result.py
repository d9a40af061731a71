"""``PeriodEstimate``: the result of ``detect_period`` (``collector/period.py``)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PeriodEstimate:
    """Result of ``detect_period``.

    ``period``: the detected period in samples, ``None`` when the detector abstains (no period
    significant at the false-claim level ``alpha``); ``confidence``: ``1 - p`` with ``p`` the
    Bonferroni-adjusted p-value of the best candidate (0 when abstaining); ``votes``:
    ``{period: 1}`` (kept for callers of the former multi-scale vote; ``{}`` when abstaining);
    ``scales``: ``(n,)`` (the one window, the whole stream); ``p_value``: the adjusted p-value;
    ``harmonics``: the number of harmonics of the winning statistic; ``tests``: the number of
    (period, harmonics) tests the correction covers; ``max_period``: the admissible maximum;
    ``log_p``: the natural log of the best candidate's unadjusted p-value (for a claim of
    step 8, the local claim route, the segment-wise p-value of its lag times the route's
    factors, ``LOCAL_CLAIM_FACTOR`` and at 12 cycles or more ``LOCAL_CLAIM_MANY``; for a
    claim of step 9 or 9b, a short stream's phase ANOVA, that ANOVA's log p-value, and
    ``p_value`` it times the number of periods the step searched);
    ``candidate``: that candidate's period (set also when abstaining: the best guess that
    did not pass the gate);
    ``searched``: the range of periods actually screened, ``(max(min_period, 3),
    max_period)``, or None when it is empty (too short a stream for ``min_cycles`` cycles of
    the smallest period); ``clamped``: True when the caller's ``max_period`` was above
    ``n // min_cycles`` and was lowered to it (the search was narrower than asked; pass a
    smaller ``min_cycles`` to reach longer periods); ``permutation_p``: step 11's permutation
    p-value when it checked a claim (quiet streams of at most ``PERMUTATION_STREAM`` samples;
    None otherwise); a withdrawn claim abstains with ``candidate`` the withdrawn period.
    """

    period: int | None
    confidence: float
    votes: dict[int, int]
    scales: tuple[int, ...]
    p_value: float = 1.0
    harmonics: int = 0
    tests: int = 0
    max_period: int = 0
    log_p: float = 0.0
    candidate: int | None = None
    searched: tuple[int, int] | None = None
    clamped: bool = False
    permutation_p: float | None = None
