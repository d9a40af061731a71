"""Two concurrent runs of one process with the same ``run_id`` on one external broker
(helper U, library-user QA).

Found: ``asyncio.gather(run_scenario(s, broker=MOSQUITTO, run_id="x", out_dir=a),
run_scenario(s, broker=MOSQUITTO, run_id="x", out_dir=b))`` finished one run and killed
the other with ``ExceptionGroup: unhandled errors in a TaskGroup`` / ``ConnectionLost('x-
recorder: connection lost')``: both runs' clients used the same MQTT client ids and the
broker handed each connection to the newcomer. Now the second is refused before it starts
(``ParameterError`` naming ``run_id``), as a second run into a running run's ``out_dir``
is. The in-process and embedded brokers are each run's own: the same id is fine there.
"""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.scenarios.runner import claimed_run_id

import ldpfleet
from tests.conftest import shared_name
from tests.tiny_scenarios import sine_stream_text

TEXT = sine_stream_text("u-run-id")


def test_a_run_id_held_on_a_broker_url_is_refused_there_only():
    with claimed_run_id("held", "mqtt://127.0.0.1:1883"):
        with (
            pytest.raises(ldpfleet.ParameterError) as caught,
            claimed_run_id("held", "mqtt://127.0.0.1:1883"),
        ):
            pass
        assert caught.value.field == "run_id" and caught.value.value == "held"
        assert "give each concurrent run its own run_id" in str(caught.value)
        with claimed_run_id("held", "mqtt://127.0.0.1:1884"):  # another broker
            pass
        with claimed_run_id("other", "mqtt://127.0.0.1:1883"):  # another id
            pass
        with claimed_run_id("held", "memory"), claimed_run_id("held", "memory"):
            pass  # each run's own broker
    with claimed_run_id("held", "mqtt://127.0.0.1:1883"):  # released when the run ends
        pass


def test_the_same_run_id_twice_at_once_in_memory_is_fine(tmp_path):
    scenario = ldpfleet.parse_scenario(TEXT)

    async def both():
        return await asyncio.gather(
            *(
                ldpfleet.run_scenario(
                    scenario, broker="memory", out_dir=tmp_path / f"r{i}", run_id="same"
                )
                for i in range(2)
            )
        )

    first, second = asyncio.run(both())
    assert first["per_device"] == second["per_device"]


@pytest.mark.mosquitto
def test_the_same_run_id_twice_at_once_on_mosquitto_refuses_the_second(tmp_path, mosquitto_url):
    scenario = ldpfleet.parse_scenario(TEXT)
    run_id = shared_name(mosquitto_url, "u-same-run-id")

    async def both():
        return await asyncio.gather(
            *(
                ldpfleet.run_scenario(
                    scenario, broker=mosquitto_url, out_dir=tmp_path / f"r{i}", run_id=run_id
                )
                for i in range(2)
            ),
            return_exceptions=True,
        )

    first, second = asyncio.run(both())
    assert isinstance(first, dict) and first["devices_complete"] == 2, first
    assert isinstance(second, ldpfleet.ParameterError) and second.field == "run_id", second
    assert not (tmp_path / "r1").exists()  # refused before anything started
