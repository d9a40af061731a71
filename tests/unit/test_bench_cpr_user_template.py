"""``ldpfleet bench cpr --grid --grid-template FILE[:COLUMN]`` (helper H): the period grid on
a user's own data. The column's values are ONE cycle, used exactly as a record of a built-in
data-set source (scaled to [0, 1], resampled to each grid period, tiled by ``grid_stream``).

Old behaviour: only the 11 built-in templates could run (``--grid-source``); a researcher
with a CSV of their own had no way in. Every test here fails on the old code
(``load_grid_template``, ``GridTemplate`` and ``templates=`` did not exist). Grids are tiny
(2 trials, one shape, one budget, one aperiodic trial) so they run in seconds."""

from __future__ import annotations

import gzip
import inspect
import re

import numpy as np
import pytest
from ldpfleet.app import cli
from ldpfleet.app.bench_cpr import (
    GridTemplate,
    _grid_cell,
    bench_period_grid,
    grid_cells,
    grid_stream,
    grid_template,
    load_grid_template,
)
from ldpfleet.devices.sources import clear_table_cache
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

CYCLE = [1.0, 3.0, 7.0, 4.0, 2.0, 1.5]


@pytest.fixture(autouse=True)
def _fresh_tables():
    clear_table_cache()  # tmp files of one name but new contents between tests
    yield
    clear_table_cache()


