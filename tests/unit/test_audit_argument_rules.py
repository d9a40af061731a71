"""One rule per audit argument, in one place: ``ldpfleet.run_audit`` (the public Python
API), ``collector.audit.battery.run_audit``, ``app.audit_cli.audit_all`` and the command
``ldpfleet audit`` refuse the same values with the same typed error (``ParameterError``
naming the field, the limit and the value; the command prints it as ``error: --option:
...`` and exits 2), and ``audit all`` refuses before it runs any audit.

Before: ``run_audit(seed=2**63)`` (and 10**23) ran where the command refused ("must be an
integer in 0 .. 2^63-1"); ``audit all --gamma 1.5`` ran every audit at gamma 1.5 / m (0.5
with three budgets) because the family's gamma was divided before anything checked it;
``audit all --only gau-dp --delta -1`` audited at delta 1e-5 (the Gau-DP floor replaced
the refused value); ``audit all --eps 1,-1`` ran the audits at 1 before refusing -1;
``run_audit(123, 1.0)`` was a TypeError ("argument of type 'int' is not iterable")."""

from __future__ import annotations

import math

import pytest
import typer
from ldpfleet.app import audit_cli
from ldpfleet.collector.audit import battery
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

import ldpfleet

# (field, value as the library gets it, the same value on the command line)
BAD = [
    ("seed", 2**63, str(2**63)),
    ("seed", 10**23, str(10**23)),
    ("seed", -1, "-1"),
    ("gamma", 0.0, "0"),
    ("gamma", 1.0, "1"),
    ("gamma", 1.5, "1.5"),
    ("gamma", math.nan, "nan"),
    ("delta", -1.0, "-1"),
    ("delta", 1.0, "1"),
    ("delta", math.nan, "nan"),
    ("trials", 1, "1"),
    ("trials", 10**8, str(10**8)),
    ("eps", -1.0, "-1"),
    ("eps", math.inf, "inf"),
]


def _library_error(call, field: str, value) -> ParameterError:
    kwargs = {"eps": 1.0, field: value} if field != "eps" else {"eps": value}
    with pytest.raises(ParameterError) as error:
        call("rr", **kwargs)
    assert error.value.field == field
    return error.value


def _cli(args: list[str]):
    app = typer.Typer()
    app.command()(audit_cli.audit_command)
    return CliRunner().invoke(app, args)


@pytest.fixture
def nothing_runs(monkeypatch):
    """Any audit that starts fails the test: refusals come before the work."""

    def refuse(*args, **kwargs):
        raise AssertionError("an audit ran before the arguments were checked")

    monkeypatch.setattr(battery, "audit_spec", refuse)


@pytest.mark.parametrize(("field", "value", "typed"), BAD)
def test_the_library_and_the_command_refuse_alike(field, value, typed, nothing_runs):
    """Fails on the old code for the seeds above 2^63-1 (the library ran them) and, for
    ``all``, gamma >= 1 and delta < 0 with gau-dp (ran)."""
    public = _library_error(lambda m, **kw: ldpfleet.run_audit(m, **kw), field, value)
    inner = _library_error(battery.run_audit, field, value)
    assert public.reason == inner.reason
    assert repr(value) in public.reason or str(value) in public.reason
    option = f"--{field}"
    one = _cli(["rr", option, typed, "--quiet"])
    assert one.exit_code == 2, one.output
    assert one.output.strip().splitlines()[-1] == f"error: {option}: {public.reason}"
    entry = "gau-dp" if field == "delta" else "rr"
    every = _cli(["all", "--only", entry, option, typed, "--jobs", "1", "--quiet"])
    assert every.exit_code == 2, every.output
    last = every.output.strip().splitlines()[-1]
    assert last.startswith(f"error: {option}: "), last
    if field != "eps":  # 'all' parses a list, whose entries are floats
        assert last == f"error: {option}: {public.reason}"


def test_audit_all_refuses_a_family_gamma_of_one_or_more_before_dividing(nothing_runs):
    """Fails on the old code: gamma 1.5 over 3 audits ran each at 0.5."""
    with pytest.raises(ParameterError) as error:
        audit_cli.audit_all((0.5, 1.0, 2.0), trials=20, gamma=1.5, seed=0, mechanisms=("rr",))
    assert error.value.field == "gamma" and "got 1.5" in error.value.reason


def test_audit_all_refuses_a_negative_delta_for_gau_dp_too(nothing_runs):
    """Fails on the old code: max(-1, 1e-5) audited Gau-DP at delta 1e-5."""
    with pytest.raises(ParameterError) as error:
        audit_cli.audit_all((1.0,), trials=20, gamma=0.05, seed=0, delta=-1.0,
                            mechanisms=("gau-dp",))  # fmt: skip
    assert error.value.field == "delta"


def test_audit_all_checks_every_budget_before_the_first_audit(nothing_runs):
    """Fails on the old code: the audit at eps 1 ran, then -1 was refused."""
    with pytest.raises(ParameterError) as error:
        audit_cli.audit_all((1.0, -1.0), trials=20, gamma=0.05, seed=0, mechanisms=("rr",))
    assert error.value.field == "eps" and "got -1.0" in error.value.reason


@pytest.mark.parametrize("mechanism", [123, None, b"rr", ""])
def test_a_mechanism_that_is_not_a_name_is_a_typed_error(mechanism):
    """Fails on the old code: ``TypeError: argument of type 'int' is not iterable``."""
    for call in (ldpfleet.run_audit, battery.run_audit):
        with pytest.raises(ParameterError) as error:
            call(mechanism, 1.0)
        assert error.value.field == "mechanism"
        assert repr(mechanism) in error.value.reason


def test_the_seed_limit_is_the_one_of_ldpfleet_run():
    from ldpfleet.collector.audit.stats import SEED_MAX, check_seed

    assert SEED_MAX == 2**63 - 1 == audit_cli.SEED_MAX
    assert check_seed(SEED_MAX) == SEED_MAX
    with pytest.raises(ParameterError, match=r"must be an integer in 0 \.\. 2\^63-1, got "):
        check_seed(SEED_MAX + 1)
    audit_cli.check_seed(SEED_MAX)  # the command's (and bench cadr-sweep's) name for it
    with pytest.raises(ParameterError):
        audit_cli.check_seed(SEED_MAX + 1)


def test_audit_mutants_checks_its_seed_before_planting_anything(monkeypatch):
    """Fails on the old code: the first mutant was planted and its audit started."""
    from ldpfleet.collector.audit import mutants

    def refuse(*args, **kwargs):
        raise AssertionError("a mutant ran before the seed was checked")

    monkeypatch.setattr(mutants, "run_mutant", refuse)
    with pytest.raises(ParameterError) as error:
        audit_cli.audit_mutants(("rr eps off by 2x",), tests=False, seed=2**63)
    assert error.value.field == "seed" and "2^63-1" in error.value.reason
