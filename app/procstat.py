"""Process facts for benchmarks, from /proc (Linux): who listens on a port, and RSS."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path


def listening_pid(port: int) -> int | None:
    """The pid of the process listening on TCP ``port`` (IPv4 or IPv6), if visible."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # LISTEN
                inodes.add(inode)
    if not inodes:
        return None
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            for fd in os.listdir(f"/proc/{pid}/fd"):
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    return int(pid)
        except OSError:
            continue
    return None


def rss_mb(pid: int) -> float | None:
    """Current resident memory of ``pid`` in MiB (None if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class PeakRss:
    """Sample a process's RSS every ``interval`` seconds while running; ``peak_mb``."""

    def __init__(self, pid: int, interval: float = 0.5) -> None:
        self.pid = pid
        self.interval = interval
        self.peak_mb = rss_mb(pid) or 0.0
        self.start_mb = self.peak_mb

    async def run(self) -> None:
        while True:
            current = rss_mb(self.pid)
            if current is not None:
                self.peak_mb = max(self.peak_mb, current)
            await asyncio.sleep(self.interval)
