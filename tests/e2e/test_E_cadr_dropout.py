"""Devices that drop out of a CADR-LDP fleet run for good (``[cadr] dropout``, helper E).

On the in-memory transport, a 60-node Erdős–Rényi graph, dropout 0.05 (3 devices, the
seed's choice): at ``after_shares`` the θ search's secure sum opens over the 57 survivors
(exactly the sum of their answers: their one-hot buckets plus Pólya shares sized for the
54 noise parties), the three are absent from the release and named in results.json, the
MAE and the baselines cover the 57 released devices, and every ledger (the dropped ones'
too) shows what its device spent. At ``during_unmask`` the three had sent their masked
inputs: the server recovers their masks from the survivors' shares, so the opened sum is
all 60 answers, and still only 57 devices release. Each test fails if the dropout is
ignored (60 released, no ``dropped``, a sum over 60 at ``after_shares``): checked by
running them with ``run_device_shard``'s chosen set emptied (the four runs failed). One run on the
shared Mosquitto (slow), and ``ldpfleet run`` + ``trace verify`` on the memory broker."""

from __future__ import annotations

import json

import numpy as np
import pytest
from ldpfleet.app.cli import app
from ldpfleet.collector.degree_postprocess import trivial_baselines
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.protocol.cadr_device import CadrDevice
from ldpfleet.scenarios import cadr_run
from ldpfleet.scenarios.cadr_dropout import dropped_devices
from ldpfleet.scenarios.cadr_run import device_names, run_cadr_fleet
from typer.testing import CliRunner

from tests.conftest import shared_name

GRAPH = generate("erdos_renyi", 60, seed=4, p=0.1)
NAMES = device_names(GRAPH)
SEED = 11
CHOSEN = sorted(dropped_devices(NAMES, 0.05, SEED))
BUDGET = CadrBudget.for_pipeline(3.0, 0.1, "dp", True, GRAPH.n, "clip")


@pytest.fixture
def machines(monkeypatch) -> list[CadrDevice]:
    """Every device machine the run makes (their θ-search answers: ``_answers``)."""
    made: list[CadrDevice] = []

    class Recorded(CadrDevice):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(cadr_run, "CadrDevice", Recorded)
    return made


def _summed(machines: list[CadrDevice], names: list[str]) -> list[int]:
    """The sum of the θ-search answers (one-hot bucket + noise share) of ``names``."""
    answers = {machine.device: machine.theta_answer for machine in machines}
    return np.rint(sum(answers[name] for name in names)).astype(int).tolist()


def _check_release(result: dict, stage: str) -> None:
    """What every dropout run must show: the chosen devices named and absent from the
    release, the figures over the released devices, every ledger."""
    assert len(CHOSEN) == 3
    assert result["dropped"] == {"fraction": 0.05, "stage": stage, "count": 3, "devices": CHOSEN}
    released = [name for name in NAMES if name not in CHOSEN]
    assert list(result["released"]) == released  # n - dropped, none of the chosen
    assert "57 released devices of 60" in result["scored_over"]
    for name in CHOSEN:
        assert result["per_device"][name]["dropped"] == stage
        assert "released" not in result["per_device"][name]
    # the MAE over the released devices of the pipeline's release (the post-processed one)
    errors = [result["per_device"][name]["abs_error"] for name in released]
    assert result["mae"] == pytest.approx(np.mean(errors), rel=1e-12)
    degrees = GRAPH.degrees()[[NAMES.index(name) for name in released]]
    assert result["baselines"] == trivial_baselines(degrees)
    # every ledger shows what its device spent: the dropped ones the θ search only
    for name, ledger in result["ledgers"].items():
        account = ledger["accounts"]["node"]
        want = BUDGET.theta if name in CHOSEN else BUDGET.theta + BUDGET.dsr
        assert account["spent"] == pytest.approx(want, rel=1e-9), name
    assert result["ledger_min"] == pytest.approx(BUDGET.theta)
    assert result["ledger_exact"]  # over the released devices
    assert result["warnings"] == []


