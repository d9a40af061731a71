"""Built-in scenarios by name, and the data folder their `data/...` paths read (issue 17)."""

from __future__ import annotations

from pathlib import Path

import pytest
from ldpfleet.scenarios.builtin import (
    DATA_ENV,
    builtin_scenarios,
    data_root,
    find_scenario,
    scenario_root,
)
from ldpfleet.scenarios.schema import load_scenario, resolve_data_path

OCCUPANCY = "data/uci-occupancy/datatraining.txt"


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """An empty working folder, no data override."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(DATA_ENV, raising=False)
    return tmp_path


def test_every_builtin_has_a_name_and_a_one_line_description():
    found = builtin_scenarios()
    assert [s.name for s in found] == sorted(p.stem for p in scenario_root().glob("*.toml"))
    assert {"quickstart", "intel-temperature", "facebook-degrees"} <= {s.name for s in found}
    for s in found:
        assert s.description and "\n" not in s.description, s.name


def test_description_falls_back_to_the_first_comment(tmp_path, monkeypatch):
    (tmp_path / "bare.toml").write_text('# A bare one.\n[scenario]\nname = "bare"\n')
    monkeypatch.setattr("ldpfleet.scenarios.builtin.scenario_root", lambda: tmp_path)
    assert [(s.name, s.description) for s in builtin_scenarios()] == [("bare", "A bare one.")]


def test_find_scenario_prefers_an_existing_file(elsewhere):
    assert find_scenario("quickstart") == scenario_root() / "quickstart.toml"
    assert find_scenario("quickstart.toml") == scenario_root() / "quickstart.toml"
    (elsewhere / "quickstart.toml").write_text("")
    assert find_scenario("quickstart.toml") == Path("quickstart.toml")
    for other in ("nope", "sub/quickstart", "quickstart.yaml"):
        assert find_scenario(other) == Path(other)


def test_a_folder_named_like_a_builtin_does_not_hide_it(elsewhere):
    """``ldpfleet run quickstart -o quickstart`` twice: the second run found the first's
    output folder and crashed reading it as a file."""
    (elsewhere / "quickstart").mkdir()
    assert find_scenario("quickstart") == scenario_root() / "quickstart.toml"
    assert load_scenario("quickstart").name == "quickstart"


def test_a_folder_or_an_unreadable_file_is_one_sentence(elsewhere):
    from ldpfleet.scenarios.schema import ScenarioError

    (elsewhere / "runs").mkdir()
    with pytest.raises(ScenarioError, match="runs is a directory, not a scenario file"):
        load_scenario("runs")
    (elsewhere / "bad.toml").write_bytes(b"\xff\xfe[scenario]\n")
    with pytest.raises(ScenarioError, match=r"bad\.toml cannot be read"):
        load_scenario("bad.toml")


def test_every_builtin_loads_by_name_and_finds_its_data_from_anywhere(elsewhere):
    for s in builtin_scenarios():
        loaded = load_scenario(s.name)
        assert loaded.name == s.name and loaded.path == s.path
        paths = []
        if loaded.spec.source is not None and hasattr(loaded.spec.source, "path"):
            paths.append(loaded.source_spec().path)
        if loaded.spec.gcdp is not None:
            paths.append(loaded.calibration_spec().path)
        for path in paths:
            assert Path(path).is_file() and Path(path).is_relative_to(data_root()), path


def test_data_paths_beside_the_scenario_come_first(elsewhere):
    scenario = elsewhere / "mine" / "s.toml"
    local = elsewhere / "mine" / OCCUPANCY
    assert resolve_data_path(OCCUPANCY, scenario) == data_root() / "uci-occupancy/datatraining.txt"
    local.parent.mkdir(parents=True)
    local.write_text("x\n")
    assert resolve_data_path(OCCUPANCY, scenario) == local
    assert resolve_data_path("data/none.csv", scenario) == Path("data/none.csv")  # reader says


def test_the_data_setting_overrides_every_data_path(elsewhere, monkeypatch):
    mine = elsewhere / "mydata"
    (elsewhere / OCCUPANCY).parent.mkdir(parents=True)
    (elsewhere / OCCUPANCY).write_text("x\n")  # would win without the setting
    monkeypatch.setenv(DATA_ENV, str(mine))
    assert data_root() == mine
    assert resolve_data_path(OCCUPANCY, None) == mine / "uci-occupancy" / "datatraining.txt"
    assert resolve_data_path("other/x.csv", None) == Path("other/x.csv")  # not under data/
    assert resolve_data_path(str(elsewhere / OCCUPANCY), None) == elsewhere / OCCUPANCY
