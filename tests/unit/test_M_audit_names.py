"""`ldpfleet audit mymechs.Cls` (a dot for the colon) names the form to write, as a
scenario's `stream.mechanism` does (helper M: the audit listed the 30 battery entries and
said nothing about the colon)."""

from __future__ import annotations

import pytest
from ldpfleet.collector.audit.battery import run_audit
from ldpfleet.protocol.errors import ParameterError


def test_a_dotted_name_gets_the_colon_form():
    with pytest.raises(ParameterError) as caught:
        run_audit("m_no_such_module.KaryRR", 1.0)
    assert caught.value.field == "mechanism"
    assert str(caught.value).endswith(
        "; to name class 'KaryRR' of module 'm_no_such_module', write 'm_no_such_module:KaryRR'"
    )


def test_a_plain_unknown_name_gets_no_colon_hint():
    with pytest.raises(ParameterError) as caught:
        run_audit("m_no_such_entry", 1.0)
    assert "write '" not in str(caught.value)


class _EpsKeywordOnly:
    def __init__(self, *, eps):
        self.eps = eps


def test_a_keyword_only_eps_says_what_to_change():
    from ldpfleet.protocol.mechanism_contract import build_mechanism

    with pytest.raises(ParameterError) as caught:
        build_mechanism(_EpsKeywordOnly, 1.0, "mine:EpsKeywordOnly")
    assert caught.value.field == "mechanism"
    assert str(caught.value).endswith(
        "too many positional arguments (its eps is keyword-only: ldpfleet passes it by "
        "position, so drop the '*' before it)"
    )
