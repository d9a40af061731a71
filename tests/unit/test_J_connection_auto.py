"""``[fleet] connection = "auto"`` by broker (helper J, docs/scaling.md "Auto on the memory
transport"): one connection per device on the in-memory broker at any size; on real
brokers (embedded, mqtt) gateways past ``DEVICE_CONNECTIONS_AUTO_MAX`` devices. The
choice is what ``plans.fleet_config`` hands the fleet; explicit settings are kept."""

from __future__ import annotations

import pytest
from ldpfleet.scenarios.plans import fleet_config, run_connection
from ldpfleet.scenarios.schema import DEVICE_CONNECTIONS_AUTO_MAX, parse_scenario

from tests.conftest import ROOT

QUICK = (ROOT / "scenarios" / "quickstart.toml").read_text()
PAST = DEVICE_CONNECTIONS_AUTO_MAX + 1


def scenario(devices: int, connection: str):
    text = QUICK.replace("devices = 50", f'devices = {devices}\nconnection = "{connection}"')
    assert f"devices = {devices}" in text
    return parse_scenario(text)


@pytest.mark.parametrize(
    ("devices", "connection", "broker_kind", "expected"),
    [
        (PAST, "auto", "memory", "device"),  # no socket to save on the memory transport
        (4 * PAST, "auto", "memory", "device"),
        (PAST, "auto", "embedded", "gateway"),  # real brokers keep the rule
        (PAST, "auto", "mqtt", "gateway"),
        (PAST, "auto", None, "gateway"),  # broker not known: the real-broker rule
        (DEVICE_CONNECTIONS_AUTO_MAX, "auto", "mqtt", "device"),
        (PAST, "gateway", "memory", "gateway"),  # explicit choices are kept
        (50, "gateway", "memory", "gateway"),
        (PAST, "device", "mqtt", "device"),
    ],
)
def test_auto_is_per_device_on_the_memory_broker_only(devices, connection, broker_kind, expected):
    loaded = scenario(devices, connection)
    assert run_connection(loaded, broker_kind) == expected
    config = fleet_config(loaded, "r1", broker_kind=broker_kind)
    assert config.connection == expected


def test_fleet_config_without_a_broker_keeps_the_scenario_rule():
    loaded = scenario(PAST, "auto")
    assert fleet_config(loaded, "r1").connection == loaded.fleet_connection() == "gateway"
