"""A ``[secure_sum]`` dropout that leaves fewer devices than the session's threshold is
refused when the scenario loads (helper F: ``devices = 2``, ``dropout = 0.5`` ran the
stream stage, then the session aborted and the run exited 1; ``bench secagg`` refused the
same up front). Fails on the code before (the scenario loaded)."""

from __future__ import annotations

import pytest
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

TEXT = """\
[scenario]
name = "s"
[fleet]
devices = {devices}
[stream]
steps = 20
eps = 2.0
w = 5
[source]
kind = "synthetic"
bounds = [0.0, 1.0]
[secure_sum]
dim = 4
{more}
"""


@pytest.mark.parametrize(
    ("devices", "more", "threshold"),
    [
        (2, "dropout = 0.5", 2),  # full pair: t = 2
        (12, "dropout = 0.6", None),  # the default SecAgg+ graph's t
        (10, 'graph = "full"\ndropout = 0.5', 6),
    ],
)
def test_a_dropout_below_the_threshold_is_refused(devices, more, threshold):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(TEXT.format(devices=devices, more=more))
    message = str(info.value)
    assert message.startswith("secure_sum.dropout: must leave at least the threshold"), message
    if threshold is not None:
        assert f"t = {threshold} of the {devices} devices" in message, message


def test_a_dropout_that_leaves_the_threshold_loads():
    parse_scenario(TEXT.format(devices=12, more="dropout = 0.25"))
    parse_scenario(TEXT.format(devices=10, more='graph = "full"\ndropout = 0.4'))
