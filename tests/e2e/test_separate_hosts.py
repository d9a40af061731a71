"""Separate hosts (issue 23, without partitions): broker, collector and two fleet shards each
on a host of its own — network namespaces made by ``scripts/netns-hosts.sh``, joined by a
switch on 10.77.N.0/24 and by nothing else (no shared localhost: the machine's Mosquitto on
127.0.0.1:1883 is out of reach from them).

Each side writes only its own host's directory; the documented step (docs/separate-hosts.md)
copies the collector's and each shard's directory to one place and ``ldpfleet merge``s them.
The merged run must be what the one-process runner gives for the same seed, and ``trace
verify`` must pass on it. The broker is the embedded one (``ldpfleet broker --credentials``)
and a Mosquitto with ``ldpfleet mosquitto-config``'s files, both with per-run logins.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from ldpfleet.broker.auth import Credentials, write_mosquitto_files
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import ROOT, mosquitto_binary, service_missing

pytestmark = [pytest.mark.slow, pytest.mark.netns]

SCRIPT = ROOT / "scripts" / "netns-hosts.sh"
HOSTS = ("broker", "collector", "fleet0", "fleet1")
CLI = [sys.executable, "-m", "ldpfleet.app.cli"]
SAFETY = 180.0  # seconds: bound on any one wait (a hang fails instead of blocking)
PORT = 1884
SCENARIO = (
    (ROOT / "scenarios" / "quickstart.toml")
    .read_text()
    .replace("devices = 50", "devices = 12")
    .replace("steps = 200", "steps = 60")
)


def netns_available() -> bool:
    if os.geteuid() != 0 or shutil.which("ip") is None:
        return False
    probe = f"ldpprobe{secrets.token_hex(2)}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True)
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return made.returncode == 0


class Hosts:
    """The four hosts: ``run(host, *command)`` starts a process on one of them."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.env = {
            **os.environ,
            "LDPFLEET_NETNS_PREFIX": f"l{secrets.token_hex(2)}",
            "LDPFLEET_NETNS_SUBNET": f"10.77.{secrets.randbelow(250) + 1}",
        }
        self.procs: list[subprocess.Popen] = []
        self.handles = []

    def script(self, *args: str) -> str:
        done = subprocess.run(
            ["bash", str(SCRIPT), *args], env=self.env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    def addr(self, host: str) -> str:
        return self.script("addr", host)

    def run(self, host: str, log: str, *command: str) -> subprocess.Popen:
        self.handles.append((self.folder / log).open("wb"))
        proc = subprocess.Popen(
            ["bash", str(SCRIPT), "exec", host, *command],
            env=self.env,
            cwd=self.folder,
            stdout=self.handles[-1],
            stderr=subprocess.STDOUT,
        )
        self.procs.append(proc)
        return proc

    def log(self, name: str) -> str:
        path = self.folder / name
        return path.read_text(errors="replace") if path.exists() else ""

    def logs(self) -> str:
        return "\n".join(
            f"--- {p.name}\n{p.read_text(errors='replace')[-2500:]}"
            for p in sorted(self.folder.glob("*.log"))
        )

    def wait_for(self, log: str, needle: str, proc: subprocess.Popen) -> None:
        deadline = time.monotonic() + SAFETY
        while needle not in self.log(log):
            assert proc.poll() is None and time.monotonic() < deadline, self.logs()
            time.sleep(0.05)

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        for handle in self.handles:
            handle.close()


@contextlib.contextmanager
def hosts_up(make: Callable[[], Hosts], names: tuple[str, ...]) -> Iterator[Hosts]:
    """The test hosts ``names`` (``make()`` builds the object), removed afterwards; a
    machine without network namespaces skips (fails in CI)."""
    if not netns_available():
        service_missing(
            "network namespaces need root and iproute2 (ip netns)",
            in_ci="CI runs as root with iproute2: ip netns must work",
        )
    made = make()
    made.script("up", *names)
    try:
        yield made
    finally:
        made.close()
        made.script("down", *names)


@pytest.fixture
def hosts(tmp_path):
    with hosts_up(lambda: Hosts(tmp_path), HOSTS) as made:
        yield made


def start_broker(kind: str, hosts: Hosts, credentials: Path, run: str) -> str:
    """The broker on its host; its URL as the other hosts reach it."""
    address = hosts.addr("broker")
    if kind == "embedded":
        proc = hosts.run(
            "broker", "broker.log", *CLI, "broker", "--host", address, "--port", str(PORT),
            "--credentials", str(credentials),
        )  # fmt: skip
        hosts.wait_for("broker.log", "listening on", proc)
        return f"mqtt://{address}:{PORT}"
    paths = write_mosquitto_files(
        hosts.folder / "mosquitto",
        Credentials.load(credentials),
        port=PORT,
        host=address,
        persistence=False,
        user="root",  # started by root: keep reading the files in pytest's 0700 tmp
    )
    with paths["conf"].open("a") as conf:
        conf.write("log_dest stderr\nlog_type information\n")
    proc = hosts.run("broker", "broker.log", mosquitto_binary(), "-c", str(paths["conf"]))
    hosts.wait_for("broker.log", " running", proc)
    return f"mqtt://{address}:{PORT}"


def side_options(url: str, run: str, credentials: Path) -> list[str]:
    """What the collector and every shard are told: the broker, the run, the logins."""
    return ["--broker", url, "--run", run, "--credentials", str(credentials)]


def run_gather_and_check(hosts: Hosts, scenario: Path, loaded, side: list[str]) -> dict:
    """The collector and two shards on their hosts, each writing only its own directory;
    then the documented step: each host's directory copied to one place, merged, verified.
    Returns the merged results, checked against the one-process run of the same seed."""
    tmp_path = hosts.folder
    collector = hosts.run(
        "collector", "collector.log", *CLI, "collector", str(scenario), *side,
        "--out", str(tmp_path / "host-collector" / "run"),
    )  # fmt: skip
    hosts.wait_for("collector.log", "listening on", collector)
    fleets = []
    for i in range(2):
        out = str(tmp_path / f"host-fleet{i}" / "run")
        fleet = [*CLI, "fleet", str(scenario), *side, "--shard", f"{i}/2", "--out", out]
        fleets.append(hosts.run(f"fleet{i}", f"fleet{i}.log", *fleet))
    for proc in (*fleets, collector):
        assert proc.wait(timeout=SAFETY) == 0, hosts.logs()

    gathered = tmp_path / "gathered"
    for host in ("collector", "fleet0", "fleet1"):
        shutil.copytree(tmp_path / f"host-{host}" / "run", gathered / host)
    merged = subprocess.run(
        [*CLI, "merge", str(gathered / "collector"), str(gathered / "fleet0"),
         str(gathered / "fleet1"), "--out", str(tmp_path / "merged")],
        capture_output=True, text=True, timeout=SAFETY,
    )  # fmt: skip
    assert merged.returncode == 0, merged.stdout + merged.stderr
    verify = subprocess.run(
        [*CLI, "trace", "verify", str(tmp_path / "merged"), str(gathered / "fleet0"),
         str(gathered / "fleet1")],
        capture_output=True, text=True, timeout=SAFETY,
    )  # fmt: skip
    assert verify.returncode == 0, verify.stdout + verify.stderr

    results = json.loads((tmp_path / "merged" / "results.json").read_text())
    reference = asyncio.run(run_scenario(loaded, broker="memory", out_dir=tmp_path / "ref"))
    assert results["reports_lost"] == 0 and results["devices_complete"] == 12
    assert results["per_device"] == reference["per_device"]
    assert results["accuracy"] == reference["accuracy"]
    return results


@pytest.mark.parametrize(
    "kind",
    [
        pytest.param("embedded", marks=pytest.mark.embedded),
        "mosquitto",  # its own, started on the broker host
    ],
)
def test_broker_collector_and_two_shards_on_four_hosts(kind, hosts, tmp_path):
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    run = f"hosts-{secrets.token_hex(3)}"
    loaded = parse_scenario(SCENARIO, scenario)
    # the credentials of the run, handed to every host (docs/separate-hosts.md, step 1)
    credentials = Credentials.generate(run, loaded.device_ids()).save(tmp_path / "creds.json")
    url = start_broker(kind, hosts, credentials, run)

    results = run_gather_and_check(hosts, scenario, loaded, side_options(url, run, credentials))
    assert results["broker"]["url"] == url
