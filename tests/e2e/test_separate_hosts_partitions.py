"""Separate hosts with collector partitions (issue 23): the broker, the coordinator, two
partition workers and two fleet shards, each on a host of its own — six network namespaces
made by ``scripts/netns-hosts.sh``, joined by a switch and by nothing else (no shared
localhost: the machine's Mosquitto on 127.0.0.1:1883 is out of reach from them).

Nothing shares a file system either: every host gets its own copy of what a deployment
hands it (the scenario, the run's credentials, with TLS the CA and a client certificate)
in its own directory, works there with relative paths and writes only its own ``run/``.
The documented step (docs/separate-hosts.md, "Partitions on separate hosts") copies the
five ``run/`` directories to one place, ``ldpfleet merge`` unites them (the coordinator's,
the workers' and the shards'), ``trace verify`` checks every signed trace (the coordinator's
and one per worker) on the merged folder, and the merged results and ledger must be what the
one-process memory run of the same seed gives. Plain ``mqtt://`` and ``mqtts://`` with
client certificates required, on the embedded broker and on a Mosquitto started on the
broker host from ``ldpfleet mosquitto-config``'s files (its ACL carries the partition levels).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest
from ldpfleet.broker.auth import Credentials
from ldpfleet.broker.tls import ENV_CERT, ENV_KEY
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.e2e.test_partitions import SECURE, with_partitions, without_timings
from tests.e2e.test_separate_hosts import (
    CLI,
    SAFETY,
    SCENARIO,
    SCRIPT,
    Hosts,
    hosts_up,
    start_broker,
)
from tests.e2e.test_separate_hosts_tls import pki_paths, start_tls_broker

pytestmark = [pytest.mark.slow, pytest.mark.netns]

WORKERS = ("part0", "part1")
FLEETS = ("fleet0", "fleet1")
HOSTS = ("broker", "coordinator", *WORKERS, *FLEETS)
# nothing is lost between the hosts, so a retransmission (5 s by default) is only a late
# ack on a busy machine, and reports_duplicate is compared with the memory run's (SAME)
PARTITIONED = SCENARIO.replace("[fleet]\n", "[collector]\npartitions = 2\n\n[fleet]\n", 1).replace(
    "[stream]\n", "[stream]\nretransmit_after = 600\n", 1
)
assert PARTITIONED != SCENARIO  # the quickstart's [fleet] table is where the count goes
SAME = ("per_device", "accuracy", "devices_complete", "reports_received", "reports_lost",
        "reports_rejected", "reports_duplicate", "missing_batches", "budget_refusals")  # fmt: skip
PKI = ("ca.pem", "client.pem", "client.key")  # what a client host is handed with TLS


class OwnDirectories(Hosts):
    """``Hosts`` whose pieces each run in their host's own directory ``host-NAME``."""

    def home(self, host: str) -> Path:
        return self.folder / f"host-{host}"

    def hand(self, host: str, files: dict[str, Path]) -> None:
        """Copy what the deployment hands ``host`` into its own directory."""
        self.home(host).mkdir(exist_ok=True)
        for name, source in files.items():
            target = self.home(host) / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target)

    def run_at_home(self, host: str, *command: str) -> subprocess.Popen:
        handle = (self.folder / f"{host}.log").open("wb")
        self.handles.append(handle)
        proc = subprocess.Popen(
            ["bash", str(SCRIPT), "exec", host, *command],
            env=self.env, cwd=self.home(host), stdout=handle, stderr=subprocess.STDOUT,
        )  # fmt: skip
        self.procs.append(proc)
        return proc


@pytest.fixture
def six_hosts(tmp_path):
    with hosts_up(lambda: OwnDirectories(tmp_path), HOSTS) as made:
        yield made


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *args], cwd=cwd, capture_output=True, text=True, timeout=SAFETY)


