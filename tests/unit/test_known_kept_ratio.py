"""The kept ratio the post-processing is told: one rule for both pipelines' collectors
(``protocol.cadr_budget.known_kept_ratio``, read by ``collector.cadr_reference`` and
``collector.cadr_fleet``)."""

from __future__ import annotations

from ldpfleet.protocol.cadr_budget import known_kept_ratio


def test_clip_knows_its_ratio_and_the_negotiated_methods_do_not():
    assert known_kept_ratio("clip") == 1.0
    for method in ("ll", "lh", "ra", "er"):
        assert known_kept_ratio(method) is None
