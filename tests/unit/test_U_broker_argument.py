"""A malformed ``broker`` URL given to ``ldpfleet.run`` / ``run_scenario`` is a bad argument:
``ParameterError`` naming ``broker`` before the run (helper U, library-user QA).

Found: ``broker="Memory"`` / ``"memory "`` / ``"http://x"`` raised ``BrokerUnavailable`` (a
``ConnectionError``, field ``None``), which a script retrying on network errors would
retry, although docs/api.md promises a ``ParameterError`` naming the option for bad
options. An unreachable broker stays a ``BrokerUnavailable``.
"""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.broker.select import BrokerUnavailable

import ldpfleet
from tests.tiny_scenarios import sine_stream_text

TEXT = sine_stream_text("u-broker")


@pytest.fixture(scope="module")
def scenario():
    return ldpfleet.parse_scenario(TEXT)


@pytest.mark.parametrize(
    ("broker", "needle"),
    [
        ("Memory", "did you mean 'memory'?"),
        ("memory ", "did you mean 'memory'?"),
        ("http://127.0.0.1:1883", "must start with mqtt://"),
        ("mqtt://", "has no host"),
        ("mqtt://[::1", "cannot be parsed"),
    ],
)
def test_a_malformed_broker_url_is_a_parameter_error(scenario, tmp_path, broker, needle):
    with pytest.raises(ldpfleet.ParameterError) as caught:
        ldpfleet.run(scenario, broker=broker, out_dir=tmp_path / "out")
    assert caught.value.field == "broker" and caught.value.value == broker
    assert needle in str(caught.value)
    assert not isinstance(caught.value, ConnectionError)
    assert not (tmp_path / "out").exists()  # refused before anything starts


def test_run_scenario_checks_it_the_same(scenario, tmp_path):
    with pytest.raises(ldpfleet.ParameterError) as caught:
        asyncio.run(ldpfleet.run_scenario(scenario, broker="embeded", out_dir=tmp_path))
    assert caught.value.field == "broker"
    assert "did you mean 'embedded'?" in str(caught.value)


def test_an_unreachable_broker_is_still_a_connection_error(scenario, tmp_path):
    with pytest.raises(BrokerUnavailable, match=r"no MQTT broker answers at 127\.0\.0\.1:1"):
        ldpfleet.run(scenario, broker="mqtt://127.0.0.1:1", out_dir=tmp_path)
