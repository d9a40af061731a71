"""A new user's first day with their own mechanisms, data and streams (helper B1,
2026-12-06): each input that was misread or worded misleadingly, now refused with one
sentence naming the field, the limit and the value."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ldpfleet.devices.sources import SourceError, load_table


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"temp": [20.5, 21.0, 22.5]}),  # one JSON document on one line
        json.dumps([20.5, 21.0, 22.5]) + "\n",  # a JSON array
        '{"temp": 20.5}\n{"temp": 21.0}\n',  # JSON Lines
        json.dumps({"temp": [20.5, 21.0]}, indent=2),  # pretty-printed, over lines
    ],
)
def test_a_json_file_is_refused_as_json_not_read_as_a_csv_header(tmp_path, text):
    """A JSON file given as a CSV source was refused as "has a header but no data rows" (one
    line) or "has no numeric columns" (JSON Lines): the user was told about a header their
    file does not have. It is named as JSON with what a source reads."""
    path = tmp_path / "data.json"
    path.write_text(text)
    with pytest.raises(SourceError) as caught:
        load_table(str(path))
    message = str(caught.value)
    assert caught.value.field == "source.path", message
    assert "is JSON" in message and str(path) in message, message
    assert ".npy" in message and "CSV" in message, message


@pytest.mark.parametrize(
    "text, row",
    [
        ("[temp],[hum]\n1,2\n3,4\n", [1.0, 2.0]),  # bracketed names are a header, not JSON
        ("{a},b\n1,2\n", [1.0, 2.0]),
    ],
)
def test_a_csv_whose_header_starts_with_a_bracket_still_reads(tmp_path, text, row):
    path = tmp_path / "b.csv"
    path.write_text(text)
    assert load_table(str(path))[1][0].tolist() == row


@pytest.mark.parametrize(
    "reports, words",
    [
        (None, "got None"),
        (3.0, "got one value 3.0"),
        ("0.5", "got one value '0.5'"),
        ("1,2,3", "got a str '1,2,3': split and convert it first"),
        ((float(v) for v in range(30)), "got an iterator (generator): pass list(...)"),
        (iter([1.0, 2.0]), "got an iterator (list_iterator)"),
    ],
)
def test_detect_period_names_what_it_got_when_it_is_no_stream(reports, words):
    """``detect_period(None)`` said "must be 1-D, got shape ()" (numpy read None as one
    NaN) and a generator or a text "must be a 1-D array of real numbers", without saying
    what was given."""
    import ldpfleet

    with pytest.raises(ldpfleet.ParameterError) as caught:
        ldpfleet.detect_period(reports)
    assert caught.value.field == "reports" and words in str(caught.value), str(caught.value)


def test_detect_period_still_reads_every_sequence_it_read():
    import ldpfleet

    t = np.arange(240)
    wave = np.sin(2 * np.pi * t / 24)
    for stream in (wave, list(wave), tuple(wave), wave.astype(np.float32), [str(v) for v in wave]):
        assert ldpfleet.detect_period(stream).period == 24


MODULE = """
import numpy as np


class Duchi:
    def __init__(self, eps):
        self.eps = float(eps)
"""


@pytest.mark.parametrize(
    "name, words",
    [
        # Python's dotted spelling: it said only "is not a built-in, not 'package.module:Class'"
        ("b1mechs.Duchi", "to name class 'Duchi' of module 'b1mechs', write 'b1mechs:Duchi'"),
        # a class name in the wrong case or misspelt: it said only "has no attribute"
        ("b1mechs:duchi", "has no attribute 'duchi' (did you mean 'Duchi'?)"),
        ("b1mechs:Duchy", "has no attribute 'Duchy' (did you mean 'Duchi'?)"),
    ],
)
def test_a_misspelt_plugin_name_says_what_was_meant(tmp_path, monkeypatch, name, words):
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.protocol.mechanisms import mechanism_factory

    (tmp_path / "b1mechs.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ParameterError) as caught:
        mechanism_factory(name)
    assert caught.value.field == "mechanism" and words in str(caught.value), str(caught.value)


def test_a_name_without_a_close_class_gets_no_guess(tmp_path, monkeypatch):
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.protocol.mechanisms import mechanism_factory

    (tmp_path / "b1mechs.py").write_text(MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ParameterError) as caught:
        mechanism_factory("b1mechs:Zzz")
    assert "did you mean" not in str(caught.value), str(caught.value)


@pytest.mark.parametrize(
    "text",
    [
        "# exported by logger v2\n# site A\ntemp,hum\n1,2\n3,4\n",  # comments above the header
        "temp,hum\n# calibrated\n1,2\n3,4\n",  # a comment line under it
    ],
)
def test_comment_lines_are_named_when_they_break_the_file(tmp_path, text):
    """A logger's '#' lines said only "line 3 has 2 fields, expected 1" (the comment was
    read as the header): the refusal now says what they are."""
    path = tmp_path / "c.csv"
    path.write_text(text)
    with pytest.raises(SourceError) as caught:
        load_table(str(path))
    assert "lines starting with '#' are not skipped as comments" in str(caught.value)


def test_a_header_starting_with_a_hash_still_reads(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("#time,temp\n1,2\n3,4\n")
    assert load_table(str(path))[1].tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_a_unicode_minus_is_named(tmp_path):
    """'−5.00' (U+2212, a typeset minus) made the column text: "no numeric columns" and the
    value, which looks like a number."""
    path = tmp_path / "m.csv"
    path.write_text("temp\n\u22125.00\n\u22124.50\n")
    with pytest.raises(SourceError) as caught:
        load_table(str(path))
    assert "U+2212" in str(caught.value) and "is not the hyphen-minus" in str(caught.value)


def test_a_quoted_header_with_a_space_after_each_comma_reads_as_the_bench_reads_it(tmp_path):
    """'"date", "Temperature"': the UCI style with a space after each delimiter. The fleet's
    CSV reader took the second name as '"Temperature"' (quotes and all) and refused
    `column = "Temperature"`, while `bench gcdp` read the same file (helper B2)."""
    from ldpfleet.devices.sources import CsvSpec

    path = tmp_path / "spaced.csv"
    rows = ['"date", "Temperature", "Humidity"'] + [
        f'"2015-02-04 17:5{i}:00", 23.1{i}, 27.2{i}' for i in range(3)
    ]
    path.write_text("\n".join(rows) + "\n")
    spec = CsvSpec(str(path), "Temperature")
    assert spec is not None  # read, not refused
