"""Gaps found by helper T3's planted-bug hunt (round 3): each test names the mutant it
kills."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import period_search
from ldpfleet.collector.period_search import _Search
from ldpfleet.collector.period_stats import few_cycles_penalty
from ldpfleet.protocol.errors import ParameterError


def _gate(monkeypatch, n: int, threshold: float, exact: float, segment: float) -> _Search:
    """A ``_Search`` with only what ``passes`` reads, its two folds' log p fixed."""
    search = object.__new__(_Search)
    search.n, search.threshold, search.xw = n, threshold, np.zeros(n)
    monkeypatch.setattr(_Search, "exact_logp", lambda self, q: (exact, 1))
    monkeypatch.setattr(period_search, "segment_logp", lambda xw, q: segment)
    return search


def test_the_claim_gate_charges_a_period_with_few_cycles_its_penalty(monkeypatch):
    """Kills PG2 (``passes`` without ``few_cycles_penalty``): a period with 3 cycles of a
    240-sample stream must beat the threshold by ``6 log 4`` (8.3 nats), so a log p of -15
    at a threshold of -10 fails the gate (step 7 could rename a claim to such a lag); 12
    cycles or more pay nothing."""
    n, threshold = 240, -10.0
    penalty = few_cycles_penalty(n / 80, n)
    assert penalty == pytest.approx(-6.0 * np.log(4.0))
    assert not _gate(monkeypatch, n, threshold, -15.0, 0.0).passes(80)
    assert _gate(monkeypatch, n, threshold, -19.0, 0.0).passes(80)
    assert _gate(monkeypatch, n, threshold, 0.0, -19.0).passes(80)  # the segment-wise fold
    assert _gate(monkeypatch, n, threshold, -10.5, 0.0).passes(20)  # 12 cycles: no penalty


def test_a_reading_with_a_negative_mass_is_refused():
    """Kills JP1 (``_reading`` refusing only entries below -1): a "distribution" with a
    negative entry that still sums to 1 went into the EM as the count term's centre."""
    from ldpfleet.collector.joint_prior import joint_prior

    with pytest.raises(ParameterError) as error:
        joint_prior([0.5, 1.0], 2, 1.0, [0.6, 0.6, -0.2], [0, 1], 10, 1.0)
    assert error.value.field == "reading"
