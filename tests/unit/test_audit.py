"""The black-box privacy audit (collector/audit, seed 001): bounds, selection discipline,
the battery on every correct mechanism, every planted bug caught, the false-alarm rate,
tightness, and the ``ldpfleet audit`` command."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import typer
from ldpfleet.app.audit_cli import audit_all, audit_command, markdown_table
from ldpfleet.collector.audit import (
    Canary,
    audit,
    audit_samples,
    clopper_pearson_lower,
    clopper_pearson_upper,
    eps_lower_bound,
    select_test,
)
from ldpfleet.collector.audit.battery import BATTERY, FUNCTION_LEVEL, build_spec, run_audit
from ldpfleet.protocol.errors import ParameterError
from scipy.stats import binomtest
from typer.testing import CliRunner

from tests.unit.audit_mutants import MUTANTS, stream_eps0_is_eps


def test_sanity_figure_perfect_separation_500_vs_500():
    eps_lb, alpha_lo, beta_hi = eps_lower_bound(500, 500, 0, 500, gamma=0.01)
    assert round(eps_lb, 4) == 4.5419
    assert alpha_lo == pytest.approx(0.005 ** (1 / 500), rel=1e-12)
    assert beta_hi == pytest.approx(1 - 0.005 ** (1 / 500), rel=1e-12)


@pytest.mark.parametrize(("k", "n"), [(0, 10), (3, 10), (10, 10), (17, 400), (399, 400)])
def test_one_sided_bounds_are_the_exact_binomial_interval(k, n):
    # The two-sided exact (Clopper-Pearson) interval at confidence 1 - 2 * level has the
    # one-sided bounds at level as its ends.
    ci = binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
    assert clopper_pearson_lower(k, n, 0.05) == pytest.approx(ci.low, abs=1e-12)
    assert clopper_pearson_upper(k, n, 0.05) == pytest.approx(ci.high, abs=1e-12)


def test_delta_is_subtracted_and_can_void_the_bound():
    plain, lo, hi = eps_lower_bound(90, 100, 10, 100, gamma=0.05)
    with_delta, _, _ = eps_lower_bound(90, 100, 10, 100, gamma=0.05, delta=0.1)
    assert with_delta == pytest.approx(math.log((lo - 0.1) / hi)) and with_delta < plain
    assert eps_lower_bound(1, 100, 0, 100, gamma=0.05, delta=0.5)[0] == -math.inf


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"gamma": 0.0}, "gamma"),
        ({"gamma": 1.0}, "gamma"),
        ({"delta": 1.0}, "delta"),
        ({"delta": -0.1}, "delta"),
    ],
)
def test_bad_confidence_parameters_are_refused(kwargs, field):
    args = {"gamma": 0.05, **kwargs}
    with pytest.raises(ParameterError) as info:
        eps_lower_bound(5, 10, 5, 10, **args)
    assert info.value.field == field


def test_mirrored_event_is_found():
    # D always outputs 0; D' outputs 0 or 1. Only "output 1" (P_D' = 1/2, P_D = 0) is a
    # strong event, and it bounds P_D'/P_D: the mirrored privacy direction.
    sel = (np.zeros(500), np.repeat([0.0, 1.0], 250))
    test = select_test(*sel, gamma=0.05)
    assert test.privacy_direction == -1 and test.selection_eps > 4.0
    result = audit_samples(
        sel,
        (np.zeros(500), np.repeat([0.0, 1.0], 250)),
        {"value": lambda y: y},
        eps=1.0,
        gamma=0.05,
    )
    assert result.verdict == "violation" and result.privacy_direction == -1
    assert result.hits_numerator == 250 and result.hits_denominator == 0


def test_the_certified_bound_uses_evaluation_samples_only():
    separated = (np.zeros(400), np.ones(400))
    same = (np.zeros(400), np.zeros(400))
    witnesses = {"value": lambda y: y}
    # selection separated, evaluation identical: the chosen event is hit equally often in
    # both worlds, so the certified bound is below 0
    lucky = audit_samples(separated, same, witnesses, eps=0.1, gamma=0.05)
    assert lucky.eps_lb < 0 and lucky.verdict == "inconclusive"
    # the reverse: nothing to select on, the evaluation alone cannot be mined
    blind = audit_samples(same, separated, witnesses, eps=0.1, gamma=0.05)
    assert blind.verdict == "inconclusive"


def test_worlds_and_phases_get_independent_generators():
    seen = []

    def sampler(rng, n):
        draw = rng.random(n)
        seen.append(draw[0])
        return draw

    audit(Canary("x", sampler, sampler), {"v": lambda y: y}, eps=1.0, n_sel=5, n_eval=5)
    assert len(set(seen)) == 4  # sel D, sel D', eval D, eval D': four distinct streams


def test_witness_must_return_one_finite_score_per_output():
    canary = Canary("x", lambda r, n: np.zeros(n), lambda r, n: np.ones(n))
    with pytest.raises(ParameterError) as info:
        audit(canary, {"short": lambda y: y[:-1]}, eps=1.0, n_sel=10, n_eval=10)
    assert info.value.field == "short"
    with pytest.raises(ParameterError) as info:
        audit(canary, {"nan": lambda y: y * np.nan}, eps=1.0, n_sel=10, n_eval=10)
    assert info.value.field == "nan"
    with pytest.raises(ParameterError) as info:
        audit(canary, {}, eps=1.0, n_sel=10, n_eval=10)
    assert info.value.field == "witnesses"


def test_user_witness_callables_are_used():
    canary = Canary("x", lambda r, n: r.normal(0, 1, (n, 2)), lambda r, n: r.normal(0, 1, (n, 2)))
    result = audit(
        canary,
        {"sum": lambda y: y.sum(axis=1), "first": lambda y: y[:, 0]},
        eps=0.5,
        n_sel=200,
        n_eval=200,
    )
    assert {row.witness for row in result.selection} == {"sum", "first"}
    assert result.witness in ("sum", "first")


def test_every_correct_mechanism_passes_its_audit_family_wise():
    # Fixed seed 0; gamma = 0.05 for the whole family of 36 audits (Bonferroni: 0.05 / 36
    # each), i.e. the probability that this test fails for correct mechanisms is <= 0.05
    # over the choice of seed, and for seed 0 it is a fixed outcome (no flakiness) except
    # gcdp-partitioned's "os" runs, which read OS entropy (still <= 0.05 for each draw).
    # The function-level entries; the end-to-end, graph and SecAgg entries have their own
    # tests (tests/e2e/test_audit_fleet.py, tests/unit/test_audit_graph.py, ..._secagg.py).
    rows = audit_all((0.5, 1.0, 2.0), trials=2000, gamma=0.05, seed=0, mechanisms=FUNCTION_LEVEL)
    assert len(rows) == 3 * len(FUNCTION_LEVEL) and set(FUNCTION_LEVEL) < set(BATTERY)
    for row in rows:
        assert row["verdict"] == "inconclusive", row
        assert row["eps_lb"] is None or row["eps_lb"] <= row["eps_claimed"]
    table = markdown_table(rows)
    assert table.count("\n") == len(rows) + 1 and "| rr | bit 1 vs bit 0 | 0.5 |" in table


@pytest.mark.parametrize("name", list(MUTANTS))
def test_every_planted_bug_is_caught(name, monkeypatch):
    apply, mechanism, eps, trials = MUTANTS[name]
    assert trials <= 4000  # "at most a few thousand trials per world"
    correct = run_audit(mechanism, eps, trials=trials, gamma=0.05, seed=3)
    assert correct.verdict == "inconclusive"
    apply(monkeypatch)
    broken = run_audit(mechanism, eps, trials=trials, gamma=0.05, seed=3)
    assert broken.verdict == "violation", broken
    assert broken.eps_lb > eps


def test_the_ledger_stops_a_per_step_budget_bug(monkeypatch):
    # eps0 = eps instead of eps / w: the ledger refuses steps 2..w of the window, so only one
    # report at eps leaves the device and the audit finds nothing beyond the claim; the same
    # bug with a ledger that does not charge is the "ledger not charging" mutant (caught).
    stream_eps0_is_eps(monkeypatch)
    spec = build_spec("stream", 1.0)
    outputs = spec.canary.sample_d(np.random.default_rng(0), 20)
    assert np.all(np.isnan(outputs[:, 1:])) and not np.any(np.isnan(outputs[:, 0]))
    assert run_audit("stream", 1.0, trials=2000, seed=3).verdict == "inconclusive"


def test_false_alarm_rate_of_a_correct_mechanism_is_at_most_gamma():
    # 1,000 independent audits (seeds 0..999) of correct Warner RR at eps = 1, gamma = 0.05,
    # 200 + 200 runs per world. Each audit falsely alarms with probability r <= gamma by the
    # Clopper-Pearson coverage; measured r is about 0.005 here (discrete outputs and the
    # conservative exact bounds). The assertion count <= 50 = gamma * 1000 fails only if
    # Bin(1000, r) > 50: for r = 0.01 that is < 1e-20, and even at r = gamma / 2 it is
    # about 5e-6 (normal approximation, 5 standard deviations).
    alarms = sum(
        run_audit("rr", 1.0, trials=400, gamma=0.05, seed=s).verdict == "violation"
        for s in range(1000)
    )
    assert alarms <= 50


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", ["rr", "laplace", "sw"])
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_the_bound_is_tight_for_rr_laplace_and_sw(mechanism, eps):
    # 50,000 + 50,000 runs per world: the median over 5 seeds of eps_LB is >= 0.9 eps.
    # With 25,000 + 25,000 the exact discrete-Laplace sampler (issue 21) gave Laplace at
    # eps = 0.5 a median of 0.429 (seeds 0-6: 0.356-0.486, one at -0.477); with 100,000
    # runs, seeds 0-6 measured 0.465-0.487 (eps 0.5), 0.94-0.975 (1), 1.93-1.96 (2).
    # Fixed seeds: deterministic.
    bounds = [run_audit(mechanism, eps, trials=100_000, seed=s).eps_lb for s in range(5)]
    assert float(np.median(bounds)) >= 0.9 * eps
    assert max(bounds) <= eps  # and never a false alarm here


def _app() -> typer.Typer:
    app = typer.Typer()
    app.command()(audit_command)
    return app


def test_command_prints_the_result_and_exit_codes():
    runner = CliRunner()
    ok = runner.invoke(_app(), ["rr", "--eps", "1", "--trials", "1000"])
    assert ok.exit_code == 0, ok.output
    out = json.loads(ok.stdout)
    for key in ("eps_claimed", "eps_lb", "verdict", "witness", "hits_numerator", "n_eval"):
        assert key in out
    assert out["eps_claimed"] == 1.0 and out["n_eval"] == 500
    for bad in (
        ["nope"],
        ["rr", "--eps", "x"],
        ["rr", "--eps", "0"],
        ["gau-dp"],
        ["rr", "--trials", "1"],
        ["rr", "--gamma", "2"],
        ["rr", "--eps", "1,2"],
    ):
        result = runner.invoke(_app(), bad)
        assert result.exit_code == 2, (bad, result.output)


def test_command_exits_1_on_a_violation(monkeypatch):
    MUTANTS["laplace scale halved"][0](monkeypatch)
    result = CliRunner().invoke(_app(), ["laplace", "--eps", "1", "--trials", "2000"])
    assert result.exit_code == 1
    assert json.loads(result.stdout)["verdict"] == "violation"


# ---- options at and beyond their limits (held-out user review, helper G) -------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["rr", "--seed", "-1"], "--seed"),  # was a numpy traceback, exit 1
        (["rr", "--trials", "100000000000000"], "--trials"),  # was a MemoryError traceback
        (["rr", "--delta", "-0.1"], "--delta"),  # was ignored: the JSON said delta 0
        (["rr", "--delta", "nan"], "--delta"),
        (["rr", "--delta", "1"], "--delta"),
        (["secagg", "--eps", "nan"], "--eps"),  # secagg claims 0 whatever --eps: unchecked
        (["secagg", "--eps", "-1"], "--eps"),
        (["rr", "--only", "rr"], "--only"),  # --only applies to 'all' and 'mutants'
        (["all", "--only", "nope"], "--only"),
        # held-out QA (helper C): silently ignored before
        (["rr", "--jobs", "2"], "--jobs"),  # one audit runs in one process
        (["rr", "--no-tests"], "--no-tests"),  # --tests/--no-tests: 'mutants' only
        (["all", "--only", "rr", "--tests"], "--tests"),
        (["all", "--only", "rr", "--jobs", "0"], "--jobs"),
        # a budget listed twice ran the same audit twice at half the confidence each
        # (gamma is split family-wise over the audits); an empty entry was skipped
        (["all", "--only", "rr", "--eps", "1,1"], "--eps"),
        (["all", "--only", "rr", "--eps", "1,,2"], "--eps"),
    ],
)
def test_options_beyond_their_limits_are_one_sentence_and_exit_2(args, option):
    extra = [] if "--trials" in args else ["--trials", "20"]  # cheap if it ever ran
    result = CliRunner().invoke(_app(), [*args, *extra])
    assert result.exit_code == 2, (args, result.output)
    # the option as typed (``--eps: ...``), as every other command words a refusal; it
    # said the field (``eps: ...``)
    assert result.output.startswith(f"error: {option}: "), result.output
    assert "Traceback" not in result.output and len(result.output.splitlines()) == 1


def test_the_python_api_checks_the_seed_and_the_trials():
    with pytest.raises(ParameterError, match="seed"):
        run_audit("rr", 1.0, trials=20, seed=-1)
    with pytest.raises(ParameterError, match="trials"):
        run_audit("rr", 1.0, trials=10**14)


def test_the_claimed_delta_is_the_one_audited_and_reported():
    """--delta was dropped for every entry but gau-dp (the JSON said delta 0): the bound is
    now ln((alpha_lo - delta) / beta_hi) with the claimed delta, whatever the entry."""
    plain = run_audit("rr", 1.0, trials=400)
    claimed = run_audit("rr", 1.0, delta=0.1, trials=400)
    assert claimed.delta == 0.1
    assert claimed.eps_lb < plain.eps_lb
    assert claimed.eps_lb == pytest.approx(math.log((claimed.alpha_lo - 0.1) / claimed.beta_hi))


def test_too_few_trials_to_find_a_violation_are_said():
    """2 runs per world (1 + 1) can certify at most ln(0.025 / 0.975) < 0: the audit could
    never reach a violation, and the command says so on stderr, with the runs it needs; the
    JSON carries the largest bound the evaluation runs could certify (eps_lb_max)."""
    result = CliRunner().invoke(_app(), ["rr", "--eps", "1", "--trials", "2"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["eps_lb_max"] == pytest.approx(math.log(0.025 / 0.975))
    assert "cannot find a violation" in result.stderr and "--trials >= " in result.stderr
    assert result.stderr.startswith("warning: --trials: "), result.stderr
    needed = int(result.stderr.split("--trials >= ")[1].split()[0].rstrip(")"))
    # the smallest n with ln((gamma/2)^(1/n) / (1 - (gamma/2)^(1/n))) > 1, twice (sel + eval)
    p = math.e / (1 + math.e)
    assert needed == 2 * (math.floor(math.log(0.025) / math.log(p)) + 1)
    enough = CliRunner().invoke(_app(), ["rr", "--eps", "1", "--trials", str(needed)])
    assert "cannot find a violation" not in enough.stderr
    assert json.loads(enough.stdout)["eps_lb_max"] > 1.0


def test_audit_all_only_runs_the_named_entries():
    """`audit all --only NAME` was accepted and ignored: the whole battery ran; and an
    explicit `--eps 1` was taken for the default (0.5,1,2): three budgets ran."""
    result = CliRunner().invoke(
        _app(), ["all", "--only", "rr", "--only", "sw", "--eps", "1", "--trials", "200"]
    )
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [r["mechanism"] for r in rows] == ["rr", "sw"]
    assert all(r["gamma"] == pytest.approx(0.05 / 2) for r in rows)


def test_numpy_numbers_are_numbers():
    """A trials, seed or eps from numpy (np.int64, np.float32) was refused as "must be an
    integer ..., got np.int64(100)"; the same audit as with Python numbers."""
    plain = run_audit("rr", 1.0, trials=100, seed=3)
    numpy_ = run_audit("rr", np.float32(1.0), trials=np.int64(100), seed=np.int64(3))
    assert numpy_.to_dict() == plain.to_dict()


