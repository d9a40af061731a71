"""Users' CSV exports with gaps (helper M): an empty cell, "NA", "NaN", "null", "None" or
"-" in a column a ``[source] kind = "csv"`` reads was refused as a non-numeric value with
no way round it. ``source.missing`` now says what to do with them: "refuse" (the default,
naming file, line, column, value and the setting), "previous", "interpolate" or "drop".
And ``ldpfleet bench gcdp --train-file x.gz`` reads compressed Occupancy files as the CSV
source does (one opener, ``devices.sources.read_data_file``)."""

from __future__ import annotations

import bz2
import gzip
import lzma

import numpy as np
import pytest
from ldpfleet.devices.sources import CsvSpec, SourceError, csv_stream, missing_summary
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

TOKENS = ["", "NA", "NaN", "null", "None", "-", "na", "nan", "NULL", "none", " NA "]


def _write(tmp_path, text, name="gaps.csv"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _series(spec, n=1, i=0, steps=None):
    steps = steps or 5
    return csv_stream(spec, i, n, steps)[0]


@pytest.mark.parametrize("token", TOKENS)
def test_each_missing_token_is_refused_by_default_naming_file_line_column_and_setting(
    tmp_path, token
):
    path = _write(tmp_path, f"t,temp\n1,20.0\n2,{token}\n3,22.0\n")
    with pytest.raises(SourceError) as info:
        CsvSpec(path, "temp")
    message = str(info.value)
    assert path in message and "line 3" in message and "'temp'" in message, message
    # the cell as read: spaces after the delimiter are skipped (csv skipinitialspace)
    assert repr(token.lstrip(" ")) in message and "source.missing" in message, message
    assert "previous" in message and "interpolate" in message and "drop" in message


@pytest.mark.parametrize("token", TOKENS)
def test_each_missing_token_is_filled_by_previous(tmp_path, token):
    path = _write(tmp_path, f"t,temp\n1,20.0\n2,{token}\n3,22.0\n")
    spec = CsvSpec(path, "temp", missing="previous")
    np.testing.assert_array_equal(_series(spec, steps=3), [20.0, 20.0, 22.0])
    assert missing_summary(spec)["values_filled"] == 1


def test_a_bad_value_that_is_not_a_missing_token_is_still_refused_in_every_mode(tmp_path):
    for bad in ("abc", "inf", "n/a?", "--"):
        path = _write(tmp_path, f"t,temp\n1,20.0\n2,{bad}\n3,22.0\n", name=f"b{len(bad)}.csv")
        for mode in ("previous", "interpolate", "drop"):
            with pytest.raises(SourceError) as info:
                CsvSpec(path, "temp", missing=mode)
            assert repr(bad) in str(info.value) and "line 3" in str(info.value)


GAPPY = "t,a,b\n1,,10\n2,2.0,NA\n3,,30\n4,,40\n5,8.0,\n6,10.0,60\n7,NaN,70\n"
#        a: gap at the start, a gap of two in the middle, a gap at the end
#        b: gaps in the middle (rows 2 and 5)


def test_previous_carries_the_last_reading_forward_and_a_leading_gap_takes_the_first(tmp_path):
    path = _write(tmp_path, GAPPY)
    a = CsvSpec(path, "a", missing="previous")
    b = CsvSpec(path, "b", missing="previous")
    np.testing.assert_array_equal(_series(a, steps=7), [2, 2, 2, 2, 8, 10, 10])
    np.testing.assert_array_equal(_series(b, steps=7), [10, 10, 30, 40, 40, 60, 70])
    assert missing_summary(a) == {
        "missing": "previous",
        "values_filled": 4,
        "steps_dropped": 0,
        "steps": 7,
        "by_column": {"a": 4},
    }


def test_interpolate_is_linear_between_neighbours_and_flat_at_the_ends(tmp_path):
    path = _write(tmp_path, GAPPY)
    a = CsvSpec(path, "a", missing="interpolate")
    b = CsvSpec(path, "b", missing="interpolate")
    np.testing.assert_allclose(_series(a, steps=7), [2, 2, 4, 6, 8, 10, 10])
    np.testing.assert_allclose(_series(b, steps=7), [10, 20, 30, 40, 50, 60, 70])
    assert missing_summary(b)["values_filled"] == 2


def test_drop_removes_the_row_for_every_column_the_source_reads(tmp_path):
    path = _write(tmp_path, GAPPY)
    a = CsvSpec(path, "a", missing="drop")
    np.testing.assert_array_equal(_series(a, steps=3), [2, 8, 10])
    assert missing_summary(a)["steps_dropped"] == 4 and missing_summary(a)["values_filled"] == 0
    both = CsvSpec(path, 0, columns=("a", "b"), column_bounds=((0, 20), (0, 100)), missing="drop")
    # rows kept: where neither a nor b is missing (rows 6 only... and none else)
    np.testing.assert_array_equal(_series(both, n=2, i=0, steps=1), [10])
    np.testing.assert_array_equal(_series(both, n=2, i=1, steps=1), [60])
    assert missing_summary(both)["steps_dropped"] == 6


def test_fill_is_per_channel_with_several_columns(tmp_path):
    path = _write(tmp_path, GAPPY)
    spec = CsvSpec(
        path, 0, columns=("a", "b"), column_bounds=((0, 20), (0, 100)), missing="previous"
    )
    np.testing.assert_array_equal(_series(spec, n=2, i=0, steps=7), [2, 2, 2, 2, 8, 10, 10])
    np.testing.assert_array_equal(_series(spec, n=2, i=1, steps=7), [10, 10, 30, 40, 40, 60, 70])
    assert missing_summary(spec)["by_column"] == {"a": 4, "b": 2}
    assert missing_summary(spec)["values_filled"] == 6


def test_a_column_with_a_leading_gap_is_a_numeric_column(tmp_path):
    """Its first value is empty: it was dropped as text ("not a numeric column")."""
    path = _write(tmp_path, GAPPY)
    with pytest.raises(SourceError) as info:
        CsvSpec(path, "a")
    assert "line 2" in str(info.value) and "source.missing" in str(info.value)


def test_an_entirely_missing_column_is_refused_naming_it_in_every_mode(tmp_path):
    path = _write(tmp_path, "t,a,empty\n1,1.0,\n2,2.0,NA\n3,3.0,-\n")
    for mode in ("refuse", "previous", "interpolate", "drop"):
        with pytest.raises(SourceError) as info:
            CsvSpec(path, "empty", missing=mode)
        message = str(info.value)
        assert "'empty'" in message and "every value" in message and "missing" in message, message
    # a column nobody reads does not refuse the file
    assert _series(CsvSpec(path, "a"), steps=3).tolist() == [1.0, 2.0, 3.0]


def test_rows_layout_fills_along_each_row_and_drop_removes_the_step(tmp_path):
    path = _write(tmp_path, "1.0,,3.0,4.0\n10.0,20.0,NA,40.0\n")
    spec = CsvSpec(path, 0, layout="rows", header=False, missing="interpolate")
    np.testing.assert_allclose(_series(spec, n=2, i=0, steps=4), [1, 2, 3, 4])
    np.testing.assert_allclose(_series(spec, n=2, i=1, steps=4), [10, 20, 30, 40])
    assert missing_summary(spec)["values_filled"] == 2
    dropped = CsvSpec(path, 0, layout="rows", header=False, missing="drop")
    np.testing.assert_allclose(_series(dropped, n=2, i=1, steps=2), [10, 40])
    with pytest.raises(SourceError) as info:
        CsvSpec(path, 0, layout="rows", header=False)
    assert "source.missing" in str(info.value)


def test_an_unknown_mode_is_refused(tmp_path):
    path = _write(tmp_path, "t,a\n1,1.0\n")
    with pytest.raises(SourceError) as info:
        CsvSpec(path, "a", missing="zero")
    assert info.value.field == "source.missing" and "'zero'" in str(info.value)


def test_a_file_without_gaps_is_the_same_in_every_mode(tmp_path):
    path = _write(tmp_path, "t,a\n1,1.0\n2,2.5\n3,3.0\n")
    for mode in ("refuse", "previous", "interpolate", "drop"):
        spec = CsvSpec(path, "a", missing=mode)
        assert _series(spec, steps=4).tolist() == [1.0, 2.5, 3.0, 1.0]
        assert missing_summary(spec)["values_filled"] == 0


SCENARIO = """
[scenario]
name = "gaps"
[fleet]
devices = 2
[stream]
steps = 10
eps = 2.0
w = 5
[source]
kind = "csv"
path = "{path}"
column = "a"
bounds = [0.0, 20.0]
{extra}
"""


def test_the_scenario_key_reaches_the_source_and_is_refused_by_default(tmp_path):
    path = _write(tmp_path, GAPPY)
    with pytest.raises(ScenarioError) as info:
        parse_scenario(SCENARIO.format(path=path, extra=""))
    assert "source.missing" in str(info.value) and "line 2" in str(info.value)
    loaded = parse_scenario(SCENARIO.format(path=path, extra='missing = "interpolate"'))
    assert loaded.source_spec().missing == "interpolate"
    with pytest.raises(ScenarioError) as info:
        parse_scenario(SCENARIO.format(path=path, extra='missing = "zero"'))
    assert "source.missing" in str(info.value)


@pytest.mark.parametrize("pack", [gzip.compress, bz2.compress, lzma.compress])
def test_bench_gcdp_reads_compressed_occupancy_files(tmp_path, pack):
    from ldpfleet.collector.gcdp.evaluation import check_date_order, load_occupancy

    text = (
        "date,Temperature,Humidity,Light,CO2,HumidityRatio,Occupancy\n"
        "2015-02-04 17:51:00,23.18,27.27,426,721.25,0.00479,1\n"
        "2015-02-04 17:52:00,23.15,27.2675,429.5,714,0.00478,0\n"
    )
    plain = tmp_path / "occ.txt"
    plain.write_text(text)
    packed = tmp_path / "occ.txt.packed"
    packed.write_bytes(pack(text.encode()))
    x, y = load_occupancy(packed)
    x0, y0 = load_occupancy(plain)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)
    check_date_order(packed)  # reads it too
    backwards = text.splitlines()
    packed.write_bytes(pack("\n".join([backwards[0], backwards[2], backwards[1]]).encode()))
    with pytest.raises(ValueError) as info:
        check_date_order(packed)
    assert "back" in str(info.value) or "order" in str(info.value), str(info.value)
    with pytest.raises(ValueError):
        load_occupancy(packed)


