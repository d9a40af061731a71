"""results.json ``privacy`` names the exact sum a ``[secure_sum]`` stage revealed.

Held-out QA (helper T, 2026-12-06): ``ldpfleet run scenarios/secure-sum.toml`` stated
"2-LDP over any 5 consecutive steps of each device ... per simulated reading" and nothing
else, while the collector also learnt the exact, un-noised sum of 90 devices' first 16
clean readings (secure aggregation hides each vector, not their sum).
"""

from __future__ import annotations

from ldpfleet.collector.analytics import note_secure_sum

STREAM = {"claim": "2-LDP over any 5 consecutive steps of each device", "eps": 2.0}


def test_an_unmasked_sum_is_named_as_not_covered() -> None:
    entry = {"dim": 16, "survivors": 90, "aborted": None}
    privacy = note_secure_sum(dict(STREAM), entry)
    assert privacy["claim"].startswith(STREAM["claim"] + "; not covered: ")
    assert "exact sum" in privacy["uncovered"] and "first 16 clean readings" in privacy["uncovered"]
    assert "90 devices" in privacy["uncovered"]
    assert privacy["eps"] == 2.0


def test_no_stage_or_an_abort_changes_nothing() -> None:
    assert note_secure_sum(dict(STREAM), None) == STREAM
    aborted = {"dim": 16, "survivors": 0, "aborted": "masked stage: cannot unmask: ..."}
    assert note_secure_sum(dict(STREAM), aborted) == STREAM
