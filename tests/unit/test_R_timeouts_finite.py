"""A join timeout is a finite number of seconds > 0 on every path (helper R's review,
2026-12-07): an infinite one was accepted by the side process's options and the readiness
barrier, and then failed deep inside the input hold under a field the user never set
(``max_hold``)."""

from __future__ import annotations

import math

import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.readiness import ReadinessBarrier
from ldpfleet.scenarios.side_process import _arguments

# a side process's required arguments, before the option under test
BASE = ["collector", "quickstart", "--broker", "mqtt://127.0.0.1:1", "--run", "r1", "--out", "o"]


@pytest.mark.parametrize("timeout", [math.inf, math.nan, 0.0, -1.0])
def test_the_readiness_barrier_refuses_a_timeout_that_is_not_finite_and_positive(timeout):
    with pytest.raises(ParameterError) as info:
        ReadinessBarrier("r1", ["d0000"], timeout=timeout)
    assert info.value.field == "timeout"
    assert "finite number of seconds > 0" in str(info.value)


@pytest.mark.parametrize("option", ["--fleet-timeout", "--wait-timeout"])
@pytest.mark.parametrize("text", ["inf", "nan", "0", "-3", "soon"])
def test_the_side_process_refuses_the_same_timeouts(option, text, capsys):
    with pytest.raises(SystemExit) as info:
        _arguments([*BASE, option, text])
    assert info.value.code == 2
    assert option in capsys.readouterr().err


def test_a_finite_timeout_is_taken():
    assert _arguments([*BASE, "--fleet-timeout", "2.5"]).fleet_timeout == 2.5
    assert ReadinessBarrier("r1", ["d0000"], timeout=2.5).timeout == 2.5