def test_gzip_data_broken_past_its_header_is_one_sentence(tmp_path):
    """A gzip whose header reads but whose deflate stream is broken raised zlib.error (a
    traceback) from the opener shared by the CSV source and bench gcdp."""
    from ldpfleet.collector.gcdp.evaluation import load_occupancy
    from ldpfleet.devices.sources import load_table

    path = tmp_path / "broken.csv.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 64)
    with pytest.raises(SourceError) as info:
        load_table(str(path))
    assert "broken gzip data" in str(info.value), str(info.value)
    with pytest.raises(ValueError) as info:
        load_occupancy(path)
    assert "broken gzip data" in str(info.value) and "source.path" not in str(info.value)


def test_missing_entry_says_how_many_values_were_filled_or_steps_dropped(tmp_path):
    from ldpfleet.devices.sources import SyntheticSpec, missing_entry

    path = _write(tmp_path, GAPPY)
    entry, warnings = missing_entry(CsvSpec(path, "a", missing="interpolate"))
    assert entry["values_filled"] == 4 and len(warnings) == 1
    assert "4 missing values" in warnings[0] and "4 in 'a'" in warnings[0], warnings
    assert "interpolated" in warnings[0]
    entry, warnings = missing_entry(CsvSpec(path, "b", missing="drop"))
    assert entry["steps_dropped"] == 2 and "2 of 7 time steps" in warnings[0], warnings
    assert missing_entry(CsvSpec(_write(tmp_path, "t,a\n1,1.0\n", "ok.csv"), "a")) == (
        {"missing": "refuse", "values_filled": 0, "steps_dropped": 0, "steps": 1,
         "by_column": {}},
        [],
    )  # fmt: skip
    assert missing_entry(SyntheticSpec()) == (None, [])


