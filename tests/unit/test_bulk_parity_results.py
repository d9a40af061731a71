"""A bulk run's results.json carries the stream run's figures where they apply (helper M):
``stream``, ``privacy`` (the w-event claim and the gateways' ledgers), ``source_cycles``
(null: bulk gateways generate their readings), ``accuracy`` with its ``baselines``, and
the ``reconstruction`` scores (``mean_cosine_distance``, ``constant_cosine_distance``).

Every figure is recomputed here independently of the runner: the truth from
``protocol.bulk.synthetic_values`` (the gateways' readings), the estimates from the stored
rows through the mechanism's own ``estimate_mean``. Deterministic (fixed seed, in-process
memory broker); no statistical threshold."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ldpfleet.app.cli import app
from ldpfleet.collector.analytics import accuracy_baselines
from ldpfleet.collector.bulk import stored_streams
from ldpfleet.collector.metrics import cosine_distance
from ldpfleet.protocol.bulk import BulkPlan, device_keys, stored_dtype, synthetic_values
from ldpfleet.protocol.mechanisms import stream_mechanism
from ldpfleet.protocol.sw import normalise
from typer.testing import CliRunner

BULK = """
[scenario]
name = "bulk-parity"
seed = 11
[fleet]
devices = 90
connection = "bulk"
gateway_devices = 40
[stream]
steps = 24
eps = 2.0
w = 4
batch_steps = 4
mechanism = "MECH"
reconstruct = "cpr"
[source]
kind = "synthetic"
shape = "sine"
period = [6, 8]
amplitude = 1.0
noise = 0.1
bounds = [-1.2, 1.2]
[collector]
trace = "none"
partitions = 2
"""


def _run(tmp_path, mechanism: str) -> tuple[dict, BulkPlan]:
    path = tmp_path / "bulk.toml"
    path.write_text(BULK.replace("MECH", mechanism))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["run", str(path), "-b", "memory", "--out", str(out)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    return results, BulkPlan.from_dict(results["plan"])


def _truth(plan: BulkPlan) -> np.ndarray:
    keys = device_keys(plan, 0, plan.devices)
    return np.clip(synthetic_values(plan, keys, 0, plan.steps), plan.lo, plan.hi)


def _estimates(plan: BulkPlan, out) -> dict[str, float]:
    mechanism = stream_mechanism(plan.mechanism, plan.eps0)
    means = {}
    for p in range(plan.partitions):
        streams = stored_streams(out / f"p{p}", stored_dtype(plan.batch_steps), plan.device_id)
        for device, values in streams.items():
            means[device] = plan.lo + mechanism.estimate_mean(values) * (plan.hi - plan.lo)
    return means


@pytest.mark.parametrize("mechanism", ["sw", "sw01"])
def test_a_bulk_run_states_its_privacy_claim_and_its_accuracy(tmp_path, mechanism):
    results, plan = _run(tmp_path, mechanism)
    assert results["stream"] == {
        "mechanism": mechanism, "eps": 2.0, "w": 4, "eps0": 0.5, "steps": 24,
        "batch_steps": 4, "bounds": [-1.2, 1.2], "values_received": 90 * 24,
    }  # fmt: skip
    privacy = results["privacy"]
    assert privacy["claim"].startswith("2-LDP over any 4 consecutive steps of each device")
    assert (privacy["mechanism"], privacy["eps"], privacy["w"]) == (mechanism, 2.0, 4)
    assert privacy["eps0"] == 0.5 and privacy["devices"] == 90
    assert privacy["max_window_spent"] == pytest.approx(2.0)
    assert privacy["within_budget"] is True
    assert results["source_cycles"] is None  # generated readings: no file to replay

    truth = _truth(plan)
    truths = {plan.device_id(i): float(truth[i].mean()) for i in range(plan.devices)}
    estimates = _estimates(plan, tmp_path / "out")
    assert len(estimates) == 90
    errors = [abs(estimates[d] - truths[d]) for d in truths]
    accuracy = results["accuracy"]
    assert accuracy["mean_abs_error"] == pytest.approx(np.mean(errors), rel=1e-9)
    assert accuracy["max_abs_error"] == pytest.approx(max(errors), rel=1e-9)
    assert accuracy["estimator"] == f"{mechanism} estimate_mean"
    expected = accuracy_baselines(estimates, truths, plan.lo, plan.hi)
    got = accuracy["baselines"]
    assert (got["devices"], got["beats_constant"]) == (90, expected["beats_constant"])
    for name in ("constant", "fleet_mean"):
        assert got[name] == pytest.approx(expected[name], rel=1e-9, abs=1e-12)


def test_a_bulk_run_scores_its_reconstructions_against_a_flat_line(tmp_path):
    results, plan = _run(tmp_path, "sw")
    truth = _truth(plan)
    reconstruction = results["reconstruction"]
    with np.load(tmp_path / "out" / "reconstructions.npz") as data:
        recon = {k: data[k] for k in data.files if "." not in k}
    assert len(recon) == 90
    distances, flat = [], []
    for i in range(plan.devices):
        clean = normalise(truth[i], plan.lo, plan.hi)
        values = normalise(recon[plan.device_id(i)], plan.lo, plan.hi)
        distances.append(cosine_distance(values, clean))
        flat.append(cosine_distance(np.full(clean.shape, 0.5), clean))
    assert reconstruction["mean_cosine_distance"] == pytest.approx(np.mean(distances), rel=1e-6)
    assert reconstruction["constant_cosine_distance"] == pytest.approx(np.mean(flat), rel=1e-9)


def test_a_bulk_run_records_its_scenario_as_every_other_run(tmp_path):
    """results.json ``scenario`` is ``{name, path, seed, spec}`` (``scenario_header``): the
    report's title and its scenario table read it so (a bulk run wrote the bare spec: the
    report was titled "run" and listed 0 scenario keys), and ``--seed`` is recorded."""
    path = tmp_path / "bulk.toml"
    path.write_text(BULK.replace("MECH", "sw").replace('reconstruct = "cpr"', ""))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app, ["run", str(path), "-b", "memory", "--out", str(out), "--seed", "5"],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    scenario = results["scenario"]
    assert sorted(scenario) == ["name", "path", "seed", "spec"]
    assert (scenario["name"], scenario["path"], scenario["seed"]) == ("bulk-parity", str(path), 5)
    assert scenario["spec"]["fleet"]["connection"] == "bulk"
    assert results["plan"]["seed"] == 5
    html = (out / "report.html").read_text()
    assert "<title>bulk-parity — run" in html


def test_a_bulk_run_has_the_run_level_keys_of_every_stream_run(tmp_path):
    """The keys the run summary, the report and scripts read of every stream run, with
    what they are in a bulk run (docs/results.md, "A bulk run")."""
    results, _ = _run(tmp_path, "sw")
    assert results["event_loop"] in ("uvloop", "asyncio")
    assert results["aborted"] is None
    assert (results["secure_sum"], results["gcdp"], results["faults"]) == (None, None, None)
    assert results["broker"] == {
        "kind": "memory", "url": "memory", "auth": True, "shard_brokers": None,
    }  # fmt: skip
    assert results["devices_unfinished"] == 0 and results["reports_refused"] == 0
    fleet = results["fleet"]
    assert (fleet["connection"], fleet["devices_run"]) == ("bulk", 90)
    stream = results["stages"]["stream"]
    assert stream["close_reason"] == "every device delivered every report"
    # trace = "none": no recorder, so no complete trace (as a per-device run says it)
    assert (results["trace_complete"], results["trace_incomplete_reason"]) == (False, None)
