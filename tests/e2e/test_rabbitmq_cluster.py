"""MQTT across a two-node RabbitMQ cluster started by ``scripts/rabbitmq-cluster.sh``,
and the same cluster with a third node for the collector.

A client on node A publishes, a subscriber on node B receives: routing crosses the
Erlang distribution link. Checked: 200 QoS 1 messages arrive complete and in order, and a
persistent session (clean_session=False) keeps what was published while its client was
away, whichever node the client comes back to. Every wait is for a condition, bounded
by a timeout; nothing sleeps."""

from __future__ import annotations

import asyncio
import json
import os
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from ldpfleet.broker.mqtt import MqttConnection, MqttTransport

from tests.conftest import service_missing

pytestmark = [pytest.mark.rabbitmq_cluster, pytest.mark.slow]

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "rabbitmq-cluster.sh"
# the script runs RabbitMQ's own scripts from here (Debian's /usr/sbin ones switch user)
SBIN = Path(os.environ.get("LDPFLEET_RABBIT_SBIN", "/usr/lib/rabbitmq/bin"))
START_TIMEOUT = 180.0  # the script's own bound is 120 s; this one catches a hung script
STOP_TIMEOUT = 150.0
TIMEOUT = 30.0  # for deliveries
FILTER = "ldp/r1/dev/+/up/#"
TOPIC = "ldp/r1/dev/d0001/up/sw_report"


def run_script(command: str, timeout: float, nodes: int = 2) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(SCRIPT), command],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        env={**os.environ, "LDPFLEET_RABBIT_NODES": str(nodes)},
    )


def start_cluster(nodes: int = 2) -> subprocess.CompletedProcess[str]:
    """``rabbitmq-cluster.sh start``, once more if the first attempt failed (a loaded
    machine can time out a node's start or join; the script restarts an incomplete
    cluster); the output of both attempts when both fail."""
    first = run_script("start", START_TIMEOUT, nodes=nodes)
    if first.returncode == 0:
        return first
    second = run_script("start", START_TIMEOUT, nodes=nodes)
    second.stdout = (
        f"first attempt:\n{first.stdout}{first.stderr}\nsecond attempt:\n{second.stdout}"
    )
    return second


@pytest.fixture(scope="module")
def cluster_urls() -> Iterator[tuple[str, str]]:
    """(node A URL, node B URL) of the cluster (started fresh unless it is already up),
    stopped after the module; skipped without RabbitMQ, a failure in CI."""
    if not (SBIN / "rabbitmq-server").exists():
        reason = f"rabbitmq-server is not installed: no {SBIN}/rabbitmq-server"
        service_missing(
            f"{reason} (apt-get install rabbitmq-server, or set LDPFLEET_RABBIT_SBIN)",
            in_ci=f"{reason} (CI must apt-get install rabbitmq-server)",
        )
    try:
        started = start_cluster()
        if started.returncode != 0:
            pytest.fail(
                f"rabbitmq-cluster.sh start failed ({started.returncode}):\n"
                f"{started.stdout}{started.stderr}"
            )
        urls = run_script("urls", 10).stdout.split()
        assert len(urls) == 2, urls
        yield urls[0], urls[1]
    finally:
        stopped = run_script("stop", STOP_TIMEOUT)
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr


def client_id(role: str) -> str:
    """Client ids are unique across the whole cluster (a second connection with the same
    id, on either node, disconnects the first)."""
    return f"ldpfleet-test-{role}-{random.getrandbits(32):08x}"


async def receive(conn: MqttConnection, count: int) -> list[tuple[str, bytes]]:
    """The next ``count`` deliveries of ``conn``, within TIMEOUT."""
    got: list[tuple[str, bytes]] = []
    async with asyncio.timeout(TIMEOUT):
        async for delivery in conn.messages():
            got.append((delivery.topic, delivery.payload))
            if len(got) == count:
                break
    return got


