"""Shared fixtures: brokers for the real-broker tier, and scenario builders."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
from pathlib import Path
from typing import NoReturn

import pytest
from hypothesis import HealthCheck, settings
from ldpfleet.broker.embedded import EmbeddedBroker

from tests.tiers import pytest_collection_modifyitems  # noqa: F401  (the slow tier)

ROOT = Path(__file__).resolve().parent.parent

# Hypothesis's defaults judge the machine's speed: a 200 ms deadline per example and a
# health check failing a test whose first examples took more than 1 s to draw (30 s with
# no deadline), both in wall time. On a busy CI machine either fails a correct test, so no
# test here inherits them (a test's own @settings still overrides the rest).
settings.register_profile(
    "load-independent", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("load-independent")
MOSQUITTO_HOST, MOSQUITTO_PORT = "127.0.0.1", 1883


def service_missing(reason: str, *, in_ci: str | None = None) -> NoReturn:
    """A service a test tier needs is not here: the test fails in CI (``.ci/run`` provides
    every such service; ``in_ci`` says so, default ``reason``) and is skipped elsewhere
    (a laptop without it). The one place tests decide between skipping and failing."""
    if os.environ.get("CI"):
        pytest.fail(in_ci or reason)
    pytest.skip(reason)


def sigint_as_in_a_terminal() -> None:
    """``preexec_fn`` for a process a test sends the terminal's Ctrl-C (SIGINT): SIGINT
    back to its default in the child, as in a terminal's foreground job. A child inherits
    an ignored SIGINT, and a pytest started in the background by a non-interactive shell
    (``cmd &`` in a CI script) has SIGINT ignored: the child's Python then installs no
    KeyboardInterrupt handler, asyncio none of its own, the SIGINT is lost and the test
    fails at its hang guard (seen 2026-12-06, tests/e2e/test_ctrl_c_split_run.py, helper
    D). With it, the test's outcome does not depend on how pytest was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def mosquitto_running() -> bool:
    """True if something accepts TCP connections on 127.0.0.1:1883."""
    try:
        with socket.create_connection((MOSQUITTO_HOST, MOSQUITTO_PORT), timeout=1):
            return True
    except OSError:
        return False


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def mosquitto_binary() -> str:
    """The mosquitto executable for tests that start their own broker; skipped without
    it, a failure in CI (which installs it)."""
    binary = shutil.which("mosquitto")
    if binary is None:
        service_missing(
            "mosquitto is not installed (apt-get install mosquitto)",
            in_ci="the mosquitto binary must be installed in CI",
        )
    return binary


# a parameter of a broker-parametrised fixture that runs on the local Mosquitto
MOSQUITTO = pytest.param("mosquitto", marks=pytest.mark.mosquitto)

# This pytest process's suffix for names on the shared Mosquitto. Two test sessions on one
# machine (two clones' CI, a developer's run beside CI) share 127.0.0.1:1883; the same run
# id there means the same client ids and topics, so the broker hands one session's
# connections to the other ("connection lost", a sharded run with reports_lost 64 under
# load). Observed 2026-12-04: two concurrent runs of tests/e2e/test_shards.py's Mosquitto
# case, one failed; with this suffix both pass.
SESSION_SUFFIX = secrets.token_hex(3)


def shared_name(broker, name: str) -> str:
    """``name`` (a run id, a client id, a topic level) as this test session uses it on
    ``broker``: unchanged on a broker of its own (memory, an embedded broker, a transport
    object, a broker this test started), with ``-<SESSION_SUFFIX>`` on the shared local
    Mosquitto. Results do not depend on the run id, so a run compared with a memory run of
    the plain id still matches."""
    shared = isinstance(broker, str) and broker.endswith(f"{MOSQUITTO_HOST}:{MOSQUITTO_PORT}")
    return f"{name}-{SESSION_SUFFIX}" if shared else name


def broker_for(request) -> str:
    """The broker a parametrised fixture's test runs on: ``"mosquitto"`` becomes the local
    Mosquitto's URL (skipped or failed like ``mosquitto_url``); ``"memory"`` and
    ``"embedded"`` stay as they are."""
    if request.param == "mosquitto":
        return request.getfixturevalue("mosquitto_url")
    return request.param


@pytest.fixture
def mosquitto_url() -> str:
    """The local Mosquitto; skipped on a laptop without it, a failure in CI (.ci/run starts it)."""
    if not mosquitto_running():
        service_missing(
            "no Mosquitto on 127.0.0.1:1883 (start: mosquitto -d -c /etc/mosquitto/mosquitto.conf)",
            in_ci="Mosquitto must answer on 127.0.0.1:1883 in CI (.ci/run starts it)",
        )
    return f"mqtt://{MOSQUITTO_HOST}:{MOSQUITTO_PORT}"


@pytest.fixture
async def embedded_url():
    """An in-process amqtt broker on a free port, stopped after the test."""
    async with EmbeddedBroker() as broker:
        yield broker.url


@pytest.fixture
def quickstart_path() -> Path:
    return ROOT / "scenarios" / "quickstart.toml"
