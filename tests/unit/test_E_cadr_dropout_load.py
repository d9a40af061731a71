"""``[cadr] dropout`` on load (helper E): a dropout that leaves fewer devices than the θ
search's noise is shared by (``noise_parties(n)`` = ceil(0.9 n)) is refused with the field,
the limit (that number for the graph) and the value, and so is every combination the run
cannot take (pipeline "paper", a negotiated method, no θ search, collector partitions); the
devices that drop are the seed's choice, the same on every call; the CLI refuses with one
sentence (exit 2)."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.app.cli import app
from ldpfleet.devices.cadr_agent import CadrAgent
from ldpfleet.protocol.cadr_device import CadrDevice
from ldpfleet.protocol.cadr_theta_noise import noise_parties
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.cadr_dropout import abort_risk_warnings, dropout_count, dropped_devices
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario
from typer.testing import CliRunner

GRAPH = "erdos_renyi:n=60,p=0.1,seed=4"  # noise_parties(60) = 54: at most 6 may leave


def _scenario(cadr: str = "", extra: str = "") -> str:
    return (
        '[scenario]\nname = "drop"\nseed = 11\n\n'
        f'[graph]\nsource = "{GRAPH}"\n\n'
        f"[cadr]\neps = 3.0\n{cadr}\n{extra}"
    )


def test_a_dropout_that_keeps_the_noise_parties_loads():
    assert noise_parties(60) == 54
    loaded = parse_scenario(_scenario("dropout = 0.1"))  # 6 leave: 54 remain
    assert loaded.spec.cadr.dropout == 0.1
    assert loaded.spec.cadr.dropout_stage == "after_shares"  # [secure_sum]'s default


def test_a_dropout_below_the_noise_parties_is_refused_naming_field_limit_and_value():
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(_scenario("dropout = 0.15"))  # round(9): 51 < 54
    error = refused.value
    assert error.field == "cadr.dropout" and error.value == 0.15
    assert "54" in error.limit and "54" in str(error) and "51" in str(error)


@pytest.mark.parametrize(
    ("cadr", "extra", "named"),
    [
        ('dropout = 0.05\npipeline = "paper"', "", 'pipeline "dp"'),
        ('dropout = 0.05\nmethod = "ll"', "", 'method "clip"'),
        ("dropout = 0.05\ntheta = 5", "", "θ search"),
        ("dropout = 0.05", "[collector]\npartitions = 2\n", "partitions"),
    ],
)
def test_combinations_the_run_cannot_take_are_refused_on_load(cadr, extra, named):
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(_scenario(cadr, extra))
    assert refused.value.field == "cadr.dropout" and named in refused.value.limit


def test_an_unknown_stage_is_refused():
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(_scenario('dropout = 0.05\ndropout_stage = "after_keyz"'))
    assert "dropout_stage" in str(refused.value)


def test_the_dropped_devices_are_the_seeds_choice():
    names = [f"n{i:04d}" for i in range(60)]
    first = dropped_devices(names, 0.05, 11)
    assert len(first) == dropout_count(0.05, 60) == 3
    assert dropped_devices(names, 0.05, 11) == first  # the same in every process
    assert dropped_devices(names, 0.05, 12) != first
    assert dropped_devices(names, 0.0, 11) == frozenset()


def test_the_agent_refuses_an_unknown_stage():
    machine = CadrDevice("r", "n0000", [], np.random.default_rng(0))
    with pytest.raises(ParameterError) as refused:
        CadrAgent(None, machine, dropout="after_sharez")  # type: ignore[arg-type]
    assert refused.value.field == "dropout" and "after_shares" in str(refused.value)


def test_the_cli_refuses_in_one_sentence(tmp_path):
    path = tmp_path / "drop.toml"
    path.write_text(_scenario("dropout = 0.5"))
    result = CliRunner().invoke(app, ["run", str(path), "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "cadr.dropout" in result.output
    assert not (tmp_path / "out").exists()


def test_a_dropout_whose_sum_may_abort_more_often_than_1e_3_warns():
    # session_abort_bound (a union bound, protocol.secagg.graph): 1.2e-3 for 40 of 400
    # leaving before their masked input on the default Harary graph (19 neighbours, t = 11)
    (sentence,) = abort_risk_warnings(0.1, "after_shares", 400)
    assert "40 of 400" in sentence and "0.12%" in sentence and "t = 11" in sentence
    assert abort_risk_warnings(0.05, "after_shares", 60) == []  # 3 of 60: bound 0
    assert abort_risk_warnings(0.0, "after_shares", 400) == []
