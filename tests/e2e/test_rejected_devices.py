"""A genuine device/collector disagreement ends the run promptly, naming the device.

The plugin ``tests.unit.bad_mechanisms:StricterOnCollector`` is a version mismatch: the
collector's ``in_domain`` is narrower than the devices', so some batches the devices send
are finally rejected. Before, a rejected device retransmitted the batch until the stage
deadline (600 s by default; 60 s here: the stage closed at 60.00 s, every device rejected
reported as lost, no reason given). Now the device stops at the collector's final
``Reject``, withdraws, and the stage closes as soon as every device finished — whatever the
machine's load: the asserts read the close reason, never a clock."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.store import ReportStore
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario
from ldpfleet.scenarios.split_run import run_split

from tests.e2e.test_plugin_mechanism import plugin_importable  # noqa: F401 (a fixture)
from tests.unit.bad_mechanisms import STRICT_BOUND

SCENARIO = """
[scenario]
name = "mismatch"
seed = 1
[fleet]
devices = 8
[stream]
steps = 40
batch_steps = 5
eps = 2.0
w = 4
mechanism = "tests.unit.bad_mechanisms:StricterOnCollector"
[source]
kind = "synthetic"
shape = "sine"
period = 10
bounds = [-1.0, 1.0]
"""


def _check_rejected_run(results: dict, out) -> None:
    rejections = results["device_rejections"]
    # seeded: scenario seed 1 makes this split between finished and rejected devices
    assert 0 < results["devices_rejected"] == len(rejections) < 8
    assert results["devices_complete"] + results["devices_rejected"] == 8
    assert results["reports_lost"] == 0 and results["reports_withdrawn"] > 0
    assert (
        "withdrew after the collector rejected its report"
        in (results["stages"]["stream"]["close_reason"])
    )
    assert results["stages"]["stream"]["status"] == "incomplete"
    for device, rejection in rejections.items():
        assert rejection["kind"] == "sw_report" and rejection["code"] == "out_of_range"
        assert rejection["field"].startswith("values[")
        assert "outside the tests.unit.bad_mechanisms:StricterOnCollector" in rejection["reason"]
        assert results["per_device"][device]["state"] == "rejected"
    # nothing rejected is stored (so nothing rejected reaches analytics)
    store = ReportStore(out / "collector.sqlite")
    try:
        for values in store.device_values().values():
            finite = values[np.isfinite(values)]
            assert np.all(np.abs(finite) < STRICT_BOUND)
    finally:
        store.close()


async def test_a_rejected_device_stops_and_the_run_ends_naming_it(tmp_path):
    scenario = parse_scenario(SCENARIO)  # the default 600 s stage_timeout
    results = await run_scenario(scenario, broker="memory", out_dir=tmp_path, run_id="rj1")
    _check_rejected_run(results, tmp_path)


@pytest.mark.slow
async def test_a_rejected_device_stops_the_split_run_on_the_embedded_broker(
    plugin_importable,  # noqa: F811 (the fixture)
    tmp_path,
):
    """The same over the embedded broker with the collector in its own process (what
    ``ldpfleet run --broker embedded`` does): the Reject travels the device's inbox."""
    scenario = parse_scenario(SCENARIO)
    results = await run_split(scenario, broker="embedded", out_dir=tmp_path, run_id="rj2")
    assert not results.get("aborted"), results.get("aborted")
    _check_rejected_run(results, tmp_path)


def test_the_cli_sentence_names_the_device_its_message_the_field_and_the_reason():
    from ldpfleet.app.cli import _rejection_sentence

    reason = "9.5 is outside the sw output domain [-0.2, 1.2] at eps0=0.5"
    rejection = {"kind": "sw_report", "seq": 3, "field": "values[1]", "code": "out_of_range",
                 "reason": reason}  # fmt: skip
    hello = {"kind": "hello", "seq": 0, "field": "eps", "code": "parameter_mismatch",
             "reason": "declared 2.0, this run uses 1.0"}  # fmt: skip
    sentence = _rejection_sentence({"device_rejections": {"d0007": hello, "d0002": rejection}})
    assert sentence.startswith(
        "device d0002 stopped: the collector rejected its sw_report #3, field values[1]: 9.5 is "
        "outside the sw output domain [-0.2, 1.2] at eps0=0.5 (out_of_range); 1 more: d0007"
    ), sentence


@pytest.mark.slow
def test_ldpfleet_run_exits_1_with_one_sentence_at_once(tmp_path):
    """``ldpfleet run`` of the mismatch with the default 600 s stage timeout: exit 1 and
    the sentence; the subprocess timeout (120 s) is far below the stage timeout."""
    from tests.unit.test_mechanism_registry import _cli

    path = tmp_path / "mismatch.toml"
    path.write_text(SCENARIO)
    result = _cli("run", str(path), "--broker", "memory", "--out", str(tmp_path / "out"))
    said = " ".join((result.stdout + result.stderr).split())
    assert result.returncode == 1 and "Traceback" not in said, said
    assert "rejected: device d0" in said and "stopped: the collector rejected its sw_report" in said
    assert "outside the tests.unit.bad_mechanisms:StricterOnCollector output domain" in said
