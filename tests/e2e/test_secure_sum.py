"""Secure aggregation through transports: device agents and the collector's
``secure_sum`` over the in-memory transport, the embedded broker and Mosquitto."""

from __future__ import annotations

import json

import pytest
from ldpfleet.app.bench_secagg import bench_secagg
from ldpfleet.app.cli import app
from ldpfleet.devices.secagg_agent import DROPOUT_STAGES
from typer.testing import CliRunner

from tests.virtual_time import VirtualTimeLoop


@pytest.mark.parametrize("stage", DROPOUT_STAGES)
@pytest.mark.parametrize("announced", [True, False], ids=["last-will", "deadline"])
def test_exact_sum_with_dropouts_at_every_stage(stage, announced):
    # Silent dropouts are found by the stage deadline (0.3 s). On the real clock a busy
    # machine let it pass before any live device had answered ("only 0 of 12 devices
    # advertised keys", seen with CI beside other jobs); on virtual time (everything here
    # runs in the loop: the in-memory transport) the clock moves only when every message
    # that could arrive has been handled, so the deadline sees exactly the dropouts.
    result = VirtualTimeLoop.run(
        bench_secagg(
            12,
            50,
            neighbors=7,
            dropout=0.25,
            dropout_stage=stage,
            broker="memory",
            stage_timeout=0.3,
            silent_dropouts=not announced,
            seed=3,
        )
    )
    assert result["aborted"] is None
    assert result["exact"] is True
    assert result["dropped_devices"] == 3
    # devices that dropped before masking are never in the sum. One that masked and then
    # left is, silently or announced: its accepted masked input is in U3 whenever its
    # last will arrives (its neighbours reveal its self-mask); before 2026-12-05 a will
    # that reached the collector while the masked stage was still open dropped it.
    if stage in ("before_keys", "after_keys", "after_shares"):
        assert result["survivors"] == 9
    else:
        assert result["survivors"] == 12


async def test_below_threshold_aborts_with_a_clear_reason():
    result = await bench_secagg(
        10, 5, full=True, dropout=0.6, dropout_stage="after_keys", broker="memory", seed=1
    )
    assert result["exact"] is None
    assert "share" in result["aborted"] and "threshold" in result["aborted"]


async def test_full_graph_exact_and_one_message_per_stage():
    result = await bench_secagg(16, 100, full=True, dropout=0.125, broker="memory", seed=2)
    assert result["exact"] is True and result["survivors"] == 14
    assert result["neighbors"] == 15
    # advertise, shares, masked (+ nothing else) up; setup, neighbours, deliver, unmask down
    assert result["messages_up_per_device"] <= 4 and result["messages_down_per_device"] <= 4


@pytest.mark.embedded
async def test_200_devices_on_the_embedded_broker_with_10_percent_dropout(embedded_url):
    result = await bench_secagg(
        200, 20, dropout=0.1, dropout_stage="after_shares", broker=embedded_url, seed=4
    )
    assert result["exact"] is True and result["survivors"] == 180


@pytest.mark.mosquitto
async def test_200_devices_on_mosquitto_with_10_percent_dropout(mosquitto_url):
    result = await bench_secagg(
        200, 20, dropout=0.1, dropout_stage="after_shares", broker=mosquitto_url, seed=5
    )
    assert result["exact"] is True and result["survivors"] == 180
    assert result["broker"] == "mqtt"


def test_bench_secagg_command_prints_the_figures():
    output = CliRunner().invoke(
        app, ["bench", "secagg", "--devices", "8", "--dim", "10", "--dropout", "0.25"]
    )
    assert output.exit_code == 0, output.output
    figures = json.loads(output.stdout)
    for key in ("devices", "dim", "seconds_per_stage", "seconds", "bytes_up_per_device",
                "bytes_down_per_device", "survivors", "exact"):  # fmt: skip
        assert key in figures
    assert figures["exact"] is True and figures["survivors"] == 6
    bad = CliRunner().invoke(app, ["bench", "secagg", "--dropout-stage", "never"])
    assert bad.exit_code == 2 and "not one of" in bad.output


@pytest.mark.parametrize(
    ("option", "expected"),
    [
        (["--dim", "-1"], "dim: must be an integer in [1, 100000], got -1"),
        (["--dim", "0"], "dim: must be an integer in [1, 100000], got 0"),
        (["--neighbors", "abc"], "neighbors: must be an integer K >= 1, 'auto' or 'full'"),
        # was "k: ...", a name the command does not have
        (["--neighbors", "0"], "neighbors: must be an integer in [1, n - 1] with n = 4, got 0"),
        (["--neighbors", "4"], "neighbors: must be an integer in [1, n - 1] with n = 4, got 4"),
    ],
)
def test_bench_secagg_refuses_a_bad_length_or_degree_in_one_sentence(option, expected):
    """``--dim -1`` was numpy's traceback ("negative dimensions are not allowed"), ``--dim
    0`` named an internal ``x``, ``--neighbors abc`` was int()'s traceback."""
    bad = CliRunner().invoke(app, ["bench", "secagg", "--devices", "4", *option])
    assert bad.exit_code == 2, bad.output
    assert expected in " ".join(bad.output.split()) and "Traceback" not in bad.output


