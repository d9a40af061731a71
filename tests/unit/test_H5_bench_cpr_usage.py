"""`python -m ldpfleet.app.bench_cpr` without a known subcommand: one usage sentence and exit
2 (it ended in IndexError, a traceback, with no argument; helper H, 2026-12-07)."""

import subprocess
import sys

import pytest


@pytest.mark.parametrize("argv", [[], ["bogus"]])
def test_bench_cpr_module_without_a_subcommand_says_its_usage(argv):
    done = subprocess.run(
        [sys.executable, "-m", "ldpfleet.app.bench_cpr", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "usage: python -m ldpfleet.app.bench_cpr false-claims" in done.stderr
    assert "Traceback" not in done.stderr
