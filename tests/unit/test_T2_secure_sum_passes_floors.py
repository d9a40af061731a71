"""``collector.secure_sum`` hands the caller's floors to the machine (helper T2's
planted-bug hunt, round 2): the pump is thin, and nothing checked that ``min_inputs`` (the
fewest inputs a sum may cover: CADR's θ search relies on it so that a sum never reveals
one device's value) and ``threshold`` reach ``SecAggServer``."""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.collector import secure_sum as secure_sum_module
from ldpfleet.protocol.secagg.encoding import FixedPoint


class _Built(Exception):
    pass


def test_min_inputs_and_threshold_reach_the_server(monkeypatch):
    """Kills SS1 (``min_inputs`` dropped: the session would unmask a sum of fewer inputs
    than the caller's floor) and SS2 (``threshold`` dropped: the machine's default
    Shamir threshold instead of the caller's)."""
    seen: dict = {}

    def spy(*args, **kwargs):
        seen.update(kwargs)
        raise _Built

    monkeypatch.setattr(secure_sum_module, "SecAggServer", spy)
    fp = FixedPoint(0.0, 1.0, 1024.0)
    devices = [f"d{i}" for i in range(6)]
    with pytest.raises(_Built):
        asyncio.run(
            secure_sum_module.secure_sum(
                MemoryTransport(), "r1", "s1", devices, 3, fp, threshold=5, min_inputs=4
            )
        )
    assert seen["min_inputs"] == 4
    assert seen["threshold"] == 5


async def _silent_session(raise_on_abort: bool):
    """A session none of whose devices ever answers: it aborts at its first deadline."""
    return await secure_sum_module.secure_sum(
        MemoryTransport(), "r1", "s1", ["d0", "d1", "d2", "d3"], 3,
        FixedPoint(0.0, 1.0, 1024.0), stage_timeout=5.0, raise_on_abort=raise_on_abort,
    )  # fmt: skip


def test_an_abort_is_raised_when_asked():
    """Kills SS3: ``raise_on_abort`` ignored: a caller that asked for an exception (a
    stage that must not go on without its sum) got a result with ``total = None``. On
    virtual time (tests/virtual_time.py): no wall-clock wait."""
    from tests.virtual_time import VirtualTimeLoop

    result = VirtualTimeLoop.run(_silent_session(False))
    assert result.aborted and result.total is None and result.survivors == ()
    with pytest.raises(secure_sum_module.SecureSumAborted):
        VirtualTimeLoop.run(_silent_session(True))
