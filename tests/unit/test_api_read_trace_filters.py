"""``ldpfleet.read_trace`` filters "like ``ldpfleet trace show``" (docs/api.md), but a typo
in ``kind`` (``"sw_reports"``), a device of no message, an empty filter or a NaN ``since``
selected nothing, silently, where the command refuses them (helper Q, as a new user)."""

from __future__ import annotations

import math

import pytest
from ldpfleet.protocol.errors import ParameterError

import ldpfleet

TEXT = """
[scenario]
name = "trace-filters"
seed = 3
[fleet]
devices = 3
[stream]
steps = 10
eps = 2.0
w = 5
[source]
kind = "synthetic"
bounds = [-1.0, 1.0]
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "out"
    results = ldpfleet.run(ldpfleet.parse_scenario(TEXT), broker="memory", out_dir=str(out))
    assert results["reports_lost"] == 0
    return out


def test_good_filters_still_select(run_dir):
    reports = list(ldpfleet.read_trace(run_dir, kind="sw_report"))
    assert len(reports) == ldpfleet.read_results(run_dir)["reports_received"] > 0
    assert list(ldpfleet.read_trace(run_dir, kind="reject")) == []  # a real kind, none sent
    assert list(ldpfleet.read_trace(run_dir, device="d0001"))


@pytest.mark.parametrize(
    ("selection", "field", "words"),
    [
        ({"kind": "sw_reports"}, "kind", "did you mean 'sw_report'"),
        ({"device": "d0099"}, "device", "sent and received nothing"),
        ({"kind": ""}, "kind", "must be a non-empty str"),
        ({"device": ""}, "device", "must be a non-empty str"),
        ({"since": math.nan}, "since", "seconds >= 0"),
        ({"topic": "ldp/#/up"}, "topic", "MQTT filter"),
        ({"since": 5.0, "until": 1.0}, "since", "after"),
        ({"kinds": "ack"}, "kinds", "device, kind, topic, since, until"),
    ],
)
def test_bad_filters_are_refused_naming_the_field(run_dir, selection, field, words):
    with pytest.raises(ParameterError) as info:
        list(ldpfleet.read_trace(run_dir, **selection))
    assert info.value.field == field and words in str(info.value), str(info.value)
