"""Concurrent runs' child processes get their own run's credentials file (helper R7).

``use_credentials`` names the newest open block's file in ``LDPFLEET_CREDENTIALS`` (process
wide); a bulk run's collector and gateway-shard processes found their credentials only
there, so run A's children started while run B's block was open logged in to A's broker
with B's passwords. The overlap is ordered by events, not timing."""

from __future__ import annotations

import asyncio
import os

import pytest
from ldpfleet.broker.auth import CREDENTIALS_ENV, Credentials, use_credentials
from ldpfleet.scenarios import bulk_run, cadr_run

SPAWNERS = {
    "bulk": lambda: bulk_run._spawn([], "--shard"),
    # a CADR-LDP device shard (``[fleet] shards``) finds its credentials the same way
    "cadr": lambda: cadr_run._spawn_shard("er:n=4", "mqtt://x", "run", 0, 0, 2, 1),
}


@pytest.mark.parametrize("kind", sorted(SPAWNERS))
def test_a_child_started_while_another_run_is_open_gets_its_own_file(tmp_path, monkeypatch, kind):
    seen: list[str | None] = []

    async def fake_exec(*args, **kwargs):
        env = kwargs.get("env")
        seen.append((env if env is not None else os.environ).get(CREDENTIALS_ENV))
        return object()

    monkeypatch.setattr(asyncio, "create_subprocess_exec", fake_exec)
    monkeypatch.delenv(CREDENTIALS_ENV, raising=False)
    a_open, b_open, a_spawned = asyncio.Event(), asyncio.Event(), asyncio.Event()
    files = {}

    async def run(name: str, before: asyncio.Event | None, after: asyncio.Event) -> None:
        if before is not None:
            await before.wait()  # run B's block opens after A's
        (tmp_path / name).mkdir()
        with use_credentials(Credentials.generate(name, []), export_dir=tmp_path / name):
            files[name] = str(tmp_path / name / "credentials.json")
            after.set()
            if name == "runa":
                await b_open.wait()  # A starts its child while B's block is open
                await SPAWNERS[kind]()
                a_spawned.set()
            else:
                await a_spawned.wait()

    async def both() -> None:
        await asyncio.gather(run("runa", None, a_open), run("runb", a_open, b_open))

    asyncio.run(both())
    assert seen == [files["runa"]]
    assert CREDENTIALS_ENV not in os.environ  # both ended: as before the first
