"""TLS between hosts (issue 23): ``mqtts://`` on the embedded broker and on a Mosquitto
started with the generated TLS configuration.

- both MQTT clients (ours and aiomqtt) speak TLS and verify the broker;
- a run over TLS stores exactly the privatised values of a plain run with the same seed;
- every failure — an expired, self-signed or foreign-CA certificate, a host name the
  certificate does not name, a plain client on the TLS port (and the reverse), a missing
  file, a missing or foreign client certificate — is one sentence with exit code 2 (the
  CLI's code for broker errors), never a traceback, and a failed verification is not
  retried.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import sqlite3
import sys
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from ldpfleet.app.certs import Issued, make_ca, make_certificate, write_pem, write_test_certificates
from ldpfleet.broker.embedded import EmbeddedBroker
from ldpfleet.broker.mqtt import MqttTransport, TlsRefused
from ldpfleet.broker.tls import ENV_CA, ENV_CERT, ENV_KEY, TlsServerSettings
from ldpfleet.broker.transport import ConnectionRefused, TransportError

from tests.conftest import free_port
from tests.mosquitto_process import MosquittoProcess

CLI = [sys.executable, "-m", "ldpfleet.app.cli"]
SAFETY = 240  # seconds: a hang fails the test instead of blocking the suite
SCENARIO = """
[scenario]
name = "tls"
seed = 7
[fleet]
devices = 8
[stream]
steps = 20
eps = 2.0
w = 5
mechanism = "sw"
batch_steps = 5
[source]
kind = "synthetic"
shape = "sine"
period = [12, 36]
amplitude = 10.0
offset = 20.0
noise = 0.5
phase = "random"
bounds = [5.0, 35.0]
"""  # the quickstart cut small


@pytest.fixture(autouse=True)
def no_tls_environment(monkeypatch):
    for name in (ENV_CA, ENV_CERT, ENV_KEY):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> dict[str, Path]:
    """``ldpfleet certs``'s files, plus broken broker certificates: expired, self-signed,
    signed by a foreign CA, and for another host name; and a foreign client certificate."""
    root = tmp_path_factory.mktemp("pki")
    paths = write_test_certificates(root, ["127.0.0.1", "localhost"])
    ca = Issued(
        x509.load_pem_x509_certificate(paths["ca"].read_bytes()),
        load_pem_private_key(paths["ca_key"].read_bytes(), None),
    )
    foreign = make_ca("another CA")
    long_ago = dt.datetime.now(dt.UTC) - dt.timedelta(days=30)
    broken = {
        "expired": make_certificate(ca, "old", hosts=["127.0.0.1"], days=1, start=long_ago),
        "self_signed": make_certificate(None, "self", hosts=["127.0.0.1"]),
        "foreign_ca": make_certificate(foreign, "elsewhere", hosts=["127.0.0.1"]),
        "other_host": make_certificate(ca, "other", hosts=["broker.example"]),
        "foreign_client": make_certificate(foreign, "stranger", client=True),
    }
    for name, issued in broken.items():
        paths[name] = root / f"{name}.pem"
        paths[f"{name}_key"] = root / f"{name}.key"
        write_pem(issued, paths[name], paths[f"{name}_key"])
    return paths


def server(pki, name: str = "server", *, client_ca: bool = False) -> TlsServerSettings:
    return TlsServerSettings(
        str(pki[name]), str(pki[f"{name}_key"]), str(pki["ca"]) if client_ca else None
    )


async def cli(*args: str, cwd: Path) -> tuple[int, str]:
    """Run ``ldpfleet ARGS`` without blocking the event loop (an in-process broker keeps
    serving); its exit code and its stdout + stderr."""
    process = await asyncio.create_subprocess_exec(
        *CLI, *args, cwd=cwd, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    output, _ = await asyncio.wait_for(process.communicate(), SAFETY)
    return process.returncode, output.decode()


def one_sentence(code: int, output: str) -> str:
    """The failure's one line: exit code 2, ``error: ...``, no traceback."""
    assert code == 2, output
    assert "Traceback" not in output, output
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), output
    return lines[0]


def reported_values(out: Path) -> dict:
    """Every privatised report of a run, from its trace: (device, seq) -> (mechanism, eps,
    values)."""
    with sqlite3.connect(out / "trace.sqlite") as db:
        rows = db.execute("SELECT payload FROM messages WHERE kind = 'sw_report'").fetchall()
    reports = {}
    for (payload,) in rows:
        report = json.loads(payload)
        reports[report["sender"], report["seq"]] = (
            report["mechanism"],
            report["eps0"],
            report["values"],
        )
    return reports