async def test_devices_dropping_after_their_shares_leave_the_sum_and_the_release(machines):
    result = await run_cadr_fleet(
        GRAPH, method="clip", seed=SEED, dropout=0.05, dropout_stage="after_shares"
    )
    _check_release(result, "after_shares")
    (query,) = result["theta_queries"]
    assert query["survivors"] == 57 and query["dropped"] == CHOSEN
    assert result["theta_search"]["survivors"] == 57
    assert result["theta_search"]["noise_parties"] == 54
    # the opened sum is exactly the survivors' answers (noise shares for 54 parties each)
    survivors = [name for name in NAMES if name not in CHOSEN]
    assert query["bucket_sums"] == _summed(machines, survivors)


@pytest.mark.slow  # 2.6 s
async def test_devices_dropping_during_unmask_are_summed_but_release_nothing(machines):
    result = await run_cadr_fleet(
        GRAPH, method="clip", seed=SEED, dropout=0.05, dropout_stage="during_unmask"
    )
    _check_release(result, "during_unmask")
    (query,) = result["theta_queries"]
    # their masked inputs were in: the survivors' shares recovered their masks
    assert query["survivors"] == 60 and "dropped" not in query
    assert query["bucket_sums"] == _summed(machines, NAMES)


@pytest.mark.slow  # 2 s each
@pytest.mark.parametrize("stage", ["before_keys", "after_masked"])
async def test_the_most_the_noise_takes_leaves_exactly_the_noise_parties(stage):
    """6 of 60 leave (dropout 0.1): 54 = noise_parties(60) remain, the sum still opens."""
    chosen = sorted(dropped_devices(NAMES, 0.1, SEED))
    result = await run_cadr_fleet(GRAPH, method="clip", seed=SEED, dropout=0.1, dropout_stage=stage)
    (query,) = result["theta_queries"]
    assert result["dropped"]["devices"] == chosen and len(result["released"]) == 54
    # before their keys they are out of the sum; after their masked input they are in it
    assert query["survivors"] == (54 if stage == "before_keys" else 60)


async def test_a_dropout_the_noise_cannot_take_is_refused_before_any_device_starts():
    with pytest.raises(Exception) as refused:
        await run_cadr_fleet(GRAPH, method="clip", seed=SEED, dropout=0.2)
    assert getattr(refused.value, "field", None) == "dropout" and "54" in str(refused.value)


SCENARIO = f"""[scenario]
name = "er-dropouts"
seed = {SEED}

[graph]
source = "erdos_renyi:n=60,p=0.1,seed=4"

[cadr]
eps = 3.0
dropout = 0.05
dropout_stage = "after_shares"

[broker]
url = "memory"
"""


@pytest.mark.slow  # 9 s
def test_ldpfleet_run_writes_the_dropped_devices_and_trace_verify_agrees(tmp_path):
    path = tmp_path / "drop.toml"
    path.write_text(SCENARIO)
    out = tmp_path / "run"
    runner = CliRunner()
    ran = runner.invoke(app, ["run", str(path), "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    results = json.loads((out / "results.json").read_text())
    assert results["dropped"]["devices"] == CHOSEN and len(results["released"]) == 57
    ledgers = json.loads((out / "ledger.json").read_text())
    assert all(name in ledgers for name in NAMES)  # the dropped devices' ledgers too
    verified = runner.invoke(app, ["trace", "verify", str(out)])
    assert verified.exit_code == 0, verified.output
    assert "0 mismatch(es)" in verified.output


@pytest.mark.slow
async def test_the_same_dropouts_on_mosquitto(mosquitto_url):
    memory = await run_cadr_fleet(GRAPH, method="clip", seed=SEED, dropout=0.05)
    mosquitto = await run_cadr_fleet(
        GRAPH,
        broker=mosquitto_url,
        method="clip",
        seed=SEED,
        dropout=0.05,
        run=shared_name(mosquitto_url, "e-cadr-dropout"),
    )
    _check_release(mosquitto, "after_shares")
    assert mosquitto["released"] == memory["released"]
    assert mosquitto["theta_queries"][0]["survivors"] == 57
