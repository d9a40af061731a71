"""Helper F's user trial (issue 20): bad ``bench cadr`` input the trial met, each one
sentence with exit status 2, and ``private_run``'s refusals typed (``ParameterError``
naming the field, the limit and the value).

``bench cadr --theta auto-sum`` under the default dp pipeline printed a ``ValueError``
traceback (exit 1) in process, while ``--transport memory`` refused it in one sentence."""

from __future__ import annotations

import pytest
from ldpfleet.app.cli import app
from ldpfleet.collector.cadr_reference import private_run
from ldpfleet.devices.graphs import load_graph
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

GRAPH = "barabasi_albert:n=40,m=2,seed=3"


@pytest.mark.parametrize("transport", ["reference", "memory"])
def test_auto_sum_under_dp_is_one_sentence_on_every_transport(transport):
    out = CliRunner().invoke(
        app,
        ["bench", "cadr", "--graph", GRAPH, "--theta", "auto-sum", "--runs", "1",
         "--transport", transport],
    )  # fmt: skip
    text = out.output
    assert out.exit_code == 2, text
    assert "Traceback" not in text and "auto-sum" in text and "paper" in text


def test_auto_sum_under_paper_still_runs():
    out = CliRunner().invoke(
        app,
        ["bench", "cadr", "--graph", GRAPH, "--theta", "auto-sum", "--runs", "1",
         "--pipeline", "paper"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    assert '"pipeline": "paper"' in out.output


@pytest.mark.parametrize(
    ("args", "field", "value"),
    [
        (("ll", "auto-sum", "dp"), "theta", "auto-sum"),
        (("zz", "auto-dev", "dp"), "method", "zz"),
        (("ll", "auto-dev", "fast"), "pipeline", "fast"),
    ],
)
def test_private_run_refusals_are_typed(args, field, value):
    method, rule, pipeline = args
    with pytest.raises(ParameterError) as caught:
        private_run(load_graph(GRAPH), method, rule, 3.0, 0.1, 0, pipeline=pipeline)
    error = caught.value
    assert error.field == field and error.value == value and error.limit
    assert str(error).startswith(f"{field}: ")


def test_a_mistyped_generator_kind_names_the_kind_it_is_close_to():
    out = CliRunner().invoke(app, ["bench", "cadr", "--graph", "erdos_reny:n=100,p=0.1"])
    assert out.exit_code == 2, out.output
    assert "did you mean 'erdos_renyi'?" in out.output and "Traceback" not in out.output
    far = CliRunner().invoke(app, ["bench", "cadr", "--graph", "stochastic_block:n=100"])
    assert far.exit_code == 2 and "did you mean" not in far.output
    named = CliRunner().invoke(app, ["bench", "cadr", "--graph", "facebok"])
    assert named.exit_code == 2 and "did you mean 'facebook'?" in named.output


def test_a_private_bench_says_where_its_release_stands(tmp_path):
    """``verdict``: the sentence ``ldpfleet run`` prints, in the bench JSON too; a paper
    release worse than all zeros is sent to "Pipelines", not to "How small a graph?"."""
    import json

    from ldpfleet.app.cadr_report import verdict

    star = tmp_path / "k3.txt"  # K(3, 60): the paper pipeline's raw release at ε = 1
    star.write_text("".join(f"{h} {100 + k}\n" for h in range(3) for k in range(60)))
    out = CliRunner().invoke(
        app,
        ["bench", "cadr", "--graph", str(star), "--eps", "1", "--runs", "1", "--pipeline",
         "paper"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    base = result["baselines"]
    expected = verdict(
        result["mae"], base["constant_median_oracle"]["mae"], base["all_zero"]["mae"], "paper"
    )
    assert result["verdict"] == expected and expected.startswith("The released sequence")
    worse = verdict(6.0, 2.9, 5.9, "paper")
    assert '"Pipelines"' in worse and "How small" not in worse
    assert "How small a graph?" in verdict(6.0, 2.9, 5.9, "dp")
    private = CliRunner().invoke(app, ["bench", "cadr", "--graph", str(star), "--runs", "1",
                                       "--non-private", "--theta", "3"])  # fmt: skip
    assert private.exit_code == 0 and "verdict" not in json.loads(private.output)
