"""Held-out CLI QA (helper Q): ``ldpfleet audit`` options. Old behaviour: ``--seed 10^23``
ran (``ldpfleet run`` refuses seeds over 2^63-1); ``--jobs 100000`` made
ProcessPoolExecutor fork 100,000 workers (the fork start method launches max_workers at
once); ``audit laplce`` listed 28 names without pointing at ``laplace``. Every case is
refused before an audit runs (errors name the option, ``--eps: reason``, as test_audit.py
pins)."""

from __future__ import annotations

import pytest
from ldpfleet.app.audit_cli import JOBS_MAX
from ldpfleet.app.cli import app
from typer.testing import CliRunner


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["laplace", "--eps", "nan"], "error: --eps: must be a number in [1e-12, 50], or 0 "
         "for an audit that claims nothing leaks (secagg, secagg-split, secagg-dropout), "
         "got nan"),
        (["laplace", "--eps", "1e300"], "error: --eps: must be a number in [1e-12, 50], or 0 "
         "for an audit that claims nothing leaks (secagg, secagg-split, secagg-dropout), "
         "got 1e+300"),
        (["laplace", "--eps", "1,2"], "error: --eps: one budget per mechanism"),
        (["all", "--eps", "1,1"], "error: --eps: '1' is listed twice"),
        (["laplace", "--gamma", "nan"], "error: --gamma: must be in (0, 1), got nan"),
        (["laplace", "--delta", "2"], "error: --delta: must be in [0, 1), got 2.0"),
        (["laplace", "--trials", "0"], "error: --trials: must be an integer in [2, 10,000,000]"),
        (["laplace", "--seed", "-1"], "error: --seed: must be an integer in 0 .. 2^63-1"),
        (["laplace", "--seed", str(10**23)], f"error: --seed: must be an integer in 0 .. "
         f"2^63-1, got {10**23}"),
        (["all", "--jobs", "0"], f"error: --jobs: must be an integer in 1 .. {JOBS_MAX}"),
        (["all", "--jobs", "100000"], f"error: --jobs: must be an integer in 1 .. {JOBS_MAX}, "
         "got 100000"),
        (["laplce"], "(did you mean 'laplace'?)"),
        (["all", "--only", "laplce"], "error: --only: must be battery entries"),
        (["all", "--only", "laplce"], "(did you mean 'laplace'?)"),
        (["mutants", "--only", "laplace eps off by 3x"], "error: --only: unknown mutant"),
        (["mutants", "--only", "laplace eps off by 3x"], "(did you mean 'laplace eps off"),
    ],
)  # fmt: skip
def test_audit_refuses_naming_the_option(args, line):
    out = CliRunner().invoke(app, ["audit", *args])
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output
    assert line in " ".join(out.output.split()), out.output


def test_a_far_name_gets_no_suggestion():
    out = CliRunner().invoke(app, ["audit", "zzzzzz"])
    assert out.exit_code == 2 and "did you mean" not in out.output
