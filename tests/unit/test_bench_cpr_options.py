"""Held-out CLI QA (helper Q): ``ldpfleet bench cpr`` options refused up front, each in one
line ``error: --OPTION: ...`` naming the limit and the value, exit status 2.

Old behaviour: ``--eps 1 --eps 1`` ran every cell twice (two identical columns);
``--w 100000 --n 200`` printed accuracy 0.0 for every cell; ``--cosine-w`` longer than
``--n`` ran; ``--trials`` / ``--fleet-streams`` 10^11 ran without end; ``--n 10^12`` was a
MemoryError traceback; ``--grid`` silently ignored ``--eps``, ``--n`` ... and ``--grid-*``
options were silently ignored without ``--grid``. Every case here is refused before any
cell runs (the checks only: no test waits on a bench)."""

from __future__ import annotations

import pytest
from ldpfleet.app.bench_cpr import (
    MAX_FLEET_STREAMS,
    MAX_LENGTH,
    MAX_TRIALS,
    check_bench_args,
    check_datasets,
    grid_cells,
)
from ldpfleet.app.cli import app
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

BIG = 10**11


@pytest.mark.parametrize(
    ("change", "field", "text"),
    [
        ({"detection_eps": (1.0, 1.0)}, "eps", "got 1.0 and 1.0"),
        ({"detection_eps": (1.0, 1.0000001)}, "eps", "6 significant digits"),
        ({"cosine_eps": (2.0, 2.0)}, "cosine_eps", "got 2.0 and 2.0"),
        ({"detection_w": (5, 5)}, "w", "got 5 and 5"),
        ({"detection_w": (100_000,), "n": 200}, "w", "<= --n (200)"),
        ({"cosine_w": 301, "n": 300}, "cosine_w", "<= --n (300), "),
        ({"trials": BIG}, "trials", f"<= {MAX_TRIALS:,}, got {BIG}"),
        ({"fleet_streams": BIG}, "fleet_streams", f"<= {MAX_FLEET_STREAMS:,}, got {BIG}"),
        ({"n": 10**12}, "n", f"<= {MAX_LENGTH:,}, got {10**12}"),
        ({"seed": 2**63}, "seed", f"got {2**63}"),
    ],
)
def test_check_bench_args_refuses(change, field, text):
    args = {"detection_eps": (1.0,), "detection_w": (5,), "n": 300, **change}
    with pytest.raises(ParameterError) as info:
        check_bench_args(**args)
    assert info.value.field == field and text in str(info.value), info.value


def test_limits_themselves_are_accepted():
    check_bench_args(
        detection_eps=(1.0, 2.0),
        detection_w=(5, 300),
        cosine_w=300,
        n=300,
        trials=MAX_TRIALS,
        fleet_streams=MAX_FLEET_STREAMS,
        seed=2**63 - 1,
    )


def test_datasets_known_and_once():
    with pytest.raises(ParameterError, match="'darwin' and 'darwin'"):
        check_datasets(("darwin", "darwin"))
    with pytest.raises(ParameterError, match="'nope' is not one of"):
        check_datasets(("nope",))


@pytest.mark.parametrize(
    ("change", "field"),
    [({"shapes": [(24, 10), (24, 10)]}, "grid_shape"),
     ({"sources": ["darwin", "darwin"]}, "grid_source"),
     ({"eps0": [1.0, 1.0]}, "grid_eps0"), ({"eps0": [60.0]}, "grid_eps0")],
)  # fmt: skip
def test_grid_cells_refuse_repeats_and_budgets_over_the_maximum(change, field):
    with pytest.raises(ParameterError) as info:
        grid_cells(**change)
    assert info.value.field == field


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (["--eps", "1", "--eps", "1"], "error: --eps: each value once"),
        (["--w", "100000", "--n", "200"], "error: --w: must be <= --n (200)"),
        (["--cosine-w", "400", "--n", "300"], "error: --cosine-w: must be <= --n (300)"),
        (["--trials", str(BIG)], f"error: --trials: must be an integer <= 10,000, got {BIG}"),
        (["--fleet-streams", str(BIG)], "error: --fleet-streams: must be an integer <= 10,000"),
        (["--n", str(10**12)], "error: --n: must be an integer <= 1,000,000"),
        (["--dataset", "music", "--dataset", "music"], "error: --dataset: each value once"),
        (["--dataset", "nope"], "error: --dataset: 'nope' is not one of"),
        (["--seed", str(2**63)], "error: --seed: must be an integer <= "),
        (["--grid", "--eps", "1"], "error: --eps: --grid runs only the period grid"),
        (["--grid", "--n", "500"], "error: --n: --grid runs only the period grid"),
        (["--grid-trials", "5"], "error: --grid-trials: applies to --grid only"),
        (["--grid-eps0", "1"], "error: --grid-eps0: applies to --grid only"),
        (["--grid", "--grid-trials", str(BIG)], "error: --grid-trials: must be an integer <="),
        (["--grid", "--aperiodic-trials", str(BIG)], "error: --aperiodic-trials: must be"),
        (["--grid", "--grid-eps0", "1", "--grid-eps0", "1"], "error: --grid-eps0: each value"),
        (["--grid", "--grid-shape", "24,2"], "error: --grid-shape: must be an integer >= 3"),
    ],
)
def test_the_command_names_the_option_and_exits_2(args, line):
    out = CliRunner().invoke(app, ["bench", "cpr", *args])
    assert out.exit_code == 2, out.output
    assert "Traceback" not in out.output
    assert line in " ".join(out.output.split()), out.output
