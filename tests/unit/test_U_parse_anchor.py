"""``parse_scenario(sections, path=...)`` with a folder: relative data paths resolve in it
(helper U, library-user QA).

Found: ``path="/tmp/study"`` (the folder of one's data, the natural reading of "anchors
relative data paths") was taken as a file named ``study`` in ``/tmp``: a CSV source
``data/x.csv`` was looked for in ``/tmp/data`` and ``/data`` and refused, the message
starting ``/tmp/study: source.path: file not found``. ``path=3`` died in pathlib's
``TypeError``.
"""

from __future__ import annotations

import pytest

import ldpfleet


def sections(path) -> dict:
    return {
        "scenario": {"name": "anchor", "seed": 1},
        "fleet": {"devices": 2},
        "stream": {"steps": 8, "eps": 2.0, "w": 4},
        "source": {"kind": "csv", "path": path, "bounds": [0.0, 10.0]},
    }


@pytest.fixture
def study(tmp_path, monkeypatch):
    (tmp_path / "study" / "data").mkdir(parents=True)
    (tmp_path / "study" / "data" / "x.csv").write_text("t\n1\n2\n3\n4\n5\n6\n7\n8\n")
    monkeypatch.chdir(tmp_path)  # not the study folder: relative paths need the anchor
    return tmp_path / "study"


def test_a_folder_anchors_relative_data_paths_in_it(study, tmp_path):
    scenario = ldpfleet.parse_scenario(sections("data/x.csv"), path=study)
    results = ldpfleet.run(scenario, broker="memory", out_dir=tmp_path / "run")
    assert results["devices_complete"] == 2


def test_a_file_path_anchors_them_beside_it_as_before(study):
    scenario = ldpfleet.parse_scenario(sections("data/x.csv"), path=study / "s.toml")
    assert scenario.path == study / "s.toml"


def test_a_folder_as_a_str_and_with_a_tilde(study, monkeypatch):
    monkeypatch.setenv("HOME", str(study.parent))
    for anchor in (str(study), "~/study"):
        assert ldpfleet.parse_scenario(sections("data/x.csv"), path=anchor).path.parent == study


def test_without_an_anchor_it_is_not_found_from_elsewhere(study):
    with pytest.raises(ldpfleet.ScenarioError) as caught:
        ldpfleet.parse_scenario(sections("data/x.csv"))
    assert caught.value.field == "source.path"


@pytest.mark.parametrize("bad", [3, "", b"/tmp"])
def test_a_path_that_is_not_one_is_a_scenario_error(bad):
    with pytest.raises(ldpfleet.ScenarioError) as caught:
        ldpfleet.parse_scenario(sections("data/x.csv"), path=bad)
    assert caught.value.limit == "a path (str or Path)"
    assert "parse_scenario's path must be" in str(caught.value)
