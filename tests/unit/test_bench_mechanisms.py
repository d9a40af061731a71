"""``ldpfleet bench mechanisms``: every cell present, empirical MSE near the analytic one,
the markdown tables, and the command's exit codes."""

from __future__ import annotations

import json

import numpy as np
import pytest
import typer
from ldpfleet.app.bench_mechanisms import (
    DISTRIBUTIONS,
    bench_mechanisms,
    bench_mechanisms_command,
    markdown,
)
from typer.testing import CliRunner


def test_cells_and_agreement_with_the_analytic_mse():
    result = bench_mechanisms(eps_list=(1.0, 4.0), sizes=(50, 400), trials=800, seed=1)
    rows = result["rows"]
    assert len(rows) == 6 * 2 * len(DISTRIBUTIONS) * 2
    for row in rows:
        assert row["mse"] > 0
        if row["analytic_mse"] is not None:
            # 800 trials: the MSE's relative sd is ~ sqrt(2 / 800) = 5% (more for the
            # heavy-tailed two-point Duchi law); 30% is > 5 sd
            assert row["mse"] == pytest.approx(row["analytic_mse"], rel=0.3), row
    table = markdown(result)
    assert table.count("| uniform | 1 |") == 2 and "| distribution | ε | sw | sw01 |" in table


def test_the_command_prints_json_and_refuses_bad_options():
    app = typer.Typer()
    app.command()(bench_mechanisms_command)
    runner = CliRunner()
    ok = runner.invoke(app, ["--sizes", "20", "--trials", "5", "--eps", "1"])
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["bench"] == "mechanisms"
    for bad in (["--distributions", "nope"], ["--mechanisms", "nope"], ["--eps", "x"]):
        assert runner.invoke(app, bad).exit_code == 2, bad


BAD = "tests.unit.bad_mechanisms"
LEAKY = "tests.unit.leaky_mechanisms"


def test_a_plugin_goes_through_the_contract_check_of_a_scenario_load():
    """``bench mechanisms`` measures only reports a collector would accept: a plugin whose
    reports its own ``in_domain`` rejects is refused in one sentence (its MSE was printed)."""
    from ldpfleet.protocol.errors import ParameterError

    with pytest.raises(ParameterError, match="in_domain rejects its own output"):
        bench_mechanisms(mechanisms=(f"{BAD}:OutOfDomainLater",), eps_list=(1.0,),
                         sizes=(20,), distributions=("uniform",), trials=3)  # fmt: skip
    app = typer.Typer()
    app.command()(bench_mechanisms_command)
    out = CliRunner().invoke(app, ["--mechanisms", f"{BAD}:ReturnsList", "--sizes", "20"])
    assert out.exit_code == 2 and "perturb returned a list" in out.output, out.output


def test_perturb_is_called_on_1d_arrays_as_a_device_calls_it():
    """The contract's ``x`` is what a device passes, a 1-D array: a plugin written with
    ``len(x)`` is measured (the bench passed a (trials, n) array and it broke)."""
    result = bench_mechanisms(mechanisms=(f"{BAD}:OneDimensional",), eps_list=(1.0,),
                              sizes=(30,), distributions=("uniform",), trials=50)  # fmt: skip
    # Laplace(1/eps) noise on 30 inputs: MSE = 2 / (eps^2 n) = 0.067; 50 trials: rel sd 20%
    assert result["rows"][0]["mse"] == pytest.approx(2.0 / 30.0, rel=0.6)


