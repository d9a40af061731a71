"""Helper B (2026-12-07): ``ldpfleet audit --eps`` has one rule and one sentence.

Before, NaN said "must be a finite number >= 0" (``collector.audit.core._check_eps``), 0
and 51 "must be in (0, 50]" (the mechanism's own check), 1e-20 "must be >= 1e-12, the
smallest budget ..." and ``abc`` "not a comma list of numbers". Now every bad value is
refused before anything runs by ``core.check_claimed_eps``, in one sentence
(``EPS_CLAIM_RULE``), exit 2; 0 stays the claim of the entries that claim nothing leaks.
Each CLI case below fails on the code before (another sentence).
"""

from __future__ import annotations

import math

import pytest
from ldpfleet.app.cli import app
from ldpfleet.collector.audit import battery
from ldpfleet.collector.audit.core import EPS_CLAIM_RULE, ZERO_CLAIM_ENTRIES, check_claimed_eps
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

BAD = [("nan", "nan"), ("inf", "inf"), ("-1", "-1.0"), ("0", "0.0"), ("51", "51.0"),
       ("abc", "'abc'"), ("1e-20", "1e-20"), ("1e300", "1e+300")]  # fmt: skip


@pytest.fixture
def nothing_runs(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("an audit ran before --eps was checked")

    monkeypatch.setattr(battery, "audit_spec", refuse)


def _line(args: list[str]):
    result = CliRunner().invoke(app, ["audit", *args, "--quiet"])
    return result, " ".join(result.output.split())


@pytest.mark.parametrize(("typed", "shown"), BAD)
@pytest.mark.parametrize("mechanism", ["laplace", "rr", "gcdp", "degree-er"])
def test_every_bad_budget_is_one_sentence_with_exit_2(mechanism, typed, shown, nothing_runs):
    result, text = _line([mechanism, f"--eps={typed}"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert text == f"error: --eps: must be {EPS_CLAIM_RULE}, got {shown}", text


@pytest.mark.parametrize(("typed", "shown"), BAD)
def test_audit_all_says_the_same_of_each_listed_budget(typed, shown, nothing_runs):
    result, text = _line(["all", f"--eps=1,{typed}", "--jobs", "1"])
    assert result.exit_code == 2, result.output
    assert text == f"error: --eps: must be {EPS_CLAIM_RULE}, got {shown}", text


@pytest.mark.parametrize(("typed", "shown"), [b for b in BAD if b[0] != "0"])
def test_an_entry_that_claims_nothing_leaks_takes_0_and_the_same_rule(typed, shown, nothing_runs):
    result, text = _line(["secagg", f"--eps={typed}"])
    assert result.exit_code == 2, result.output
    assert text == f"error: --eps: must be {EPS_CLAIM_RULE}, got {shown}", text


def test_the_zero_claim_entries_are_the_specs_that_claim_0():
    """``ZERO_CLAIM_ENTRIES`` (the entries ``--eps 0`` audits) is every battery entry whose
    claim is 0 whatever the budget passed."""
    zero = set()
    for name in battery.BATTERY:
        try:
            if battery.build_spec(name, 1.0).eps == 0.0:
                zero.add(name)
        except ParameterError:  # gau-dp needs a delta, cadr-theta-count a larger budget
            continue
    assert zero == set(ZERO_CLAIM_ENTRIES)


@pytest.mark.parametrize("eps", [math.nan, math.inf, -1.0, 51.0, 1e-20, "abc", True, 10**400])
def test_the_library_rule_is_the_same_sentence(eps):
    with pytest.raises(ParameterError) as caught:
        check_claimed_eps(eps)
    error = caught.value
    assert (error.field, error.limit) == ("eps", EPS_CLAIM_RULE)
    assert error.reason == f"must be {EPS_CLAIM_RULE}, got {eps!r}"
    with pytest.raises(ParameterError) as caught:
        battery.check_audit_arguments(eps)
    assert caught.value.reason == error.reason


def test_the_limits_themselves_pass():
    assert check_claimed_eps(1e-12, zero=False) == 1e-12
    assert check_claimed_eps(50, zero=False) == 50.0
    assert check_claimed_eps(0.0) == 0.0
    with pytest.raises(ParameterError):
        check_claimed_eps(0.0, zero=False)


@pytest.mark.parametrize("eps", [0.0, 0, 51.0, 1e-20])
def test_the_public_api_says_what_the_command_says(eps, nothing_runs):
    """With /tmp/B-battery.diff: ``ldpfleet.run_audit("laplace", 0)`` said the mechanism's
    "must be in (0, 50]" while the command says the one rule."""
    import ldpfleet

    with pytest.raises(ParameterError) as caught:
        ldpfleet.run_audit("laplace", eps)
    assert caught.value.reason == f"must be {EPS_CLAIM_RULE}, got {eps!r}"
    assert caught.value.limit == EPS_CLAIM_RULE