async def test_qos1_messages_cross_nodes_in_order(cluster_urls):
    url_a, url_b = cluster_urls
    node_a, node_b = MqttTransport(url_a), MqttTransport(url_b)
    sent = [(TOPIC, f"report {i:03d}".encode()) for i in range(200)]
    async with node_b.connect(client_id("sub")) as subscriber:
        # the SUBACK comes after the binding is committed on every node
        await subscriber.subscribe(FILTER, qos=1)
        async with node_a.connect(client_id("pub")) as publisher:
            for topic, payload in sent:  # one at a time: each waits for its PUBACK
                await publisher.publish(topic, payload, qos=1)
        assert await receive(subscriber, len(sent)) == sent


@pytest.mark.parametrize("back_on", ["b", "a"])
async def test_persistent_session_keeps_messages_across_a_disconnect(cluster_urls, back_on):
    """Subscribe on B with clean_session=False, leave, publish on A, come back (on B, or
    on A: the session's queue lives on B and is consumed through the cluster)."""
    url_a, url_b = cluster_urls
    node_a, node_b = MqttTransport(url_a), MqttTransport(url_b)
    me = client_id(f"persistent-{back_on}")
    async with node_b.connect(me, clean_session=False) as away:
        await away.subscribe(FILTER, qos=1)
    sent = [(f"ldp/r1/dev/d{i % 4:04d}/up/sw_report", f"kept {i:02d}".encode()) for i in range(20)]
    async with node_a.connect(client_id("pub")) as publisher:
        for topic, payload in sent:
            await publisher.publish(topic, payload, qos=1)
    back = node_b if back_on == "b" else node_a
    async with back.connect(me, clean_session=False) as returned:
        assert await receive(returned, len(sent)) == sent
    # end the session so its queue does not outlive the test
    async with back.connect(me, clean_session=True):
        pass


CLUSTER_RUN = """
[scenario]
name = "cluster"
seed = 9
[fleet]
devices = 16
shards = 2
[stream]
steps = 60
batch_steps = 5
eps = 1.0
w = 5
[source]
kind = "synthetic"
shape = "sine"
period = 12
bounds = [-1.0, 1.0]
"""


async def sharded_run_equals_one_broker(tmp_path, collector_url: str, shard_urls: list[str]):
    """Run CLUSTER_RUN with fleet shard i on ``shard_urls[i]`` and the collector and the
    recorder on ``collector_url``: its stored reports and estimates must be those of the
    same run on one broker."""
    from ldpfleet.scenarios.runner import run_scenario
    from ldpfleet.scenarios.schema import parse_scenario

    from tests.e2e.test_fault_device_crashes import store_rows

    scenario = parse_scenario(CLUSTER_RUN)
    one = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "one", run_id="rc1")
    run = f"rc{random.getrandbits(24):06x}"  # client ids must be new to the cluster
    clustered = await run_scenario(
        scenario,
        broker=collector_url,
        out_dir=tmp_path / "cluster",
        run_id=run,
        shard_brokers=shard_urls,
    )
    assert clustered["stages"]["fleet_build"]["shards"] == 2
    assert clustered["broker"]["shard_brokers"] == shard_urls
    assert clustered["reports_lost"] == 0 and clustered["devices_complete"] == 16
    assert clustered["per_device"] == one["per_device"]
    assert store_rows(tmp_path / "cluster") == store_rows(tmp_path / "one")
    # the shards really were on different nodes
    used = [
        json.loads(
            (tmp_path / "cluster" / "shards" / f"fleet-{i}-of-2" / "outcomes.json").read_text()
        )["broker"]
        for i in range(2)
    ]
    assert used == shard_urls


async def test_a_sharded_run_across_the_cluster_equals_one_broker(cluster_urls, tmp_path):
    """Two nodes: fleet shard 0 on node A, shard 1 and the collector on node B."""
    url_a, url_b = cluster_urls
    await sharded_run_equals_one_broker(tmp_path, url_b, [url_a, url_b])


