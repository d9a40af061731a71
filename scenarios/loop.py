"""The event loop every ``ldpfleet`` command runs on: uvloop when it is installed.

uvloop (libuv) replaces asyncio's Python event loop; it is optional (``pip install
'ldpfleet[fast]'``) and ``LDPFLEET_UVLOOP=0`` turns it off, e.g. to compare. Its measured
effect on fleet runs is in docs/scaling.md. Nothing in the protocols depends on the loop:
runs give identical results on both.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """uvloop's loop factory if installed and not disabled, else None (asyncio's)."""
    if os.environ.get("LDPFLEET_UVLOOP", "1") == "0":
        return None
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def loop_name() -> str:
    """Which event loop ``run`` uses: "uvloop" or "asyncio"."""
    return "uvloop" if loop_factory() is not None else "asyncio"


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on the chosen loop."""
    with asyncio.Runner(loop_factory=loop_factory()) as runner:
        return runner.run(coroutine)