def assert_same_run(tls_out: Path, plain_out: Path) -> None:
    tls, plain = (json.loads((out / "results.json").read_text()) for out in (tls_out, plain_out))
    assert tls["reports_lost"] == 0 and tls["devices_complete"] == 8
    assert tls["per_device"] == plain["per_device"]
    assert tls["accuracy"] == plain["accuracy"]
    mine, theirs = reported_values(tls_out), reported_values(plain_out)
    assert len(mine) == 8 * 4 and mine == theirs  # 8 devices x 20 steps / 5 per report


@pytest.fixture(scope="module")
def plain_run(tmp_path_factory) -> Path:
    """The same scenario, plain MQTT on the embedded broker (``ldpfleet run``)."""
    root = tmp_path_factory.mktemp("plain")
    (root / "scenario.toml").write_text(SCENARIO)
    code, output = asyncio.run(
        cli("run", "scenario.toml", "--broker", "embedded", "--out", "out", cwd=root)
    )
    assert code == 0, output
    return root / "out"


# ---- the embedded broker ------------------------------------------------------------------


@pytest.mark.embedded
@pytest.mark.parametrize("client", ["wire", "aiomqtt"])
async def test_both_clients_speak_tls_to_the_embedded_broker(client, pki, monkeypatch):
    monkeypatch.setenv("LDPFLEET_MQTT_CLIENT", client)
    async with EmbeddedBroker(tls=server(pki)) as broker:
        assert broker.url.startswith("mqtts://")
        transport = MqttTransport(f"{broker.url}?ca={pki['ca']}")
        async with transport.connect("reader") as reader, transport.connect("writer") as writer:
            await reader.subscribe("t/#")
            await writer.publish("t/1", b"over tls")
            delivery = await asyncio.wait_for(anext(aiter(reader.messages())), SAFETY)
        assert (delivery.topic, delivery.payload) == ("t/1", b"over tls")


@pytest.mark.embedded
@pytest.mark.parametrize("client", ["wire", "aiomqtt"])
@pytest.mark.parametrize(
    ("certificate", "host", "says"),
    [
        ("expired", "127.0.0.1", "has expired"),
        ("self_signed", "127.0.0.1", "is self-signed and not signed by the CA in"),
        ("foreign_ca", "127.0.0.1", "is not signed by the CA in"),
        ("server", "localhost", None),  # the certificate names localhost too: accepted
        ("other_host", "127.0.0.1", "is not valid for that host name"),
    ],
)
async def test_a_certificate_that_does_not_verify_is_refused_at_once(
    client, certificate, host, says, pki, monkeypatch
):
    monkeypatch.setenv("LDPFLEET_MQTT_CLIENT", client)
    async with EmbeddedBroker(tls=server(pki, certificate)) as broker:
        transport = MqttTransport(f"mqtts://{host}:{broker.port}?ca={pki['ca']}")
        if says is None:
            async with transport.connect("fine"):
                return
        # TlsRefused is raised only by the no-retry path (a retried failure would end as
        # "cannot connect ... after 6 attempts")
        with pytest.raises(TlsRefused) as raised:
            async with transport.connect("refused"):
                pass
        assert says in str(raised.value) and "after" not in str(raised.value)


@pytest.mark.slow  # several ldpfleet processes
@pytest.mark.embedded
@pytest.mark.parametrize(
    ("certificate", "url", "says"),
    [
        ("expired", "mqtts://127.0.0.1:{port}?ca={ca}", "certificate of the broker at "
         "127.0.0.1:{port} has expired: renew it"),
        ("self_signed", "mqtts://127.0.0.1:{port}?ca={ca}", "is self-signed and not signed by "
         "the CA in {ca}: pass the CA that signed it"),
        ("foreign_ca", "mqtts://127.0.0.1:{port}?ca={ca}", "is not signed by the CA in {ca}"),
        ("server", "mqtts://127.0.0.1:{port}", "is not signed by the system's trusted CAs"),
        ("other_host", "mqtts://127.0.0.1:{port}?ca={ca}", "is not valid for that host name"),
        ("server", "mqtt://127.0.0.1:{port}", "the broker at 127.0.0.1:{port} expects TLS on "
         "that port: use mqtts://127.0.0.1:{port}?ca=PATH"),
        ("server", "mqtts://127.0.0.1:{port}?ca=missing.pem", "the ca file missing.pem does not "
         "exist"),
    ],
)  # fmt: skip
async def test_ldpfleet_run_says_what_is_wrong_in_one_sentence(
    certificate, url, says, pki, tmp_path
):
    (tmp_path / "scenario.toml").write_text(SCENARIO)
    async with EmbeddedBroker(tls=server(pki, certificate)) as broker:
        values = {"port": broker.port, "ca": pki["ca"]}
        code, output = await cli(
            "run", "scenario.toml", "--broker", url.format(**values), "--out", "out", cwd=tmp_path
        )
    assert says.format(**values) in one_sentence(code, output)


