"""Helper P (2026-12-07): a scenario's ``[gcdp] utility_column`` is matched as
``source.column`` is (``devices.sources.column_name``) and an unknown one refused with its
"did you mean" hint (``closest_name``); it was matched exactly (" Occupancy " copied from
the header line, or "Présence" typed in another Unicode form, was "not a column")."""

from __future__ import annotations

import unicodedata

import pytest
from ldpfleet.scenarios.plans import gcdp_stage_config
from ldpfleet.scenarios.schema import ScenarioError, load_scenario

from tests.conftest import ROOT

RELEASE = (ROOT / "scenarios" / "occupancy-release.toml").read_text()
SHIPPED = ROOT / "data" / "uci-occupancy"


def _scenario(tmp_path, typed: str, header: str = "Occupancy"):
    lines = (SHIPPED / "datatraining.txt").read_text().splitlines()
    path = tmp_path / "calibration.csv"
    path.write_text(
        "\n".join([lines[0].replace('"Occupancy"', f'"{header}"'), *lines[1:]]) + "\n",
        encoding="utf-8",
    )
    text = RELEASE.replace('"data/uci-occupancy/datatraining.txt"', repr(str(path)))
    text = text.replace('"data/uci-occupancy/datatest.txt"', repr(str(SHIPPED / "datatest.txt")))
    text = text.replace('utility_column = "Occupancy"', f"utility_column = {typed!r}")
    scenario = tmp_path / "s.toml"
    scenario.write_text(text, encoding="utf-8")
    return scenario


@pytest.mark.parametrize(
    ("typed", "header"),
    [(" Occupancy ", "Occupancy"), (unicodedata.normalize("NFD", "Présence"), "Présence")],
)
def test_the_header_spelling_is_accepted(tmp_path, typed, header):
    config = gcdp_stage_config(load_scenario(_scenario(tmp_path, typed, header)))
    assert config.utility_column == typed  # matched where it is read (gcdp_stage)


def test_an_unknown_name_says_did_you_mean(tmp_path):
    with pytest.raises(ScenarioError, match=r"'occupancy' is not a column of .*"
                       r"\(did you mean 'Occupancy'\?\) \(columns: "):  # fmt: skip
        load_scenario(_scenario(tmp_path, "occupancy"))
