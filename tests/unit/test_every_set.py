"""``scenarios.cadr_run.every_set``: waiting on several events without the asyncio error
log a gather of waits left when the loop shut down under it (Ctrl-C on a CADR-LDP run
printed "_GatheringFuture exception was never retrieved" and a traceback after
"interrupted")."""

from __future__ import annotations

import asyncio
import gc
import logging

from ldpfleet.scenarios.cadr_run import every_set


def _shut_down_while_waiting(wait_all) -> None:
    async def main() -> None:
        events = [asyncio.Event(), asyncio.Event()]
        events[0].set()
        waiting = asyncio.ensure_future(wait_all(events))  # at shutdown: still waiting
        assert not waiting.done()
        await asyncio.sleep(0)

    asyncio.run(main())  # cancels the waiting tasks at shutdown, as after Ctrl-C
    gc.collect()


def test_every_set_waits_for_every_event():
    async def main() -> list[str]:
        events = [asyncio.Event() for _ in range(3)]
        seen = []
        waiter = asyncio.ensure_future(every_set(events))
        for index, event in enumerate(events):
            await asyncio.sleep(0)
            seen.append(f"{index}:{waiter.done()}")
            event.set()
        await waiter
        return seen

    assert asyncio.run(main()) == ["0:False", "1:False", "2:False"]


def test_a_shut_down_loop_logs_nothing(caplog):
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        _shut_down_while_waiting(every_set)
    assert "never retrieved" not in caplog.text


def test_the_gather_it_replaces_logged_the_error(caplog):
    """The check above can fail: the old form, a gather of waits, logs the error."""

    def gathered(events):
        return asyncio.gather(*(event.wait() for event in events))

    with caplog.at_level(logging.ERROR, logger="asyncio"):
        _shut_down_while_waiting(gathered)
    assert "never retrieved" in caplog.text
