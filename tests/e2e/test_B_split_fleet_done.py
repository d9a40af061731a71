"""A split run with devices gone for good reaches its secure sum: the shards say "my devices
are done" (``protocol.fleet_done``) and the collector side closes the stream stage then.

Before (helper B, 2026-12-07): ``ldpfleet run`` of scenarios/faults.toml with ``[secure_sum]``
as a split run (the collector side and the fleet shards as separate programs) never reached
the secure sum: the collector side's stream stage waited for the two devices that crashed
for good (``[faults] never_return = 2``) until ``[collector] stage_timeout`` (600 s by
default), while each shard, its devices done, gave up waiting for the secure-sum stage
after ``wait_timeout`` + ``stage_timeout``. The one-process run closes the stream stage when
its fleet task ends. Now each shard publishes a ``FleetDone`` status and the collector side
closes the stage once every shard said so; the secure sum then opens under the one rule
(``protocol.stage_opening``) and sums the survivors the one-process run sums.

Here the stream stage's deadline is 600 s and the whole run is bounded well below it (a
stage waiting for the gone devices fails the run instead of the test waiting 10 minutes):
what is asserted is the outcome (how the stage closed, what was summed), not wall time.
Both tests fail on main (67a99fb9, measured 2026-12-07 with the ``fleet_done`` imports and
the hostile statuses taken out): the sides end in ``TimeoutError`` at the bound, the CLI run
in ``aborted: run_timeout``.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.fleet_done import FLEET_DONE_KIND, fleet_done_status, shard_name
from ldpfleet.protocol.messages import FleetDone
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario
from ldpfleet.scenarios.shards import SHARD_ENTRY_KEYS
from ldpfleet.scenarios.sides import collector_side, fleet_side, merge_stream_outputs

from tests.conftest import ROOT
from tests.e2e.test_C_secure_sum_opening_agrees import run_split_cli

RUN = "bfleetdone"
STAGE_TIMEOUT = 600.0  # [collector] stage_timeout: what the stream stage must NOT wait for
# The whole split run's bound: far below STAGE_TIMEOUT (a stage that waits for the gone
# devices cannot finish within it), far above what the run needs (the stream is 2 s paced;
# the secure sum waits out its join deadline and its advertise stage, 10 s each, for the
# two gone devices; a starved machine's live devices move those deadlines on, up to 4 x).
RUN_BOUND = 400.0
SAFETY = RUN_BOUND + 120.0  # the CLI's subprocess: a hang fails instead of blocking
SCENARIO = (ROOT / "scenarios" / "faults.toml").read_text().replace(
    "hostile_messages = 2000\n", ""
) + (
    f"\n[collector]\nstage_timeout = {STAGE_TIMEOUT}\n"
    "\n[secure_sum]\ndim = 8\nstage_timeout = 10.0\n"
)
KEYS = ("devices", "aborted", "exact", "dropped_devices", "survivors", "total", "max_abs_error")


async def one_process(tmp_path) -> dict:
    """The reference: the same scenario and seed in one process (in-memory broker)."""
    return await run_scenario(parse_scenario(SCENARIO), broker="memory", out_dir=tmp_path / "one")


def assert_sums_like_one_process(split: dict, one: dict) -> None:
    gone = sorted(one["faults"]["outcome"]["never_returned"])
    assert len(gone) == 2
    assert one["secure_sum"]["dropped_devices"] == gone
    assert one["secure_sum"]["survivors"] == 48 and one["secure_sum"]["exact"] is True
    for key in KEYS:
        assert split["secure_sum"][key] == one["secure_sum"][key], key


async def _hostile_statuses(transport: MemoryTransport, announced: asyncio.Event) -> int:
    """Bad statuses on the shards' topic once the collector listens: each must be refused,
    counted and change nothing. Returns how many were sent."""
    await announced.wait()
    devices = parse_scenario(SCENARIO).device_ids()
    good = fleet_done_status(RUN, (0, 2), 25, [], []).message
    name = shard_name(0, 2)
    bad = [
        (topics.up(RUN, name, FLEET_DONE_KIND), b"{not json"),
        # shard 0 naming a device of shard 1's slice as its own
        (
            topics.up(RUN, name, FLEET_DONE_KIND),
            codec.encode(
                FleetDone(run=RUN, sender=name, shard=0, shards=2, finished=24, gone=[devices[1]])
            ),
        ),
        # a device speaking as a shard under its own id
        (
            topics.up(RUN, devices[0], FLEET_DONE_KIND),
            codec.encode(FleetDone(run=RUN, sender=devices[0], shard=0, shards=2, finished=25)),
        ),
        # shard 0 claiming more devices than its slice holds
        (
            topics.up(RUN, name, FLEET_DONE_KIND),
            codec.encode(FleetDone(run=RUN, sender=name, shard=0, shards=2, finished=26)),
        ),
        # the right shape, another run
        (
            topics.up(RUN, name, FLEET_DONE_KIND),
            codec.encode(FleetDone(run="other", sender=name, shard=0, shards=2, finished=25)),
        ),
    ]
    assert good.shards == 2  # the real shard 0's status stays acceptable after these
    async with transport.connect(f"{RUN}-attacker") as conn:
        for topic, payload in bad:
            await conn.publish(topic, payload)
    return len(bad)


@pytest.mark.slow
@pytest.mark.faults
async def test_split_sides_close_the_stream_stage_when_every_shard_is_done(tmp_path):
    scenario, transport = parse_scenario(SCENARIO), MemoryTransport()
    out, fleets = tmp_path / "c", [tmp_path / f"f{i}" for i in range(2)]
    announced = asyncio.Event()
    async with asyncio.timeout(RUN_BOUND):  # a stage waiting for stage_timeout fails here
        _, _, _, sent = await asyncio.gather(
            collector_side(
                scenario,
                transport,
                RUN,
                out,
                fleet_timeout=60.0,
                on_listening=lambda _url: announced.set(),
            ),
            *(
                fleet_side(scenario, transport, RUN, (i, 2), fleets[i], wait_timeout=60.0)
                for i in range(2)
            ),
            _hostile_statuses(transport, announced),
        )
    collector = json.loads((out / "results.json").read_text())
    assert collector["aborted"] is None
    assert collector["stages"]["stream"]["close_reason"].startswith("every fleet shard (2) said")
    status = collector["fleet_status"]
    assert status["said_done"] == {"0": True, "1": True} and status["ended"] is True
    # the hostile statuses: refused and counted like any bad input
    assert collector["reports_rejected"] >= sent
    reasons = collector["rejections_by_reason"]
    assert reasons.get("undecodable", 0) >= 1 and reasons.get("wrong_sender", 0) >= 1
    assert reasons.get("invalid_field", 0) >= 1 and reasons.get("wrong_run", 0) >= 1
    merged = merge_stream_outputs(out, fleets, scenario)
    one = await one_process(tmp_path)
    assert sorted(status["gone"]) == sorted(one["faults"]["outcome"]["never_returned"])
    assert_sums_like_one_process(merged, one)
    shards = merged["fleet"]["shards"]
    assert shards["said_done"] == {0: True, 1: True}  # in memory: not through JSON
    assert all(stopped is None for stopped in shards["secure_sum_stopped"].values())


@pytest.mark.slow
@pytest.mark.embedded
@pytest.mark.faults
def test_split_run_with_never_returning_devices_reaches_the_secure_sum(tmp_path):
    """``ldpfleet run --broker embedded``: the collector side as a process of its own, the
    fleet (one shard: a ``[secure_sum]`` run's devices run in the runner's process) beside
    it; ``run_timeout`` below ``stage_timeout``."""
    text = SCENARIO.replace("[scenario]\n", f"[scenario]\nrun_timeout = {RUN_BOUND}\n", 1)
    split = run_split_cli(text, tmp_path / "faults-sum.toml", timeout=SAFETY)
    assert split["aborted"] is None, split["aborted"]
    close_reason = split["stages"]["stream"]["close_reason"]
    assert close_reason.startswith("every fleet shard (1) said its devices are done")
    shards = split["fleet"]["shards"]
    assert tuple(shards) == SHARD_ENTRY_KEYS  # the runner-started shards' shape too
    assert shards["said_done"] == {"0": True} and shards["exit_codes"] == {"0": None}
    assert_sums_like_one_process(split, asyncio.run(one_process(tmp_path)))
