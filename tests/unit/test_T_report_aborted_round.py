"""The report's secure-aggregation rounds show the replies of the round whose close
aborted the session, not 0 (held-out QA, helper T: "MaskedInput 0" while 5 devices had sent
their masked inputs and the masked stage's close aborted: results.json collector.masked
is U3, set only when that close succeeds)."""

from __future__ import annotations

from ldpfleet.app.report import _secagg_section


def _results(state: str, masked: int) -> dict:
    collector = {
        "state": state,
        "advertised": 10,
        "shared": 10,
        "masked": masked,
        "unmasked": 0,
        "messages_in": {"sa_advertise": 10, "sa_shares": 10, "sa_masked": 5, "sa_abort": 5},
    }
    return {"secure_sum": {"graph": "harary", "dim": 16, "collector": collector}}


def test_the_aborting_round_shows_its_replies() -> None:
    html = _secagg_section(_results("aborted", 0))
    assert '<td>MaskedInput</td><td class="num">5</td>' in html


def test_a_completed_session_keeps_the_servers_sets() -> None:
    html = _secagg_section(_results("done", 4))
    assert '<td>MaskedInput</td><td class="num">4</td>' in html
