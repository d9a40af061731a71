"""``bench cadr`` / ``bench cadr-sweep`` refusals name the option as typed, and a misspelt
graph or broker gets a did-you-mean (helper R: ``bench cadr --graph facebok`` said
``graph: ...``; ``bench cadr-sweep`` said ``methods:``, ``eps:`` for ``--eps-list``, and
``--seed -1`` ended in a numpy ``ValueError`` traceback; ``-b memroy`` had no suggestion).
"""

from __future__ import annotations

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

SMALL = ["--graph", "barabasi_albert:n=50,m=2"]


def _error(args: list[str]) -> str:
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, (result.exit_code, result.output)
    assert "Traceback" not in result.output
    return " ".join(result.stderr.split())


def test_bench_cadr_names_graph_and_suggests():
    said = _error(["bench", "cadr", "--graph", "facebok"])
    assert said.startswith("error: --graph: cannot read the edge list 'facebok'"), said
    assert said.endswith("(did you mean 'facebook'?)"), said


@pytest.mark.parametrize(
    ("args", "start"),
    [
        (["--graph", "facebok"], "error: --graph: cannot read the edge list 'facebok'"),
        ([*SMALL, "--methods", "xx"], "error: --methods: 'xx' is not one of ll, lh, ra, er"),
        ([*SMALL, "--thetas", "abc"], "error: --thetas: 'abc' is not an integer"),
        ([*SMALL, "--eps", "-1"], "error: --eps: must be finite and > 0, got -1.0"),
        ([*SMALL, "--eps-list", "0,1"], "error: --eps-list: budgets must be in [0.001, 50]"),
        ([*SMALL, "--runs", "0"], "error: --runs: must be >= 1, got 0"),
        ([*SMALL, "--alpha", "2"], "error: --alpha: must satisfy 0 < alpha < 1, got 2.0"),
        ([*SMALL, "--seed", "-1"], "error: --seed: must be an integer in 0 .. 2^63-1, got -1"),
    ],
)
def test_bench_cadr_sweep_names_the_option(args, start):
    said = _error(["bench", "cadr-sweep", *args])
    assert said.startswith(start), said


@pytest.mark.parametrize(
    ("broker", "suggestion"),
    [("memroy", "memory"), ("embeded", "embedded"), ("mqts://h:1", "mqtts://")],
)
def test_a_misspelt_broker_gets_a_did_you_mean(tmp_path, broker, suggestion):
    said = _error(["run", "quickstart", "-b", broker, "-o", str(tmp_path / "out")])
    assert said.endswith(f"(did you mean {suggestion!r}?)"), said
    assert not (tmp_path / "out").exists()
