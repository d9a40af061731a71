"""The fleet shard's silence pump (``scenarios.cadr_run._watch_silence``) on virtual time.

The watch begins once every device of the shard has subscribed; on a starved machine the
shard's loop may get there only after its devices already took the plan and the first
θ query (both are broadcast before the collector waits for anything). A collector killed
right then sends nothing more: the shard must stop ``timeout`` seconds after what its
devices heard ("sent nothing for 16 s"), not wait the rendezvous allowance
``first_timeout`` as if the run had never started. The killed-collector test of
tests/e2e/test_cadr_sides.py failed this way in CI (a shard still running 26 s after the
kill, 5 December 2026); reproduced by starting the watch 1 s late on Mosquitto: both
shards stopped after 65.6 s with "did not start the run within 64 s of this shard joining"
(17.7 s and the 16 s sentence with the fix: deliveries before the watch began mark the
run started, main 18faa33). The first test fails on the code before that fix.
"""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest
from ldpfleet.protocol.liveness import SilenceWatch
from ldpfleet.scenarios.cadr_run import _watch_silence

from tests.virtual_time import VirtualTimeLoop

RUN = "silence"


def _stopped_after(agents: list, watch: SilenceWatch) -> tuple[str, float]:
    """The pump's sentence and the virtual time it returned at."""

    async def pump() -> tuple[str, float]:
        sentence = await asyncio.wait_for(_watch_silence(agents, watch), 1000.0)
        return sentence, asyncio.get_running_loop().time()

    return VirtualTimeLoop.run(pump())


def test_deliveries_before_the_watch_began_count_as_a_started_run():
    agents = [SimpleNamespace(messages_down=2) for _ in range(3)]  # plan + query each
    watch = SilenceWatch(RUN, 16.0, first_timeout=64.0)
    sentence, at = _stopped_after(agents, watch)
    assert sentence == (
        f"the collector of run {RUN} sent nothing for 16 s (it stopped or is unreachable)"
    )
    assert at == pytest.approx(16.0)


def test_a_shard_that_heard_nothing_waits_the_first_timeout():
    agents = [SimpleNamespace(messages_down=0) for _ in range(3)]
    watch = SilenceWatch(RUN, 16.0, first_timeout=64.0)
    sentence, at = _stopped_after(agents, watch)
    assert sentence == (
        f"the collector of run {RUN} did not start the run within 64 s of this shard joining"
    )
    assert at == pytest.approx(64.0)
