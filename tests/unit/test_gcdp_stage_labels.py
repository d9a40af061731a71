"""``[gcdp] utility_column`` on calibration files nobody tuned GC-DP to (held-out QA,
helper G): the label column must hold 0/1 labels of both classes in every room's
calibration windows, or mu_k = |corr(window mean, label)| is not a measurement."""

from __future__ import annotations

import pytest
from ldpfleet.collector.gcdp_stage import load_calibration
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.plans import gcdp_stage_config
from ldpfleet.scenarios.schema import ScenarioError, load_scenario

from tests.conftest import ROOT

RELEASE = (ROOT / "scenarios" / "occupancy-release.toml").read_text()
SHIPPED = ROOT / "data" / "uci-occupancy" / "datatraining.txt"


def _config(tmp_path, label):
    """The shipped release scenario calibrating on datatraining.txt with its Occupancy
    column replaced by ``label(i)`` for data row i."""
    lines = SHIPPED.read_text().splitlines()
    body = [line.rsplit(",", 1)[0] + f",{label(i)}" for i, line in enumerate(lines[1:])]
    path = tmp_path / "calibration.csv"
    path.write_text("\n".join([lines[0], *body]) + "\n")
    text = RELEASE.replace('"data/uci-occupancy/datatraining.txt"', repr(str(path)))
    text = text.replace('"data/uci-occupancy/datatest.txt"', repr(str(ROOT / "data" /
                        "uci-occupancy" / "datatest.txt")))  # fmt: skip
    scenario = tmp_path / "s.toml"
    scenario.write_text(text)
    return gcdp_stage_config(load_scenario(scenario)), path


def test_a_calibration_file_of_one_class_is_refused(tmp_path):
    """Held-out: a calibration file whose Occupancy is 1 on every row gave mu = 0 for
    every node and a release allocated on exposure alone, with nothing said."""
    config, path = _config(tmp_path, lambda i: 1)
    with pytest.raises(ParameterError, match=r"every calibration window of room 0 .* "
                       r"Occupancy 1") as err:  # fmt: skip
        load_calibration(config)
    assert err.value.field == "gcdp.utility_column" and str(path) in str(err.value)


def test_a_label_column_that_is_not_0_1_is_refused_naming_the_value(tmp_path):
    """Held-out: labels 0/2 (or a sensor column named as the label) were read as
    ``value >= 0.5``: silently binarised."""
    config, _ = _config(tmp_path, lambda i: 2 * ((i // 200) % 2))
    with pytest.raises(ParameterError, match=r"must hold 0/1 labels, got 2\.0") as err:
        load_calibration(config)
    assert err.value.field == "gcdp.utility_column"


def test_a_two_class_calibration_file_is_read(tmp_path):
    config, _ = _config(tmp_path, lambda i: (i // 300) % 2)
    data, labels = load_calibration(config)
    assert labels.shape == data.shape and set(labels.ravel().tolist()) == {0.0, 1.0}


def _scenario(tmp_path, calibration: str, source: str = str(SHIPPED.parent / "datatest.txt")):
    text = RELEASE.replace('"data/uci-occupancy/datatraining.txt"', repr(calibration))
    text = text.replace('"data/uci-occupancy/datatest.txt"', repr(source))
    scenario = tmp_path / "s.toml"
    scenario.write_text(text)
    return scenario


def test_a_calibration_or_source_file_out_of_time_order_is_refused(tmp_path):
    """Held-out: a shuffled calibration file (ISO dates out of order) was laid out as
    consecutive records, its windows averaging unrelated minutes; it was refused only by
    luck ("every calibration window ... has Occupancy 0"), and a shuffled source streamed
    to the devices as is. bench gcdp's loader refuses such a file; the fleet now does too."""
    lines = SHIPPED.read_text().splitlines()
    shuffled = tmp_path / "shuffled.csv"
    shuffled.write_text("\n".join([lines[0], lines[1], lines[3], lines[2], *lines[4:]]) + "\n")
    # the sources' own time-order check (devices/sources.py) speaks first since 2026-12-04
    back = (
        r"goes back in time: line 4 has '2015-02-04 17:51:59', "
        r"after '2015-02-04 17:53:00' on line 3"
    )
    with pytest.raises(ScenarioError, match=r"gcdp\.calibration_path: .*" + back):
        load_scenario(_scenario(tmp_path, str(shuffled)))
    source_back = r"source\.path: .*shuffled\.csv.*goes back in time: line 4"
    with pytest.raises(ScenarioError, match=source_back):
        load_scenario(_scenario(tmp_path, str(SHIPPED), str(shuffled)))
    load_scenario(_scenario(tmp_path, str(SHIPPED)))
