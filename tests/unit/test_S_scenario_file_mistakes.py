"""Scenario-file mistakes a new user made (helper S, from the installed wheel in a scratch
folder; scripts/S_scenario_mistakes.py runs 74 of them through ``ldpfleet run``).

Found and fixed:
- ``cd proj/scenarios && ldpfleet run my.toml`` with ``path = "mydata/t.csv"`` in
  ``proj/mydata``: refused, although the docs say a relative path is looked up "beside the
  scenario file (or one folder up)": the parent of ``my.toml`` is ``.``, whose parent is
  ``.`` again. ``ldpfleet run scenarios/my.toml`` from ``proj`` worked.
- the "looked in" list named one place twice (the scenario's folder when it is the
  current one) and in two forms (``mydata/t.csv`` and ``/abs/mydata/t.csv``).
- a key set twice: "not valid TOML: Cannot overwrite a value (at line 4, column 9)",
  naming neither the key nor the line.
- a file that is not UTF-8: "'utf-8' codec can't decode byte 0xff in position 38".
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ldpfleet.scenarios.schema import ScenarioError, load_scenario, parse_scenario

STREAM = """[scenario]
name = "paths"
seed = 7
[fleet]
devices = 2
[stream]
steps = 6
eps = 1.0
w = 2
[source]
"""
CSV = 'kind = "csv"\npath = "mydata/t.csv"\nbounds = [0.0, 10.0]\n'
SYNTHETIC = 'kind = "synthetic"\nbounds = [0.0, 10.0]\n'


@pytest.fixture
def project(tmp_path, monkeypatch):
    """proj/scen/my.toml reading proj/mydata/t.csv; the working folder is proj/scen."""
    (tmp_path / "proj" / "scen").mkdir(parents=True)
    (tmp_path / "proj" / "mydata").mkdir()
    (tmp_path / "proj" / "mydata" / "t.csv").write_text("t\n1\n2\n3\n4\n5\n6\n")
    (tmp_path / "proj" / "scen" / "my.toml").write_text(STREAM + CSV)
    monkeypatch.chdir(tmp_path / "proj" / "scen")
    return tmp_path / "proj"


def test_one_folder_up_when_the_scenario_is_named_from_its_own_folder(project):
    loaded = load_scenario("my.toml")
    assert Path(loaded.source_spec().path).resolve() == (project / "mydata" / "t.csv").resolve()


def test_one_folder_up_from_anywhere(project, monkeypatch):
    monkeypatch.chdir(project.parent)
    loaded = load_scenario(project / "scen" / "my.toml")
    assert Path(loaded.source_spec().path).resolve() == (project / "mydata" / "t.csv").resolve()


def test_the_places_looked_in_are_each_named_once_and_absolute(project):
    (project / "mydata" / "t.csv").unlink()
    with pytest.raises(ScenarioError) as info:
        load_scenario("my.toml")
    message = str(info.value)
    assert message.startswith("my.toml: source.path: file not found: mydata/t.csv"), message
    looked = message.split("(looked in ", 1)[1].rstrip(")").split(", ")
    scen, proj = project / "scen", project
    assert looked == [str(scen / "mydata" / "t.csv"), str(proj / "mydata" / "t.csv")], message


def test_a_key_set_twice_is_named_with_its_line():
    text = (STREAM + SYNTHETIC).replace("seed = 7", "seed = 7\nseed = 8")
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text)
    assert str(info.value) == (
        "not valid TOML: Cannot overwrite a value (at line 4, column 9): `seed = 8` "
        "(`seed` is set twice in its table)"
    )
    assert info.value.limit == "valid TOML"


def test_a_table_declared_twice_shows_its_line():
    text = STREAM + SYNTHETIC + "[fleet]\ndevices = 3\n"
    with pytest.raises(
        ScenarioError,
        match=r"Cannot declare \('fleet',\) twice \(at line 13, column \d+\): `\[fleet\]`$",
    ):
        parse_scenario(text)


def test_a_toml_syntax_error_shows_its_line():
    with pytest.raises(ScenarioError, match=r"Invalid value \(at line 3, column 7\): `seed =`$"):
        parse_scenario((STREAM + SYNTHETIC).replace("seed = 7", "seed ="))


def test_a_file_that_is_not_utf8_names_the_byte_line_and_column(tmp_path):
    path = tmp_path / "latin.toml"
    path.write_bytes((STREAM + SYNTHETIC).replace('"paths"', '"pàths"').encode("latin-1"))
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == (
        f"scenario file {path} cannot be read: it is not UTF-8 text (byte 0xe0 at line 2, "
        "column 10); save it as UTF-8"
    )
    assert info.value.limit == "a readable UTF-8 file"


def test_ldpfleet_data_that_is_not_a_folder_is_said(tmp_path, monkeypatch):
    """The tutorial's ``LDPFLEET_DATA=/srv/ldp-data`` copied as it stands: the refusal
    named the file under it, not that the folder itself is missing."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LDPFLEET_DATA", str(tmp_path / "no-such-copy"))
    with pytest.raises(ScenarioError) as info:
        load_scenario("occupancy-light")
    assert str(info.value).endswith(
        f"as LDPFLEET_DATA is set; LDPFLEET_DATA={tmp_path / 'no-such-copy'} is not a folder: "
        "set it to a copy of data/, or unset it for the shipped data)"
    ), info.value
    (tmp_path / "no-such-copy").mkdir()  # a folder without the file: the file is named
    with pytest.raises(ScenarioError) as info:
        load_scenario("occupancy-light")
    assert str(info.value).endswith("datatraining.txt, as LDPFLEET_DATA is set)"), info.value


def test_a_missing_calibration_file_says_where_it_was_looked_for(tmp_path, monkeypatch):
    """``gcdp.calibration_path: file not found: nosuch.csv`` said nowhere where it looked,
    while ``source.path``'s refusal lists the places."""
    from ldpfleet.scenarios.builtin import find_scenario

    monkeypatch.chdir(tmp_path)
    text = find_scenario("occupancy-release").read_text()
    old = 'calibration_path = "data/uci-occupancy/datatraining.txt"'
    assert old in text
    (tmp_path / "s").mkdir()
    scenario = tmp_path / "s" / "release.toml"
    scenario.write_text(text.replace(old, 'calibration_path = "cal/nosuch.csv"'))
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario)
    assert str(info.value) == (
        f"{scenario}: gcdp.calibration_path: file not found: cal/nosuch.csv (No such file or "
        f"directory) (looked in {tmp_path / 's' / 'cal' / 'nosuch.csv'}, "
        f"{tmp_path / 'cal' / 'nosuch.csv'})"
    )
