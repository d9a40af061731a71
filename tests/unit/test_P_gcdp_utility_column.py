"""Helper P (2026-12-07): ``[gcdp] utility_column`` is matched as every other column name a
scenario gives (``devices.sources.column_name``: the Unicode normal form, the spaces
around it), and a name that is no numeric column is refused with ``source.column``'s
"did you mean" hint (``devices.sources.closest_name``), naming ``gcdp.utility_column``.
The labels were read under the name as typed, and its messages printed it so."""

from __future__ import annotations

import dataclasses
import unicodedata

import pytest
from ldpfleet.collector.gcdp_stage import load_calibration, utility_column
from ldpfleet.devices.sources import CsvSpec, SourceError, closest_name, column_name
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.plans import gcdp_stage_config
from ldpfleet.scenarios.schema import load_scenario

from tests.conftest import ROOT

RELEASE = (ROOT / "scenarios" / "occupancy-release.toml").read_text()
SHIPPED = ROOT / "data" / "uci-occupancy" / "datatraining.txt"
NAME = "Présence"  # NFC, as the header line holds it


def _config(tmp_path, label, name="Occupancy"):
    """The shipped release scenario calibrating on datatraining.txt with its Occupancy
    column named ``name`` and holding ``label(i)`` for data row i."""
    lines = SHIPPED.read_text().splitlines()
    header = lines[0].replace('"Occupancy"', f'"{name}"')
    body = [line.rsplit(",", 1)[0] + f",{label(i)}" for i, line in enumerate(lines[1:])]
    path = tmp_path / "calibration.csv"
    path.write_text("\n".join([header, *body]) + "\n", encoding="utf-8")
    text = RELEASE.replace('"data/uci-occupancy/datatraining.txt"', repr(str(path)))
    text = text.replace('"data/uci-occupancy/datatest.txt"', repr(str(SHIPPED.parent /
                        "datatest.txt")))  # fmt: skip
    text = text.replace('utility_column = "Occupancy"', f"utility_column = {name!r}")
    scenario = tmp_path / "s.toml"
    scenario.write_text(text, encoding="utf-8")
    return gcdp_stage_config(load_scenario(scenario))


def _two_classes(i):
    return (i // 300) % 2


@pytest.mark.parametrize(
    "typed", [" Présence ", unicodedata.normalize("NFD", NAME), "\tPre\u0301sence"]
)
def test_the_header_spelling_is_found(tmp_path, typed):
    config = _config(tmp_path, _two_classes, NAME)
    _, expected = load_calibration(config)
    other = dataclasses.replace(config, utility_column=typed)
    assert utility_column(other) == NAME
    _, labels = load_calibration(other)
    assert (labels == expected).all()


def test_its_messages_name_the_column_as_the_header_spells_it(tmp_path):
    config = _config(tmp_path, lambda i: 1, NAME)
    other = dataclasses.replace(config, utility_column=unicodedata.normalize("NFD", NAME))
    with pytest.raises(ParameterError, match=r"every calibration window") as err:
        load_calibration(other)
    assert f"has {NAME} 1 " in str(err.value) and err.value.field == "gcdp.utility_column"


def test_an_unknown_name_is_refused_with_did_you_mean(tmp_path):
    config = _config(tmp_path, _two_classes)
    other = dataclasses.replace(config, utility_column="occupancy")
    with pytest.raises(ParameterError) as err:
        load_calibration(other)
    assert err.value.field == "gcdp.utility_column"
    assert "(did you mean 'Occupancy'?)" in str(err.value)
    # the same hint as source.column's refusal of the same name
    with pytest.raises(SourceError) as source:
        CsvSpec(config.calibration.path, "occupancy")
    assert closest_name("occupancy", ["Occupancy"]) in str(source.value)


def test_column_name_is_the_one_matching():
    names = ["Temperature", NAME, "Occupancy"]
    assert column_name(" Occupancy ", names) == "Occupancy"
    assert column_name(unicodedata.normalize("NFD", NAME), names) == NAME
    assert column_name("occupancy", names) == "occupancy"  # case is not matched: a hint
    assert column_name("Light", names) == "Light"
