"""Helper V (privacy review): a device must not add a noise share sized for more sharers
than the secure sum has.

Under the dp pipeline each device adds ``NB(1/m) - NB(1/m)`` per bucket, ``m`` = the plan's
``noise_parties``, so that the sum over ``s >= m`` survivors carries the two-sided
geometric noise of ε_θ (protocol/cadr_theta_noise.py). ``CadrDevice`` checks only
``noise_parties >= 1``: a plan with ``noise_parties`` far above the session's participant
count (which every device learns from ``SaSetup.participants`` before it sends anything that
depends on its list) makes the opened sum nearly noise-free, while each ledger is charged ε_θ.
With 4 devices and ``noise_parties = 10**6`` the opened sum equals the exact bucket counts
(checked below), yet the device answers the session. Expected: the device refuses the
session (``RemoteProtocolError`` naming ``noise_parties``) before its masked input, as it
refuses a plan that overspends. Fails on today's code: the device advertises its keys."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.audit.cadr_count_canary import _count_messages, cadr_count_release
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_device import CadrDevice
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.secagg.messages import SaAdvertise, SaSetup

RUN = "audit"  # the canary's run id (its plan and query carry it)
INFLATED = 10**6


def test_an_inflated_noise_parties_leaves_the_sum_exact():
    """The harm: 4 devices, m = 10**6: the opened sum is the exact one-hot counts."""
    rng = np.random.default_rng(7)
    total = cadr_count_release(0.5, 3, rng, parties=INFLATED, survivors=4)
    assert np.rint(total).astype(int).tolist().count(0) == total.size - 2  # 2 buckets hold all
    assert np.abs(total).sum() == pytest.approx(4.0)


def _setup_after_plan(parties: int, **session) -> tuple[CadrDevice, list]:
    """A device given the plan (``noise_parties = parties``) and the bucket query, then the
    θ session's ``SaSetup`` (``session`` overrides the honest collector's fields); returns
    the device and what it sent, or raises what it refused."""
    device = CadrDevice(RUN, "d000", ["m0", "m1", "m2"], np.random.default_rng(1))
    for topic, message in _count_messages(0.5, parties):
        device.receive(topic, message, 0.0)
    fields = {
        "participants": 4, "clip_low": -(2.0**24), "clip_high": 2.0**24 + 1, "scale": 1.0,
        **session,
    }  # fmt: skip
    setup = SaSetup(
        run=RUN, sender=topics.COLLECTOR_ID, session="theta-buckets", round=0, label=1,
        threshold=3, bits=64, dim=device.theta_answer.size, stage_timeout=10.0, **fields,
    )  # fmt: skip
    device.pop_outbound()
    device.receive(topics.parse(topics.inbox(RUN, "d000", topics.COLLECTOR_ID)), setup, 0.0)
    return device, [out.message for out in device.pop_outbound()]


def test_the_honest_session_is_answered():
    _, sent = _setup_after_plan(4)
    assert any(isinstance(message, SaAdvertise) for message in sent)


def test_a_device_refuses_a_session_smaller_than_its_noise_parties():
    with pytest.raises(RemoteProtocolError, match="noise_parties"):
        _setup_after_plan(INFLATED)


@pytest.mark.parametrize(
    "session", [{"clip_low": 0.0, "clip_high": 1.0}, {"clip_high": 2.0}, {"scale": 0.5}]
)
def test_a_device_refuses_a_session_that_would_clip_or_round_its_share(session):
    """``FixedPoint.encode`` clips each device's answer to [clip_low, clip_high] before the
    sum: with [0, 1] a one-hot answer plus a small Pólya share mostly encodes as the bare
    one-hot bit, and the summed noise is gone."""
    with pytest.raises(RemoteProtocolError, match="θ-bucket session encodes"):
        _setup_after_plan(4, **session)