def test_a_plugin_printing_leaves_stdout_to_the_json():
    """A plugin's print() went to stdout before the JSON: ``| jq`` failed to parse it."""
    app = typer.Typer()
    app.command()(bench_mechanisms_command)
    args = ["--mechanisms", f"{BAD}:Prints", "--sizes", "10", "--trials", "3", "--eps", "1"]
    out = CliRunner().invoke(app, [*args, "--distributions", "uniform"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["rows"][0]["mechanism"] == f"{BAD}:Prints"
    assert "building Prints at eps = 1.0" in out.stderr


def test_a_scalar_variance_stands_for_every_input():
    """``variance`` answering one number (Laplace: 2 / eps^2) was summed once, not n times:
    the analytic MSE came out n times too small (0.002 / 100 instead of 0.02 at eps 1)."""
    rows = bench_mechanisms(mechanisms=(f"{BAD}:ScalarVariance",), eps_list=(1.0,),
                            sizes=(100,), distributions=("uniform",), trials=5)["rows"]  # fmt: skip
    assert rows[0]["analytic_mse"] == pytest.approx(2.0 / 100)
    from ldpfleet.protocol.errors import ParameterError

    with pytest.raises(ParameterError, match="variance must answer one finite value >= 0"):
        bench_mechanisms(mechanisms=(f"{BAD}:VarianceWrongShape",), eps_list=(1.0,),
                         sizes=(10,), distributions=("uniform",), trials=2)  # fmt: skip


def test_a_biased_estimate_mean_is_flagged_and_honest_ones_are_not():
    """The bench showed the MSE of a plugin whose ``estimate_mean`` is off by 0.05 but did
    not say it is biased. The t-test's threshold is the t quantile for a false-flag rate of
    1e-6 per row (``bias_test``), so each honest row below is flagged with probability
    <= ~1e-6 (fixed seed: a fixed outcome). The biased plugin's mean error 0.05 is ~15
    standard errors at n = 1000, eps = 1, 200 trials (sd of one estimate
    sqrt(2 / eps^2 / n) = 0.045, over sqrt(200)) against a threshold of 5.05."""
    honest = bench_mechanisms(
        mechanisms=("duchi", "piecewise", "hybrid", "laplace", "sw", f"{LEAKY}:HonestGridLaplace"),
        eps_list=(1.0,), sizes=(1000,), distributions=("uniform", "skewed"), trials=200,
    )  # fmt: skip
    assert [r for r in honest["rows"] if r["biased"]] == []
    assert all(abs(r["bias_z"]) < 5.0 for r in honest["rows"])
    biased = bench_mechanisms(
        mechanisms=(f"{LEAKY}:BiasedMean",), eps_list=(1.0,), sizes=(1000,),
        distributions=("uniform",), trials=200,
    )  # fmt: skip
    row = biased["rows"][0]
    assert (
        row["biased"] and row["bias_z"] > 10 and row["mean_error"] == pytest.approx(0.05, abs=0.02)
    )


def test_the_command_warns_on_stderr_and_keeps_stdout_json():
    app = typer.Typer()
    app.command()(bench_mechanisms_command)
    out = CliRunner().invoke(
        app, ["--mechanisms", f"duchi,{LEAKY}:BiasedMean", "--eps", "1", "--sizes", "1000",
              "--distributions", "uniform", "--trials", "100"],
    )  # fmt: skip
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)["rows"]
    assert [r["biased"] for r in rows] == [False, True]
    assert "BiasedMean at eps 1, uniform, n = 1000: estimate_mean looks biased" in out.stderr
    assert "duchi" not in out.stderr


def test_a_deterministic_estimate_is_flagged_only_when_off():
    from ldpfleet.app.bench_mechanisms import bias_test

    assert bias_test(np.zeros(10)) == {"mean_error": 0.0, "bias_z": 0.0, "biased": False}
    off = bias_test(np.full(10, 0.1))
    assert off["biased"] and off["bias_z"] == "inf"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--sizes", "0"], "error: --sizes: must be whole numbers 1 .. 10,000,000, got '0'"),
        (["--sizes", "1.5"], "got '1.5'"),  # was measured at n = 1
        (["--sizes", "-3"], "error: --sizes: "),  # "expected non-negative integer"
        (["--sizes", "1e12"], "error: --sizes: "),  # a MemoryError traceback
        (["--eps", ""], "error: --eps: needs at least one value"),  # an empty result, exit 0
        (["--mechanisms", ""], "error: --mechanisms: needs at least one value"),
        (["--eps", "1,,2"], "error: --eps: an empty entry"),
        (["--mechanisms", "sw,sw"], "error: --mechanisms: 'sw' is listed twice"),
        (["--distributions", "uniform,uniform"], "error: --distributions: 'uniform' is listed"),
        (["--trials", "0"], "error: --trials: must be at least 2"),  # NaN rows, exit 0
        (["--trials", "-1"], "error: --trials: must be at least 2"),  # "negative dimensions"
        (["--seed", "-1"], "error: --seed: must be 0 .. 2^63-1, got -1"),  # no field named
        (["--eps", "x"], "error: --eps: not a number: 'x'"),
        # helper Q: a MemoryError traceback (a 745 GiB error array), and a cell of 1e10
        # privatisations that runs for hours
        (["--trials", "100000000000"], "error: --trials: must be at most 1,000,000"),
        (["--trials", "1000000", "--sizes", "10000"], "error: --trials: trials x largest size"),
    ],
)
def test_options_nobody_tried_are_one_sentence_and_exit_2(args, needle):
    """Held-out QA (helper C): each was a traceback, an unnamed numpy message, or a result
    (exit 0) of a meaningless request."""
    app = typer.Typer()
    app.command()(bench_mechanisms_command)
    base = {"--sizes": "10", "--trials": "5", "--eps": "1", "--mechanisms": "sw",
            "--distributions": "uniform"}  # fmt: skip
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    result = CliRunner().invoke(app, [part for pair in base.items() for part in pair])
    assert result.exit_code == 2, result.output
    assert needle in result.output, result.output
    assert "Traceback" not in result.output and len(result.output.splitlines()) == 1


def test_close_budgets_draw_independent_noise():
    """Budgets within 0.001 of each other were keyed to one generator (int(eps * 1000)),
    so their cells drew the same uniforms and their errors were not independent."""
    from ldpfleet.app.bench_mechanisms import cell_generator

    first = cell_generator(1, 0, 50, 0, 1.0001).random(8)
    second = cell_generator(1, 0, 50, 0, 1.0002).random(8)
    assert not np.array_equal(first, second)
    assert np.array_equal(first, cell_generator(1, 0, 50, 0, 1.0001).random(8))