def _csv(tmp_path, text: str, name: str = "load.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def _load_csv(tmp_path):
    rows = "\n".join(f"{h},{v},{10 - v}" for h, v in enumerate(CYCLE))
    return _csv(tmp_path, f"hour,load,spare\n{rows}\n")


# -- reading: the scenarios' reader, header or none, CSV / TSV / plain / gzip ------------------


def test_column_by_name_index_and_default(tmp_path):
    path = _load_csv(tmp_path)
    by_name = load_grid_template(f"{path}:load")
    assert by_name.name == "load:load" and by_name.cycle.tolist() == CYCLE
    by_index = load_grid_template(f"{path}:1")  # 0-based among the numeric columns
    assert by_index.name == "load:load" and by_index.cycle.tolist() == CYCLE
    first = load_grid_template(str(path))  # no column: the first numeric one
    assert first.name == "load:hour" and first.cycle.tolist() == [0, 1, 2, 3, 4, 5]


def test_plain_numbers_tsv_and_gzip(tmp_path):
    plain = _csv(tmp_path, "".join(f"{v}\n" for v in CYCLE), "plain.txt")
    assert load_grid_template(str(plain)).cycle.tolist() == CYCLE
    assert load_grid_template(str(plain)).name == "plain:0"
    tsv = _csv(tmp_path, "a\tb\n" + "".join(f"{v}\t{-v}\n" for v in CYCLE), "t.tsv")
    assert load_grid_template(f"{tsv}:b").cycle.tolist() == [-v for v in CYCLE]
    packed = tmp_path / "day.csv.gz"
    packed.write_bytes(gzip.compress(("x\n" + "".join(f"{v}\n" for v in CYCLE)).encode()))
    template = load_grid_template(f"{packed}:x")
    assert template.name == "day:x" and template.cycle.tolist() == CYCLE


# -- refusals: typed, on grid_template, naming the spec, the column / line and the value ------


@pytest.mark.parametrize(
    ("text", "column", "expected"),
    [
        ("v\n1\n2\nNaN\n4\n", "v", ["missing value 'NaN'", "column 'v'", "line 4"]),
        ("v\n1\n2\nabc\n4\n", "v", ["non-numeric value 'abc'", "column 'v'", "line 4"]),
        ("v\n1\ninf\n4\n", "v", ["non-numeric value 'inf'", "line 3"]),
        ("v,w\n1,2\n3,4\n", "nope", ["'nope' not in header", "columns: v, w"]),
        ("v,w\n1,2\n3,4\n", "7", ["index 7 out of range"]),
        ("v\n5\n", "v", ["at least 2 numbers, got 1", "[5.0]"]),
        ("v\n2.5\n2.5\n2.5\n", "v", ["every one of its 3 values is 2.5", "constant"]),
        ("v\n", "v", ["header but no data rows"]),
        ("v,w\n1,2\n3,4\n", "", ["column after ':' is empty"]),
    ],
)
def test_bad_templates_are_refused(tmp_path, text, column, expected):
    path = _csv(tmp_path, text, "bad.csv")
    spec = f"{path}:{column}"
    with pytest.raises(ParameterError) as info:
        load_grid_template(spec)
    error = info.value
    assert error.field == "grid_template", error
    assert str(error).startswith(f"grid_template: {spec!r}: "), error
    for part in expected:
        assert part in str(error), error
    assert "source.missing" not in str(error)  # the scenarios' option, not the grid's


def test_missing_file_and_same_name_twice(tmp_path):
    with pytest.raises(ParameterError, match=r"file not found: .*nothing\.csv") as info:
        load_grid_template(str(tmp_path / "nothing.csv:v"))
    assert info.value.field == "grid_template"
    path = _load_csv(tmp_path)
    (tmp_path / "other").mkdir()
    twin = _csv(tmp_path / "other", path.read_text())  # another folder, same stem
    with pytest.raises(ParameterError, match="both named 'load:load'") as info:
        grid_cells([(8, 3)], None, [5.0], [f"{path}:load", f"{twin}:load"])
    assert info.value.field == "grid_template"


@pytest.mark.parametrize(
    ("cycle", "text"),
    [
        ([1.0, float("nan"), 2.0], "value 1 (0-based) is nan: need finite numbers"),
        ([[1.0, 2.0], [3.0, 4.0]], "must be 1-D, got shape (2, 2)"),
        (["a", "b"], "must be numbers"),
        ([3.0, 3.0], "every one of its 2 values is 3"),
        ([1.0], "at least 2 numbers, got 1"),
    ],
)
def test_a_template_built_in_python_is_checked_too(cycle, text):
    with pytest.raises(ParameterError, match=re.escape(text)) as info:
        GridTemplate("mine:v", cycle)
    assert info.value.field == "grid_template" and "'mine:v'" in str(info.value)


# -- used exactly as a built-in record: scaled, resampled, tiled ------------------------------


def test_template_is_scaled_and_resampled_as_a_record():
    template = GridTemplate("t:v", np.array(CYCLE))
    scaled = (np.array(CYCLE) - 1.0) / 6.0
    rng = np.random.default_rng(1)
    assert np.array_equal(grid_template(template, 6, rng), scaled)  # native length: as is
    doubled = grid_template(template, 12, rng)  # periodic linear interpolation
    assert np.allclose(doubled[::2], scaled)
    assert np.allclose(doubled[1::2], (scaled + np.roll(scaled, -1)) / 2)
    stream = grid_stream(doubled, 12 * 4, rng, jitter=0.0)
    assert np.array_equal(stream, np.tile(doubled, 4))  # tiled: the true period is 12


def test_cells_run_only_the_templates_unless_sources_are_named(tmp_path):
    spec = f"{_load_csv(tmp_path)}:load"
    only = grid_cells([(8, 3), (25, 12)], None, [5.0], [spec])
    assert {c[0].name for c in only} == {"load:load"}
    # the same cells as a built-in source: (8, 3) and (25, 12) with its 2 drift variants
    assert [c[1:] for c in only] == [
        c[1:] for c in grid_cells([(8, 3), (25, 12)], ["square"], [5.0])
    ]
    both = grid_cells([(8, 3)], ["square"], [5.0], [spec])
    assert [getattr(c[0], "name", c[0]) for c in both] == ["square", "load:load"]


def test_grid_rows_carry_the_template_name_and_are_reproducible(tmp_path):
    spec = f"{_load_csv(tmp_path)}:load"
    result = bench_period_grid(
        trials=2, aperiodic_trials=1, shapes=[(8, 3)], eps0=[5.0], templates=[spec], workers=1
    )
    (row,) = result["grid"]
    assert row["source"] == "load:load" and (row["period"], row["cycles"]) == (8, 3)
    assert set(row["accuracy"]) == {"detect_period", "folded_variance", "autocorrelation"}
    assert len(result["aperiodic"]) == 20  # the false-claim cells still run (5 kinds x 4 n)
    cell = (load_grid_template(spec), 8, 3, 5.0, 0.02, 0.0, 2, 0)
    assert _grid_cell(cell) == row  # same name, same seed: the same trials


# -- the command line (needs the app/cli.py patch of helper H's report) -----------------------

needs_cli = pytest.mark.skipif(
    "grid_template" not in inspect.signature(cli.bench_cpr_command).parameters,
    reason="app/cli.py has no --grid-template yet (helper H's patch)",
)


@needs_cli
def test_cli_refuses_a_bad_template_in_one_line(tmp_path):
    path = _csv(tmp_path, "v\n1\nabc\n3\n", "bad.csv")
    result = CliRunner().invoke(cli.app, ["bench", "cpr", "--grid", "--grid-template", f"{path}:v"])
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: --grid-template: '{path}:v': non-numeric value 'abc'"), line
    assert "line 3" in line


@needs_cli
def test_cli_grid_template_needs_grid(tmp_path):
    path = _load_csv(tmp_path)
    result = CliRunner().invoke(cli.app, ["bench", "cpr", "--grid-template", str(path)])
    assert result.exit_code == 2 and "--grid-template" in result.output, result.output


@needs_cli
def test_cli_errors_print_colon_words_verbatim():
    """A value such as 'nope:smile:' was read as rich emoji codes ('nope😄'); the same
    app/cli.py patch prints errors with emoji=False."""
    result = CliRunner().invoke(cli.app, ["bench", "cpr", "--grid", "--grid-source", "nope:smile:"])
    assert result.exit_code == 2 and "'nope:smile:' is not one of" in result.output, result.output


# -- a column name holding ':' (issue 19, helper A): FILE:COLUMN splits after the file ---------


def _colon_csv(tmp_path, name: str = "meter.csv"):
    rows = "\n".join(f"{h},{v}" for h, v in enumerate(CYCLE))
    return _csv(tmp_path, f"time:s,load:kW\n{rows}\n", name)


def test_a_column_name_with_colons_is_named(tmp_path):
    # main split at the LAST ':' only, so "meter.csv:load:kW" looked for a file
    # "meter.csv:load" (file not found)
    path = _colon_csv(tmp_path)
    template = load_grid_template(f"{path}:load:kW")
    assert template.name == "meter:load:kW" and template.cycle.tolist() == CYCLE
    assert load_grid_template(f"{path}:time:s").cycle.tolist() == list(range(6))
    assert load_grid_template(f"{path}:1").name == "meter:load:kW"  # by index as before


def test_a_path_with_colons_and_a_column_with_colons(tmp_path):
    # a Windows-like drive prefix or a colon in a folder name: the longest prefix that is a
    # file is the file, the rest the column
    folder = tmp_path / "C:" / "data:2024"
    folder.mkdir(parents=True)
    path = _colon_csv(folder)
    assert load_grid_template(f"{path}:load:kW").cycle.tolist() == CYCLE
    assert load_grid_template(str(path)).name == "meter:time:s"  # the file alone


def test_an_unknown_column_with_colons_names_the_column(tmp_path):
    path = _colon_csv(tmp_path)
    with pytest.raises(ParameterError, match="load:MW") as info:
        load_grid_template(f"{path}:load:MW")
    assert info.value.field == "grid_template"
    assert "file not found" not in str(info.value)


@needs_cli
def test_cli_runs_a_column_with_colons(tmp_path):
    path = _colon_csv(tmp_path)
    result = CliRunner().invoke(
        cli.app,
        [
            "bench", "cpr", "--grid", "--grid-template", f"{path}:load:kW",
            "--grid-trials", "1", "--grid-shape", "8,3", "--grid-eps0", "5",
            "--aperiodic-trials", "1", "--json",
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert '"meter:load:kW"' in result.output