def run_partitioned_hosts(hosts: OwnDirectories, url: str, run: str, loaded) -> dict:
    """The coordinator, two workers and two shards on their hosts (relative paths in their
    own directories); the documented gather, merge and verify; the merged results checked
    against the memory run of the same seed. Returns the merged results."""
    side = ["scenario.toml", "--broker", url, "--run", run, "--credentials", "creds.json"]
    coordinator = hosts.run_at_home("coordinator", *CLI, "collector", *side, "--coordinator",
                                    "--out", "run")  # fmt: skip
    workers = [
        hosts.run_at_home(host, *CLI, "collector", *side, "--partition", f"{p}/2", "--out", "run")
        for p, host in enumerate(WORKERS)
    ]
    fleets = [
        hosts.run_at_home(host, *CLI, "fleet", *side, "--shard", f"{i}/2", "--out", "run")
        for i, host in enumerate(FLEETS)
    ]
    for proc in (*fleets, *workers, coordinator):
        assert proc.wait(timeout=SAFETY) == 0, hosts.logs()
    assert "coordinator for run" in hosts.log("coordinator.log")
    assert "partition worker 1/2" in hosts.log("part1.log")

    # the documented step: each host's run/ copied to one place, merged, verified
    gathered = hosts.folder / "gathered"
    pieces = ("coordinator", "part1", "fleet0", "part0", "fleet1")  # any order after the first
    for host in pieces:
        shutil.copytree(hosts.home(host) / "run", gathered / host)
    merged = _cli("merge", *pieces, "--out", "merged", cwd=gathered)
    assert merged.returncode == 0, merged.stdout + merged.stderr
    verify = _cli("trace", "verify", "merged", cwd=gathered)
    assert verify.returncode == 0, verify.stdout + verify.stderr
    assert "signature 3" in verify.stdout, verify.stdout  # the coordinator's + two workers'

    out = gathered / "merged"
    results = json.loads((out / "results.json").read_text())
    reference = asyncio.run(
        run_scenario(loaded, broker="memory", out_dir=hosts.folder / "ref", run_id=run)
    )
    assert results["reports_lost"] == 0 and results["devices_complete"] == 12
    for key in SAME:
        assert results[key] == reference[key], key
    assert json.loads((out / "ledger.json").read_text()) == json.loads(
        (hosts.folder / "ref" / "ledger.json").read_text()
    )
    if loaded.spec.secure_sum is not None:
        assert without_timings(results["secure_sum"]) == without_timings(reference["secure_sum"])
    assert len(results["trace"]["partitions"]) == 2
    assert sorted(p.name for p in out.glob("trace-p*.sqlite")) == [
        "trace-p0.sqlite",
        "trace-p1.sqlite",
    ]
    # each worker served its own devices only, and together all of them
    served = [
        json.loads((gathered / host / "results.json").read_text())["per_device"] for host in WORKERS
    ]
    assert not set(served[0]) & set(served[1])
    assert set(served[0]) | set(served[1]) == set(reference["per_device"])
    return results


def _deploy(hosts: OwnDirectories, tmp_path: Path, run: str, tls: bool, text: str = PARTITIONED):
    """The run's files made once and handed to every client host; (loaded, pki)."""
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(text)
    loaded = parse_scenario(text, scenario)
    assert loaded.spec.collector.partitions == 2
    credentials = Credentials.generate(run, loaded.device_ids(), partitions=2).save(
        tmp_path / "creds.json"
    )
    handed = {"scenario.toml": scenario, "creds.json": credentials}
    pki = {}
    if tls:
        made = _cli("certs", "--out", "pki", "--host", hosts.addr("broker"), cwd=tmp_path)
        assert made.returncode == 0, made.stdout + made.stderr
        pki = pki_paths(tmp_path / "pki")
        handed |= {f"pki/{name}": tmp_path / "pki" / name for name in PKI}
        # every client host finds its certificate in its own directory (relative paths)
        hosts.env |= {ENV_CERT: "pki/client.pem", ENV_KEY: "pki/client.key"}
    for host in HOSTS[1:]:
        hosts.hand(host, handed)
    return loaded, credentials, pki


@pytest.mark.parametrize("tls", [False, True], ids=["mqtt", "mqtts"])
@pytest.mark.parametrize(
    "kind",
    [pytest.param("embedded", marks=pytest.mark.embedded), "mosquitto"],
)
def test_coordinator_two_workers_and_two_shards_on_six_hosts(kind, tls, six_hosts, tmp_path):
    run = f"phosts-{secrets.token_hex(3)}"
    loaded, credentials, pki = _deploy(six_hosts, tmp_path, run, tls)
    if tls:
        url = start_tls_broker(kind, six_hosts, credentials, pki)
        # the CA as each client host has it: its own copy, a relative path
        url = url.split("?ca=")[0] + "?ca=pki/ca.pem"
    else:
        url = start_broker(kind, six_hosts, credentials, run)
    results = run_partitioned_hosts(six_hosts, url, run, loaded)
    assert results["broker"]["url"].split("?")[0] == url.split("?")[0]
    assert results["broker"]["url"].startswith("mqtts://" if tls else "mqtt://")


@pytest.mark.embedded
def test_the_coordinator_keeps_the_secure_sum_across_six_hosts_over_tls(six_hosts, tmp_path):
    """A [secure_sum] scenario with P = 2 on the six hosts (embedded broker, mqtts with
    client certificates): the workers on their hosts serve the streams, the coordinator on
    its host runs the secure sum with the devices on the fleet hosts; merged, the stream
    results and the secure sum equal the memory run's."""
    run = f"pshosts-{secrets.token_hex(3)}"
    text = with_partitions(SECURE.replace("devices = 16", "devices = 12"), 2)
    loaded, credentials, pki = _deploy(six_hosts, tmp_path, run, True, text)
    assert loaded.spec.secure_sum is not None and len(loaded.device_ids()) == 12
    url = start_tls_broker("embedded", six_hosts, credentials, pki)
    url = url.split("?ca=")[0] + "?ca=pki/ca.pem"
    results = run_partitioned_hosts(six_hosts, url, run, loaded)
    assert results["secure_sum"]["aborted"] is None and results["secure_sum"]["survivors"] > 0