SCENARIO = """
[scenario]
name = "ss-e2e"
seed = 6
[fleet]
devices = 30
[stream]
steps = 40
eps = 2.0
w = 5
[source]
kind = "synthetic"
bounds = [-1.5, 1.5]
[secure_sum]
dim = 8
dropout = 0.1
dropout_stage = "after_shares"
"""


@pytest.mark.parametrize("broker", ["memory", "embedded"])
async def test_secure_sum_stage_of_a_scenario(broker, tmp_path):
    from ldpfleet.broker.trace import TraceFilter, open_readonly, stats
    from ldpfleet.scenarios.runner import run_scenario
    from ldpfleet.scenarios.schema import parse_scenario

    results = await run_scenario(parse_scenario(SCENARIO), broker=broker, out_dir=tmp_path)
    secure = results["secure_sum"]
    assert secure["aborted"] is None and secure["exact"] is True
    assert secure["survivors"] == 27 and len(secure["dropped_devices"]) == 3
    assert len(secure["total"]) == 8
    assert results["stages"]["secure_sum"]["status"] == "ok"
    # the recorder kept going until after the secure-sum stage
    kinds = stats(open_readonly(tmp_path), TraceFilter())["by_kind"]
    assert kinds["sa_unmask"]["messages"] == 27 and kinds["sw_report"]["messages"] == 30 * 8


def test_secure_sum_capacity_is_checked_when_the_scenario_loads():
    from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

    with pytest.raises(ScenarioError, match="secure_sum"):
        parse_scenario(SCENARIO.replace("dim = 8", "dim = 8\nbits = 32\nscale = 1e9"))
    with pytest.raises(ScenarioError, match=r"secure_sum\.dim"):
        parse_scenario(SCENARIO.replace("dim = 8", "dim = 41"))


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("threshold = 1", "secure_sum.threshold: must be an integer with"),
        ("threshold = 40", "secure_sum.threshold: must be an integer with"),
        ("neighbors = 31", "secure_sum.neighbors: must be an integer in [1, n - 1] with n = 30"),
        ('graph = "full"\nneighbors = 3', "secure_sum.neighbors: the full graph has degree"),
        ('graph = "full"\nthreshold = 15', "30 < 2t and t <= 30 (share holders"),
        ('graph = "full"\nthreshold = 31', "30 < 2t and t <= 30 (share holders"),
    ],
)
def test_secure_sum_graph_and_threshold_are_checked_when_the_scenario_loads(setting, expected):
    """A threshold or a neighbour count the session refuses was a TaskGroup traceback
    after the whole stream stage had run (``ldpfleet run`` with ``threshold = 1``)."""
    from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

    with pytest.raises(ScenarioError) as refused:
        parse_scenario(SCENARIO.replace("dim = 8", f"dim = 8\n{setting}"))
    assert expected in str(refused.value)
    parse_scenario(SCENARIO.replace("dim = 8", "dim = 8\nneighbors = 5\nthreshold = 4"))
    parse_scenario(SCENARIO.replace("dim = 8", 'dim = 8\ngraph = "full"\nthreshold = 16'))


@pytest.mark.parametrize(
    ("devices", "setting", "expected"),
    [
        # the full graph's load-time check skipped the session's device count: both ran
        # the whole stream stage, then died in a ParameterError traceback
        (1, 'graph = "full"', "fleet.devices: [secure_sum] needs 2..10000 devices, got 1"),
        (10_001, 'graph = "full"', "fleet.devices: [secure_sum] needs 2..10000 devices"),
        (1, "", "fleet.devices: [secure_sum] needs 2..10000 devices, got 1"),
        # more than a day: every device refused the setup and the run hung (1e300), or a
        # traceback after the stream stage (inf)
        (30, "stage_timeout = 86401.0", "secure_sum.stage_timeout: Expected `float` <= 86400"),
        (30, "stage_timeout = inf", "secure_sum.stage_timeout: Expected `float` <= 86400"),
        # named the session's internal clip_high instead of the scenario's key
        (30, "clip = [1.0, -1.0]", "secure_sum.clip: clip_high must exceed clip_low=1.0"),
        (30, "clip = [1.0, 1.0]", "secure_sum.clip: clip_high must exceed clip_low=1.0"),
    ],
)
def test_secure_sum_limits_are_checked_when_the_scenario_loads(devices, setting, expected):
    from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

    text = SCENARIO.replace("devices = 30", f"devices = {devices}")
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(text.replace("dim = 8", f"dim = 8\n{setting}"))
    assert expected in str(refused.value)
    parse_scenario(SCENARIO.replace("dim = 8", "dim = 8\nstage_timeout = 86400.0"))