@pytest.mark.embedded
async def test_a_tls_client_on_a_plain_port_is_told_so(tmp_path):
    (tmp_path / "scenario.toml").write_text(SCENARIO)
    async with EmbeddedBroker() as broker:
        port = broker.port
        url = f"mqtts://127.0.0.1:{port}"
        code, output = await cli(
            "run", "scenario.toml", "--broker", url, "--out", "o", cwd=tmp_path
        )
    assert (
        f"the broker at 127.0.0.1:{port} does not speak TLS on that port: use mqtt://"
        in one_sentence(code, output)
    )


@pytest.mark.embedded
async def test_the_embedded_broker_requires_client_certificates_with_a_client_ca(pki):
    async with EmbeddedBroker(tls=server(pki, client_ca=True)) as broker:
        base = f"{broker.url}?ca={pki['ca']}"
        async with MqttTransport(f"{base}&cert={pki['client']}&key={pki['client_key']}").connect(
            "with-certificate"
        ) as conn:
            await conn.publish("t", b"x")
        with pytest.raises(ConnectionRefused, match="may require a client certificate"):
            async with MqttTransport(base).connect("without"):
                pass
        # amqtt (Python's ssl) resets the connection without an alert: after the retries,
        # the likely reason
        foreign = f"{base}&cert={pki['foreign_client']}&key={pki['foreign_client_key']}"
        with pytest.raises(TransportError, match="does not accept the client certificate"):
            async with MqttTransport(foreign, connect_attempts=2).connect("stranger"):
                pass


