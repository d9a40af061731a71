"""``read_results`` / ``read_trace`` as a researcher calls them (held-out library-user QA,
helper D, 2026-12-05).

Found (each test below fails on the code before the fix):

- every ``read_trace`` refusal said its field twice: "since: since must be a number ...",
  "kind: kind 'sw_reports' is not a message kind";
- ``read_trace(run, since=True)`` was taken as 1 second;
- ``read_results(None)`` / ``read_results(3)`` / ``read_trace(None)`` died in pathlib's
  ``TypeError``; a damaged ``results.json`` in a bare ``JSONDecodeError`` naming no file;
  ``read_results(".../results.json")`` (the file, which ``read_trace`` takes for its
  trace) looked for ``.../results.json/results.json``.
"""

from __future__ import annotations

import pytest

import ldpfleet

TEXT = """
[scenario]
name = "outputs-user"
seed = 3
[fleet]
devices = 2
[stream]
steps = 8
eps = 2.0
w = 4
[source]
kind = "synthetic"
bounds = [-1.0, 1.0]
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("outputs-user")
    ldpfleet.run(ldpfleet.parse_scenario(TEXT), broker="memory", out_dir=out)
    return out


@pytest.mark.parametrize(
    "selection",
    [{"kind": "sw_reports"}, {"device": "d0099"}, {"kind": ""}, {"since": float("nan")},
     {"topic": "ldp/#/up"}, {"since": 5.0, "until": 1.0}, {"kinds": "ack"}],
)  # fmt: skip
def test_a_refusal_names_its_field_once(run_dir, selection):
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.read_trace(run_dir, **selection)
    field = info.value.field
    assert not str(info.value).startswith(f"{field}: {field} "), str(info.value)


@pytest.mark.parametrize("name", ["since", "until"])
def test_a_bool_is_not_a_time(run_dir, name):
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.read_trace(run_dir, **{name: True})
    assert info.value.field == name


@pytest.mark.parametrize("reader", ["read_results", "read_trace"])
@pytest.mark.parametrize("value", [None, 3])
def test_a_run_dir_of_the_wrong_type_is_named(reader, value):
    with pytest.raises(ldpfleet.ParameterError) as info:
        getattr(ldpfleet, reader)(value)
    assert info.value.field == "run_dir" and repr(value) in str(info.value)


def test_a_damaged_results_file_is_named(tmp_path):
    (tmp_path / "results.json").write_text("{oops")
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.read_results(tmp_path)
    assert info.value.field == "run_dir" and str(tmp_path / "results.json") in str(info.value)
    assert isinstance(info.value, ValueError)  # what a JSONDecodeError was


def test_read_results_takes_the_file_too(run_dir):
    by_folder = ldpfleet.read_results(run_dir)
    assert ldpfleet.read_results(run_dir / "results.json") == by_folder
    assert by_folder["reports_lost"] == 0


def test_a_missing_run_is_still_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        ldpfleet.read_results(tmp_path / "nowhere")
    assert "run's output folder" in str(info.value)