async def test_the_collector_on_a_third_node(cluster_urls, tmp_path):
    """Node C joins the running cluster (``LDPFLEET_RABBIT_NODES=3 ... start``); fleet
    shard 0 on node A, shard 1 on node B, the collector and the recorder on node C, so
    every report and every acknowledgement crosses the cluster. (The module's fixture
    stops all three nodes.)"""
    started = start_cluster(nodes=3)
    assert started.returncode == 0, started.stdout + started.stderr
    urls = run_script("urls", 10, nodes=3).stdout.split()
    assert urls[:2] == list(cluster_urls) and len(urls) == 3
    status = run_script("status", 60, nodes=3)
    assert status.returncode == 0, status.stdout + status.stderr
    assert "ldpfleet-c@localhost" in status.stdout.splitlines()[-1]  # a running member
    await sharded_run_equals_one_broker(tmp_path, urls[2], urls[:2])


PARTITIONED_RUN = CLUSTER_RUN.replace("[fleet]\n", "[collector]\npartitions = 2\n\n[fleet]\n", 1)
# the announcement repeated every second: shards on nodes without the retained copy join
ANNOUNCED_EVERY_SECOND = "\n[broker]\nannounce_every = 1.0\n"


async def announced_on(url: str, run: str) -> None:
    """Return once ``url``'s node hands a new subscriber the run's retained RunOpen (the
    coordinator has announced the run there)."""
    from ldpfleet.protocol import codec, topics
    from ldpfleet.protocol.rendezvous import RunOpen

    async with MqttTransport(url).connect(client_id("probe")) as probe:
        await probe.subscribe(topics.ctl(run, "run"), qos=1)
        async with asyncio.timeout(START_TIMEOUT):
            async for delivery in probe.messages():
                if delivery.payload and isinstance(codec.decode(delivery.payload), RunOpen):
                    return


def test_partitions_on_different_nodes_equal_the_memory_run(cluster_urls, tmp_path):
    """Three nodes (node C joins as in the test above): the coordinator on node C, partition
    worker 0 on node A, worker 1 on node B, fleet shard 0 on A and shard 1 on B; each a
    program of its own (``ldpfleet collector --coordinator`` / ``--partition p/2``,
    ``ldpfleet fleet --shard i/2``) writing its own directory. Every report crosses the
    cluster to its worker's node and every acknowledgement back; the workers' status to the
    coordinator and its stage messages to them cross it too. ``ldpfleet merge`` of the five
    directories, ``trace verify`` on the merged run, and the results and ledger equal the
    memory run of the same seed.

    The shards start only once the coordinator has announced the run on node C. RabbitMQ
    3.10 keeps a retained message on the node it was published on
    (docs/rabbitmq-cluster-notes.md), so shards on A and B never get the retained
    announcement (without repeats they gave up: "no collector announced run ..."); with
    ``[broker] announce_every`` they join on the next repeat, live across the cluster."""
    partitions_on_nodes(cluster_urls, tmp_path)


def test_a_partitioned_gcdp_release_on_different_nodes_equals_the_memory_run(
    cluster_urls, tmp_path
):
    """The same placement with a ``[gcdp]`` release: each worker's window means cross the
    cluster to the coordinator on node C, on the topic of its statuses and before its
    ``closed``; the release (entry, ledger) equals the one-collector memory run's."""
    from tests.e2e.test_partition_gcdp import RELEASE, gcdp_entry
    from tests.e2e.test_partitions import with_partitions

    results, one = partitions_on_nodes(
        cluster_urls, tmp_path, with_partitions(RELEASE, 2), devices=20
    )
    assert gcdp_entry(results) == gcdp_entry(one)
    assert results["gcdp"]["windows_released"] == results["gcdp"]["windows_expected"] == 20


def test_a_partitioned_hostile_flood_on_different_nodes_equals_the_memory_run(
    cluster_urls, tmp_path
):
    """The same placement with ``[faults] hostile_messages``: fleet shard 0 (node A) floods
    ``d0000``'s and the ``intruder``'s topics, in the two partitions; each worker counts
    what reaches it and holds its stage for it; the merged counts and fault report equal
    the one-collector memory run's."""
    from tests.e2e.test_partition_hostile import HOSTILE, check_attack
    from tests.e2e.test_partitions import with_partitions

    results, one = partitions_on_nodes(
        cluster_urls, tmp_path, with_partitions(HOSTILE, 2), attacked=True
    )
    check_attack(results)
    check_attack(one)
    assert results["faults"] == one["faults"]
    assert results["rejections_by_reason"] == one["rejections_by_reason"]


