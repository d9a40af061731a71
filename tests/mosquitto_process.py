"""A Mosquitto process a test starts, restarts and stops itself (not the machine's one)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.conftest import mosquitto_binary

START_TIMEOUT = 20.0


class MosquittoProcess:
    """``mosquitto -c CONF`` with its log read from stderr. The configuration must log
    information lines to stderr (``log_dest stderr``, ``log_type information``): the
    "mosquitto ... running" line tells that it listens."""

    def __init__(self, conf: Path) -> None:
        self.conf = conf
        self.binary = mosquitto_binary()
        self.log: list[str] = []
        self.starts = 0
        self._process: asyncio.subprocess.Process | None = None
        self._drainer: asyncio.Task | None = None

    async def start(self) -> None:
        """Start and wait until it listens (a test failure if it does not)."""
        process = await asyncio.create_subprocess_exec(
            self.binary, "-c", str(self.conf), stderr=asyncio.subprocess.PIPE
        )
        assert process.stderr is not None

        async def wait_running() -> None:
            while line := await process.stderr.readline():
                self.log.append(line.decode(errors="replace"))
                if " running" in self.log[-1]:
                    return
            raise RuntimeError("mosquitto exited")

        try:
            await asyncio.wait_for(wait_running(), START_TIMEOUT)
        except (TimeoutError, RuntimeError):
            process.kill()
            await process.wait()
            pytest.fail("mosquitto did not start: " + "".join(self.log[-5:]))

        async def drain() -> None:  # keep the log pipe from filling up
            while line := await process.stderr.readline():
                self.log.append(line.decode(errors="replace"))

        self._process, self._drainer = process, asyncio.create_task(drain())
        self.starts += 1

    async def stop(self) -> int:
        """SIGTERM (Mosquitto saves its persistence file) and wait; the exit code."""
        process, drainer = self._process, self._drainer
        self._process = self._drainer = None
        if process is None:
            return 0
        if process.returncode is None:
            process.terminate()
        code = await process.wait()
        if drainer is not None:
            await asyncio.gather(drainer, return_exceptions=True)
        return code

    async def restart(self) -> None:
        """Stop, then start again with the same configuration (same port)."""
        await self.stop()
        await self.start()

    async def __aenter__(self) -> MosquittoProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc_info) -> None:
        await self.stop()