@pytest.mark.parametrize(
    ("options", "field_name", "expected"),
    [
        ({"dropout": 1.5}, "dropout", "must be in [0, 1), got 1.5"),
        ({"dropout": -0.5}, "dropout", "must be in [0, 1), got -0.5"),
        ({"dropout": float("nan")}, "dropout", "must be in [0, 1), got nan"),
        ({"dropout_stage": "never"}, "dropout_stage", "'never' is not one of before_keys"),
        ({"devices": 1}, "devices", "need 2..10000 devices, got 1"),
        ({"stage_timeout": 86_401.0}, "stage_timeout", "86400"),
        # numpy's "ValueError: expected non-negative integer" traceback (--seed -1)
        ({"seed": -1}, "seed", "must be an integer >= 0, got -1"),
    ],
)
def test_bench_secagg_refuses_bad_options_before_starting(options, field_name, expected):
    """``bench_secagg(dropout=1.5)`` was numpy's traceback ("Cannot take a larger sample
    than population"), ``dropout_stage="never"`` ran without a word, ``stage_timeout``
    beyond a day hung (the devices refused the setup; on virtual time the old code got to
    the deadline and returned an aborted session instead of raising)."""
    from ldpfleet.protocol.errors import ParameterError

    kwargs = {"devices": 4, "dim": 2, "broker": "memory"} | options
    devices, dim = kwargs.pop("devices"), kwargs.pop("dim")
    with pytest.raises(ParameterError) as refused:
        VirtualTimeLoop.run(bench_secagg(devices, dim, **kwargs))
    assert refused.value.field == field_name and expected in refused.value.reason


async def test_active_mode_over_the_transport_gives_the_exact_sum():
    result = await bench_secagg(
        12, 20, neighbors=7, dropout=0.25, dropout_stage="after_shares", broker="memory",
        seed=8, active=True,
    )  # fmt: skip
    assert result["active"] is True and result["exact"] is True and result["survivors"] == 9
    assert "consistency" in result["seconds_per_stage"]


def test_secure_sum_refuses_identity_keys_without_active_mode():
    """``secure_sum(identity_keys=...)`` without ``active=True`` dropped the keys and ran a
    session that was not hardened, without a word; ``SecAggServer`` refuses exactly this
    (``active.check_mode``: an operator must not believe the session is hardened)."""
    from ldpfleet.broker.transport import MemoryTransport
    from ldpfleet.collector.secure_sum import secure_sum
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.protocol.secagg.crypto import signing_keypair
    from ldpfleet.protocol.secagg.encoding import FixedPoint

    devices = ["d0", "d1", "d2"]
    keys = {d: signing_keypair().public for d in devices}
    with pytest.raises(ParameterError) as refused:
        # no device answers: on the old code the session ran to its first deadline
        VirtualTimeLoop.run(
            secure_sum(
                MemoryTransport(),
                "r1",
                "s0",
                devices,
                2,
                FixedPoint(-1.0, 1.0, 2.0**16),
                stage_timeout=1.0,
                identity_keys=keys,
            )
        )
    assert refused.value.field == "identity_keys" and "active=True" in refused.value.reason


def test_an_abort_names_why_the_devices_refused():
    """Devices whose vectors do not have ``dim`` entries refuse the setup (``SaAbort``
    with the reason); the session's reason said only "only 0 of 4 devices advertised
    keys", hiding the cause in ``summary["device_aborts"]``."""
    import asyncio

    import numpy as np
    from ldpfleet.broker.transport import MemoryTransport
    from ldpfleet.collector.secure_sum import secure_sum
    from ldpfleet.devices.secagg_agent import SecAggAgent
    from ldpfleet.protocol.secagg.client import SecAggClient
    from ldpfleet.protocol.secagg.encoding import FixedPoint

    async def session():
        transport = MemoryTransport()
        devices = [f"d{i}" for i in range(4)]
        agents = [SecAggAgent(transport, SecAggClient("r1", "s0", d, np.zeros(3))) for d in devices]
        tasks = [asyncio.create_task(agent.run()) for agent in agents]
        await asyncio.gather(*(agent.subscribed.wait() for agent in agents))
        try:
            return await secure_sum(
                transport, "r1", "s0", devices, 4, FixedPoint(-1.0, 1.0, 2.0**16), stage_timeout=1
            )
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    result = VirtualTimeLoop.run(session())
    # one sentence, the stage named once (it read "advertise: advertise stage: only ...")
    assert result.aborted.startswith("advertise stage: only 0 of 4 devices"), result.aborted
    assert result.aborted.count("advertise stage") == 1, result.aborted
    assert "4 devices aborted" in result.aborted
    # the field named once (it read "d0: dim: dim 4, this device's vector ...")
    assert "d0: dim: the session sums 4 entries, this device's vector has 3" in result.aborted