def partitions_on_nodes(
    cluster_urls, tmp_path, text: str | None = None, devices: int = 16, attacked: bool = False
):
    """The run of ``test_partitions_on_different_nodes_equal_the_memory_run`` (``text``:
    another partitioned scenario of ``devices`` devices; ``attacked``: a hostile flood,
    which ``trace verify`` must flag); returns (merged results, the memory run's)."""
    import asyncio

    from ldpfleet.scenarios.runner import run_scenario
    from ldpfleet.scenarios.schema import parse_scenario

    from tests.e2e.test_partitions import SAME
    from tests.e2e.test_sides import BASE, Processes

    assert PARTITIONED_RUN != CLUSTER_RUN
    text = text or PARTITIONED_RUN
    started = start_cluster(nodes=3)
    assert started.returncode == 0, started.stdout + started.stderr
    url_a, url_b, url_c = run_script("urls", 10, nodes=3).stdout.split()
    assert [url_a, url_b] == list(cluster_urls)
    scenario = tmp_path / "partitioned.toml"
    scenario.write_text(text + ANNOUNCED_EVERY_SECOND)
    run = f"rp{random.getrandbits(24):06x}"  # client ids must be new to the cluster
    where = {  # name: (node URL, the side's own flags)
        "coordinator": (url_c, ["collector", "--coordinator"]),
        "part0": (url_a, ["collector", "--partition", "0/2"]),
        "part1": (url_b, ["collector", "--partition", "1/2"]),
        "fleet0": (url_a, ["fleet", "--shard", "0/2"]),
        "fleet1": (url_b, ["fleet", "--shard", "1/2"]),
    }
    procs = Processes(tmp_path)
    try:
        for name, (url, (command, *flags)) in where.items():
            if name == "fleet0":  # the shards subscribe after the announcement
                asyncio.run(announced_on(url_c, run))
            procs.spawn(
                name, command, str(scenario), "--broker", url, "--run", run, *flags, "--out", name
            )
        for name, proc in procs.procs.items():
            assert proc.wait(timeout=START_TIMEOUT) == 0, (name, procs.logs())
    finally:
        procs.close()

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*BASE, *args], cwd=tmp_path, capture_output=True, text=True, timeout=START_TIMEOUT,
        )  # fmt: skip

    merged = cli("merge", *where, "--out", "merged")
    assert merged.returncode == 0, merged.stdout + merged.stderr
    verify = cli("trace", "verify", "merged")
    # a flood on d0000's topics does not match its ledger: the audit says so
    assert verify.returncode == (1 if attacked else 0), verify.stdout + verify.stderr
    assert "signature 3" in verify.stdout, verify.stdout  # the coordinator's + two workers'
    assert ("MISMATCH row" in verify.stdout) == attacked, verify.stdout

    results = json.loads((tmp_path / "merged" / "results.json").read_text())
    loaded = parse_scenario(text + ANNOUNCED_EVERY_SECOND)
    one = asyncio.run(run_scenario(loaded, broker="memory", out_dir=tmp_path / "one", run_id=run))
    assert results["reports_lost"] == 0 and results["devices_complete"] == devices
    for key in SAME:
        assert results[key] == one[key], key
    ledger = json.loads((tmp_path / "merged" / "ledger.json").read_text())
    assert ledger == json.loads((tmp_path / "one" / "ledger.json").read_text())
    # each side really was on its node
    assert (
        json.loads((tmp_path / "coordinator" / "results.json").read_text())["broker"]["url"]
        == url_c
    )
    for name in ("part0", "part1"):
        side = json.loads((tmp_path / name / "results.json").read_text())
        assert side["broker"]["url"] == where[name][0], name
    for name in ("fleet0", "fleet1"):
        side = json.loads((tmp_path / name / "outcomes.json").read_text())
        assert side["broker"] == where[name][0], name
    return results, one
