"""Fault test (issue 8, item 2d): a collector slower than the fleet's sustained rate.

20 paced devices offer D / (step_seconds x batch_steps) = 20 / (0.01 x 5) = 400 reports/s.
``[faults] collector_delay`` adds that many seconds of work per delivery: 0.005 s caps the
collector at 200 deliveries/s (the offered load is 2x what it can take), 0.01 s at 100/s
(4x). Credit flow control is the backpressure: the collector grants at most
``max_in_flight`` = 16 unacknowledged batches in all, so the deliveries it has buffered
never exceed 16 plus one hello per device, however slow it is and however long the
overload lasts; the devices keep their privatised batches until they get credit. The
test checks that bound at 2x and 4x overload (the peak does not grow with the overload),
that nothing is lost and that the stored values are the clean run's. Memory and Mosquitto.
"""

from __future__ import annotations

import pytest
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import MOSQUITTO, broker_for, shared_name
from tests.e2e.test_fault_device_crashes import store_rows

pytestmark = pytest.mark.faults

DEVICES = 20
MAX_IN_FLIGHT = 16
BASE = f"""
[scenario]
name = "slow"
seed = 4
[fleet]
devices = {DEVICES}
[stream]
steps = 100
batch_steps = 5
eps = 1.0
w = 5
step_seconds = 0.01
retransmit_after = 30    # no retransmission while waiting: only credit bounds the flow
[source]
kind = "synthetic"
shape = "sine"
period = 20
bounds = [-1.0, 1.0]
[collector]
max_in_flight = {MAX_IN_FLIGHT}
credit_window = 2
"""
OFFERED = DEVICES / (0.01 * 5)  # reports per second


@pytest.fixture(params=["memory", MOSQUITTO])
def broker(request):
    return broker_for(request)


async def test_slow_collector_bounded_buffer_no_loss(broker, tmp_path):
    clean = await run_scenario(
        parse_scenario(BASE), broker="memory", out_dir=tmp_path / "clean", run_id="s1"
    )
    assert clean["reports_lost"] == 0
    peaks = {}
    for overload in (2, 4):
        delay = overload / OFFERED  # the collector takes 1/overload of the offered load
        scenario = parse_scenario(BASE + f"[faults]\ncollector_delay = {delay}\n")
        out = tmp_path / f"slow{overload}"
        results = await run_scenario(
            scenario, broker=broker, out_dir=out, run_id=shared_name(broker, "s1")
        )
        assert results["reports_lost"] == 0 and results["missing_batches"] == {}
        assert results["devices_complete"] == DEVICES
        assert store_rows(out) == store_rows(tmp_path / "clean")
        # it really was slower than the offered load (the stage took >= its work)
        assert results["stages"]["stream"]["seconds"] >= DEVICES * 20 * delay
        peaks[overload] = results["delivery"]["collector_peak_pending"]
        assert results["faults"]["injected"]["collector_delay"] == delay
    # bounded: credit (max_in_flight) plus one hello per device, at 2x as at 4x
    for overload, peak in peaks.items():
        assert 0 < peak <= MAX_IN_FLIGHT + DEVICES, (overload, peaks)