@pytest.mark.parametrize(
    ("option", "value"), [("--eps", "5"), ("--delta", "0.1"), ("--trials", "100"), ("--jobs", "2")]
)
def test_options_audit_mutants_does_not_use_are_refused(option, value):
    """`audit mutants --eps 5` ran the mutation run at its own budgets and said nothing."""
    result = CliRunner().invoke(_app(), ["mutants", "--no-tests", "--only", "rr eps off by 2x",
                                         option, value])  # fmt: skip
    assert result.exit_code == 2, result.output
    assert result.output.startswith(f"error: {option}: 'audit mutants' runs"), result.output


def test_progress_is_honoured_for_one_mechanism():
    """`audit rr --progress` was silently ignored (no line on stderr, helper Q): it now prints
    the one `audit 1 of 1: rr (eps 1)` line, as 'all' does for each audit; --quiet none."""
    shown = CliRunner().invoke(_app(), ["rr", "--eps", "1", "--trials", "200", "--progress"])
    assert shown.exit_code == 0, shown.output
    assert "audit 1 of 1: rr (eps 1)" in shown.stderr
    quiet = CliRunner().invoke(_app(), ["rr", "--eps", "1", "--trials", "200", "--quiet"])
    assert quiet.exit_code == 0 and "audit 1 of 1" not in quiet.stderr