def test_drop_with_gcdp_utility_labels_is_refused(tmp_path):
    """The calibration channels would lose the dropped steps and the utility labels not:
    the two would no longer line up (collector/gcdp_stage.load_calibration)."""
    from pathlib import Path

    import ldpfleet.scenarios as package

    text = (Path(package.__file__).parent / "occupancy-release.toml").read_text()
    text = text.replace("stride = 200 ", 'missing = "drop"\nstride = 200 ')
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, path=Path(package.__file__).parent / "x.toml")
    assert "source.missing" in str(info.value) and "utility_column" in str(info.value)
    ok = text.replace('missing = "drop"', 'missing = "interpolate"')
    assert parse_scenario(ok, path=Path(package.__file__).parent / "x.toml").spec.source


def test_a_gap_in_the_utility_labels_is_refused_without_the_channels_hint(tmp_path):
    """``source.missing`` fills the channels, never ``gcdp.utility_column``'s labels: a gap
    there was refused with the channels' hint ("set source.missing = ..."), a setting that
    does not apply to the labels."""
    from pathlib import Path

    import ldpfleet.scenarios as package

    folder = Path(package.__file__).parent
    training = folder.parent / "data" / "uci-occupancy" / "datatraining.txt"
    lines = training.read_text().splitlines()
    lines[5] = lines[5].rsplit(",", 1)[0] + ",NA"  # line 6: Occupancy missing
    calibration = tmp_path / "training-with-a-gap.txt"
    calibration.write_text("\n".join(lines) + "\n")
    text = (folder / "occupancy-release.toml").read_text()
    text = text.replace('"data/uci-occupancy/datatraining.txt"', f'"{calibration}"')
    text = text.replace("stride = 200 ", 'missing = "interpolate"\nstride = 200 ')
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, path=folder / "x.toml")
    said = str(info.value)
    assert "gcdp.utility_column: missing value 'NA' in column 'Occupancy' at line 6" in said
    assert "the labels are never filled" in said and "set source.missing" not in said