@pytest.mark.embedded
@pytest.mark.slow
async def test_a_run_over_tls_on_the_embedded_broker_equals_the_plain_run(pki, tmp_path, plain_run):
    """``ldpfleet broker --tls-cert --tls-key`` and ``ldpfleet run --broker mqtts://``: the
    collector side, the recorder and the fleet all connect over TLS (the collector process
    gets the URL with its ?ca=), and the stored reports are the plain run's."""
    (tmp_path / "scenario.toml").write_text(SCENARIO)
    broker = await asyncio.create_subprocess_exec(
        *CLI, "broker", "--port", "0", "--tls-cert", str(pki["server"]),
        "--tls-key", str(pki["server_key"]),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    try:
        assert broker.stdout is not None
        url = (await asyncio.wait_for(broker.stdout.readline(), SAFETY)).decode().strip()
        assert url.startswith("mqtts://127.0.0.1:"), url
        code, output = await cli(
            "run", "scenario.toml", "--broker", f"{url}?ca={pki['ca']}", "--out", "out",
            cwd=tmp_path,
        )  # fmt: skip
    finally:
        broker.terminate()
        await broker.wait()
    assert code == 0, output
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["broker"]["url"] == f"{url}?ca={pki['ca']}"
    assert_same_run(tmp_path / "out", plain_run)


@pytest.mark.embedded
@pytest.mark.slow
async def test_scenario_broker_url_and_shard_brokers_take_mqtts(pki, tmp_path, plain_run):
    """``[broker] url = "mqtts://..."`` in the scenario and ``--shard-broker mqtts://...``
    (relative ``ca``: every process resolves it in the run's directory): two fleet shards
    as processes, the same reports as the plain one-shard run."""
    (tmp_path / "ca.pem").write_bytes(pki["ca"].read_bytes())
    async with EmbeddedBroker(tls=server(pki)) as broker:
        port = broker.port
        url = f"mqtts://localhost:{port}?ca=ca.pem"
        text = SCENARIO.replace("[fleet]\n", "[fleet]\nshards = 2\n")
        (tmp_path / "scenario.toml").write_text(f'{text}\n[broker]\nurl = "{url}"\n')
        code, output = await cli(
            "run", "scenario.toml", "--shard-broker", url, "--shard-broker", url,
            "--out", "out", cwd=tmp_path,
        )  # fmt: skip
    assert code == 0, output
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert results["broker"]["url"] == f"mqtts://localhost:{port}?ca={tmp_path}/ca.pem"
    assert len(results["side_processes"]["fleet_shards"]) == 2
    assert_same_run(tmp_path / "out", plain_run)


# ---- Mosquitto with the generated configuration --------------------------------------------


async def generated_mosquitto(pki, directory: Path, *extra: str) -> tuple[dict, MosquittoProcess]:
    """``ldpfleet mosquitto-config`` with a TLS listener on free ports; the process (not
    started) and the ports."""
    directory.mkdir()
    (directory / "scenario.toml").write_text(SCENARIO)
    ports = {"plain": free_port(), "tls": free_port()}
    code, output = await cli(
        "mosquitto-config", "scenario.toml", "--out", "conf", "--run", "tls-run",
        "--port", str(ports["plain"]), "--tls-port", str(ports["tls"]),
        "--tls-cert", str(pki["server"]), "--tls-key", str(pki["server_key"]),
        "--tls-ca", str(pki["ca"]),
        # Mosquitto started by root drops to 'mosquitto', which cannot read pytest's
        # 0700 tmp directory
        *(["--run-as", "root"] if os.geteuid() == 0 else []),
        *extra,
        cwd=directory,
    )  # fmt: skip
    assert code == 0, output
    conf = directory / "conf" / "mosquitto.conf"
    assert f"listener {ports['tls']} 127.0.0.1" in conf.read_text()
    with conf.open("a") as handle:  # MosquittoProcess waits for the "running" line
        handle.write("log_dest stderr\nlog_type information\n")
    return ports, MosquittoProcess(conf)


@pytest.mark.mosquitto
@pytest.mark.slow
async def test_a_run_over_tls_on_mosquitto_with_the_generated_config(pki, tmp_path, plain_run):
    ports, mosquitto = await generated_mosquitto(pki, tmp_path / "m")
    creds = str(tmp_path / "m" / "conf" / "credentials.json")
    tls_url = f"mqtts://127.0.0.1:{ports['tls']}?ca={pki['ca']}"
    async with mosquitto:
        code, output = await cli(
            "run", "scenario.toml", "--broker", tls_url, "--credentials", creds,
            "--out", "out", cwd=tmp_path / "m",
        )  # fmt: skip
        assert code == 0, output
        # a plain client on the TLS port, a TLS client on the plain port
        wrong = [
            (f"mqtt://127.0.0.1:{ports['tls']}", "expects TLS on that port"),
            (f"mqtts://127.0.0.1:{ports['plain']}?ca={pki['ca']}", "does not speak TLS"),
        ]
        for url, says in wrong:
            code, output = await cli(
                "run", "scenario.toml", "--broker", url, "--credentials", creds,
                "--out", "wrong", cwd=tmp_path / "m",
            )  # fmt: skip
            assert says in one_sentence(code, output)
    assert_same_run(tmp_path / "m" / "out", plain_run)


@pytest.mark.slow  # several ldpfleet processes
@pytest.mark.mosquitto
async def test_mosquitto_with_require_certificate(pki, tmp_path):
    ports, mosquitto = await generated_mosquitto(
        pki, tmp_path / "m", "--require-certificate", "--tls-only"
    )
    conf = (tmp_path / "m" / "conf" / "mosquitto.conf").read_text()
    assert "require_certificate true" in conf and f"listener {ports['plain']} " not in conf
    creds = json.loads((tmp_path / "m" / "conf" / "credentials.json").read_text())
    assert creds  # the admin login below is one of them
    from ldpfleet.broker.auth import Credentials

    credentials = Credentials.load(tmp_path / "m" / "conf" / "credentials.json")
    base = f"mqtts://127.0.0.1:{ports['tls']}?ca={pki['ca']}"
    async with mosquitto:
        client = f"{base}&cert={pki['client']}&key={pki['client_key']}"
        async with MqttTransport(client, credentials=credentials).connect("tls-run-collector"):
            pass
        with pytest.raises(TransportError, match="requires a client certificate"):
            async with MqttTransport(base, credentials=credentials).connect("tls-run-collector"):
                pass
        foreign = f"{base}&cert={pki['foreign_client']}&key={pki['foreign_client_key']}"
        with pytest.raises(TransportError, match="refused our client certificate"):
            async with MqttTransport(foreign, credentials=credentials).connect("tls-run-collector"):
                pass
