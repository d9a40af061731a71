"""The separate-hosts run over TLS (issue 23, "TLS between hosts"): the broker, the
collector and two fleet shards each in a network namespace of its own
(tests/e2e/test_separate_hosts.py's hosts), every connection over ``mqtts://`` with a
client certificate — the broker refuses clients without one — so no password crosses the
switch between the namespaces in the clear.

The certificates come from ``ldpfleet certs --host <the broker host's address>``; like the
run's credentials they are handed to every host (a deployment step). The CA travels in the
URL (``?ca=``), the client certificate and key in ``LDPFLEET_TLS_CERT`` /
``LDPFLEET_TLS_KEY``: both ways of giving the files are used. The merged run must equal the
one-process run of the same seed, as without TLS.
"""

from __future__ import annotations

import secrets
import subprocess

import pytest
from ldpfleet.broker.auth import Credentials, write_mosquitto_files
from ldpfleet.broker.tls import ENV_CERT, ENV_KEY, TlsListener
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import mosquitto_binary
from tests.e2e.test_separate_hosts import (
    CLI,
    PORT,
    SAFETY,
    SCENARIO,
    Hosts,
    hosts,  # noqa: F401 - the fixture: four hosts in network namespaces
    run_gather_and_check,
    side_options,
)

pytestmark = [pytest.mark.slow, pytest.mark.netns]


def pki_paths(folder) -> dict:
    """The files ``ldpfleet certs --out folder`` writes, by role."""
    files = {
        "ca": "ca.pem", "server": "server.pem", "server_key": "server.key",
        "client": "client.pem", "client_key": "client.key",
    }  # fmt: skip
    return {name: folder / file for name, file in files.items()}


def start_tls_broker(kind: str, machines: Hosts, credentials, pki: dict) -> str:
    """The broker on its host, listening with TLS only and requiring client certificates;
    its URL as the other hosts reach it."""
    address = machines.addr("broker")
    if kind == "embedded":
        proc = machines.run(
            "broker", "broker.log", *CLI, "broker", "--host", address, "--port", str(PORT),
            "--credentials", str(credentials), "--tls-cert", str(pki["server"]),
            "--tls-key", str(pki["server_key"]), "--tls-ca", str(pki["ca"]),
        )  # fmt: skip
        machines.wait_for("broker.log", "listening on", proc)
    else:
        tls = TlsListener(
            PORT, str(pki["server"]), str(pki["server_key"]), str(pki["ca"]), address, True
        )
        paths = write_mosquitto_files(
            machines.folder / "mosquitto",
            Credentials.load(credentials),
            port=PORT,
            persistence=False,
            user="root",  # started by root: keep reading the files in pytest's 0700 tmp
            tls=tls,
            plain=False,
        )
        with paths["conf"].open("a") as conf:
            conf.write("log_dest stderr\nlog_type information\n")
        proc = machines.run("broker", "broker.log", mosquitto_binary(), "-c", str(paths["conf"]))
        machines.wait_for("broker.log", " running", proc)
    return f"mqtts://{address}:{PORT}?ca={pki['ca']}"


@pytest.mark.parametrize(
    "kind",
    [pytest.param("embedded", marks=pytest.mark.embedded), "mosquitto"],
)
def test_four_hosts_over_tls_with_client_certificates(kind, hosts, tmp_path):  # noqa: F811
    scenario = tmp_path / "scenario.toml"
    scenario.write_text(SCENARIO)
    run = f"tls-hosts-{secrets.token_hex(3)}"
    loaded = parse_scenario(SCENARIO, scenario)
    credentials = Credentials.generate(run, loaded.device_ids()).save(tmp_path / "creds.json")
    made = subprocess.run(
        [*CLI, "certs", "--out", str(tmp_path / "pki"), "--host", hosts.addr("broker")],
        capture_output=True, text=True, timeout=SAFETY,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    pki = pki_paths(tmp_path / "pki")
    url = start_tls_broker(kind, hosts, credentials, pki)

    # without a client certificate the broker lets nobody in: one sentence, exit 2
    side = side_options(url, run, credentials)
    refused = hosts.run(
        "collector", "refused.log", *CLI, "collector", str(scenario), *side,
        "--out", str(tmp_path / "refused"),
    )  # fmt: skip
    assert refused.wait(timeout=SAFETY) == 2, hosts.logs()
    said = hosts.log("refused.log")
    assert "Traceback" not in said and "client certificate" in said, said

    hosts.env |= {ENV_CERT: str(pki["client"]), ENV_KEY: str(pki["client_key"])}
    results = run_gather_and_check(hosts, scenario, loaded, side)
    assert results["broker"]["url"].startswith(f"mqtts://{hosts.addr('broker')}:{PORT}")
