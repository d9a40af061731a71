"""A user mechanism (examples/clipped_laplace.py) and the comparison mechanisms run end to
end: devices perturb with them, the collector validates with their ``in_domain``, the
ledger charges eps / w per report, results use their ``estimate_mean``; the same seed
gives the same results on the memory transport, the embedded broker, Mosquitto and in
device shard processes (which import the plugin from PYTHONPATH)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario
from ldpfleet.scenarios.split_run import run_split

from tests.conftest import MOSQUITTO, broker_for, shared_name
from tests.unit.test_mechanism_registry import EXAMPLES, PLUGIN, ROOT

SCENARIO = """
[scenario]
name = "plugin"
seed = 4
[fleet]
devices = {devices}
shards = {shards}
[stream]
steps = 40
batch_steps = 5
eps = 2.0
w = 5
mechanism = "{mechanism}"
[source]
kind = "synthetic"
shape = "sine"
period = 10
amplitude = 4.0
offset = 5.0
bounds = [0.0, 10.0]
"""


@pytest.fixture
def plugin_importable(monkeypatch):
    """The plugin on sys.path here and on PYTHONPATH for device shard processes."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    paths = [str(EXAMPLES), str(ROOT), os.environ.get("PYTHONPATH", "")]
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in paths if p))


def _scenario(mechanism: str, devices: int = 6, shards: int = 1):
    return parse_scenario(SCENARIO.format(mechanism=mechanism, devices=devices, shards=shards))


def _check(results: dict, out, mechanism: str, devices: int) -> None:
    assert results["devices_complete"] == devices and results["reports_lost"] == 0
    assert results["reports_rejected"] == 0
    assert results["stream"]["mechanism"] == mechanism
    assert results["stream"]["eps0"] == pytest.approx(0.4)
    assert results["accuracy"]["estimator"] == f"{mechanism} estimate_mean"
    assert all(d["mean_estimate"] is not None for d in results["per_device"].values())
    ledger = json.loads((out / "ledger.json").read_text())
    assert ledger["within_budget"] and ledger["max_window_spent"] == pytest.approx(2.0)


async def test_the_example_plugin_on_memory_and_embedded(plugin_importable, tmp_path):
    scenario = _scenario(PLUGIN)
    memory = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "m", run_id="p1")
    _check(memory, tmp_path / "m", PLUGIN, 6)
    embedded = await run_scenario(scenario, broker="embedded", out_dir=tmp_path / "e", run_id="p1")
    _check(embedded, tmp_path / "e", PLUGIN, 6)
    assert embedded["per_device"] == memory["per_device"]


async def test_estimates_are_the_mechanisms_estimate_mean(plugin_importable, tmp_path):
    from clipped_laplace import ClippedLaplace
    from ldpfleet.collector.store import ReportStore

    results = await run_scenario(_scenario(PLUGIN), broker="memory", out_dir=tmp_path, run_id="p2")
    store = ReportStore(tmp_path / "collector.sqlite")
    try:
        streams = store.device_values()
    finally:
        store.close()
    mech = ClippedLaplace(0.4)
    for device, values in streams.items():
        expected = 10.0 * mech.estimate_mean(np.asarray(values))
        assert results["per_device"][device]["mean_estimate"] == pytest.approx(expected)


@pytest.mark.parametrize("mechanism", ["duchi", "piecewise", "hybrid"])
async def test_the_comparison_mechanisms_on_a_fleet(mechanism, tmp_path):
    results = await run_scenario(
        _scenario(mechanism), broker="memory", out_dir=tmp_path, run_id="c1"
    )
    _check(results, tmp_path, mechanism, 6)


@pytest.fixture(params=[MOSQUITTO, "embedded"])
def broker(request):
    return broker_for(request)


@pytest.mark.slow
async def test_device_shard_processes_import_the_plugin(plugin_importable, broker, tmp_path):
    single = await run_scenario(
        _scenario(PLUGIN, devices=6), broker="memory", out_dir=tmp_path / "one", run_id="s1"
    )
    sharded = await run_scenario(
        _scenario(PLUGIN, devices=6, shards=2),
        broker=broker,
        out_dir=tmp_path / "k",
        run_id=shared_name(broker, "s1"),
    )
    assert sharded["stages"]["fleet_build"]["shards"] == 2
    _check(sharded, tmp_path / "k", PLUGIN, 6)
    assert sharded["per_device"] == single["per_device"]


async def test_a_plugin_failing_on_every_device_ends_a_sharded_run_naming_them(
    plugin_importable, tmp_path
):
    """A plugin that passes the load-time probe but raises on the devices' streams: the
    device shard ends with every device failed and says so (``FleetDone``: 0 finished, 3
    stopped otherwise, protocol/fleet_done.py), so the collector side closes the stream stage
    at once, as the one-process runner does, and results.json names the errors in
    ``fleet.device_errors`` with their batches lost (``ldpfleet run`` exits 1 naming the
    first) instead of waiting for a fleet that already ran ("no fleet joined" after the
    fleet timeout, or the stage deadline). Before the shards' status (2026-12-07) the runner
    stopped the collector after finish_grace: ``aborted.reason = "device_errors"``, still
    the fallback where no status arrives."""
    mechanism = "tests.unit.bad_mechanisms:RaisesLater"  # `ldpfleet run` on a broker
    results = await run_split(
        _scenario(mechanism, devices=3), broker="embedded", out_dir=tmp_path, run_id="p9"
    )
    assert results["aborted"] is None, results["aborted"]
    errors = results["fleet"]["device_errors"]
    assert sorted(errors) == ["d0000", "d0001", "d0002"], errors
    assert "perturb failed on device d0000: RuntimeError: sensor library" in errors["d0000"]
    stream = results["stages"]["stream"]
    assert stream["close_reason"].startswith("every fleet shard (1) said its devices are done")
    assert "0 finished, 0 gone for good, 3 stopped otherwise" in stream["close_reason"]
    assert results["reports_received"] == 0 and results["reports_lost"] == 24


@pytest.fixture(params=["memory", "embedded", MOSQUITTO])
def any_broker(request):
    return broker_for(request)


async def test_an_estimate_mean_failing_on_the_collector_is_a_results_warning(
    plugin_importable, any_broker, tmp_path
):
    """Every transport: a plugin whose ``estimate_mean`` raises on the collector leaves the
    devices' means null and puts one sentence in results.json ``warnings`` (the CLI prints
    them), not only a log line that a separate collector's log kept to itself."""
    mechanism = "tests.unit.bad_mechanisms:MeanFailsLater"
    results = await run_scenario(
        _scenario(mechanism, devices=3), broker=any_broker, out_dir=tmp_path, run_id="w1"
    )
    assert results["reports_lost"] == 0
    [warning] = [w for w in results["warnings"] if "estimate_mean failed" in w]
    assert f"mechanism '{mechanism}' estimate_mean failed for 3 device(s) (d0000: " in warning
    assert all(d["mean_estimate"] is None for d in results["per_device"].values())
    written = json.loads((tmp_path / "results.json").read_text())
    assert written["warnings"] == results["warnings"]
