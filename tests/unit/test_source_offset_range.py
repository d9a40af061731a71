"""``[source] offset`` as a ``[min, max]`` range drawn per device (synthetic sources, per
device and bulk): each device swings around its own level, so the devices' means differ and
a per-device statistic has something to find that a constant guess does not know. A fixed
offset draws nothing, so every existing scenario's streams are unchanged."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.devices.sources import SourceError, SyntheticSpec, device_rng, synthetic_stream
from ldpfleet.protocol.bulk import BulkPlan, device_keys, device_offsets, synthetic_values
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.bulk_run import bulk_plan
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

from tests.conftest import ROOT

QUICKSTART = (ROOT / "scenarios" / "quickstart.toml").read_text()


def _ranged(text: str, value: str) -> str:
    assert "offset = 20.0" in text
    return text.replace("offset = 20.0", f"offset = {value}")


def test_a_fixed_offset_draws_nothing_so_old_streams_are_unchanged():
    """The stream of a fixed offset is the formula with the rng's draws in the old order
    (period, phase, noise): computed here by hand from a twin generator."""
    spec = SyntheticSpec(period=(12, 36), amplitude=3.0, offset=7.5, noise=0.5)
    x, truth = synthetic_stream(spec, 50, np.random.default_rng(11))
    twin = np.random.default_rng(11)
    period = int(twin.integers(12, 36, endpoint=True))
    phase = float(twin.random())
    expected = 7.5 + 3.0 * np.sin(2 * np.pi * (np.arange(50) / period + phase))
    expected = expected + 0.5 * twin.standard_normal(50)
    assert (truth.period, truth.phase) == (period, phase)
    assert np.array_equal(x, expected)


def test_a_range_gives_each_device_its_own_level_inside_it():
    spec = SyntheticSpec(period=24, amplitude=1.0, offset=[10.0, 30.0], phase=0.0)
    assert spec.offset == (10.0, 30.0)
    # 480 steps = 20 whole periods: a device's mean is its level exactly (up to rounding)
    levels = [synthetic_stream(spec, 480, device_rng(3, i, "data"))[0].mean() for i in range(200)]
    assert min(levels) >= 10.0 - 1e-9 and max(levels) <= 30.0 + 1e-9
    # uniform on [10, 30]: 200 draws all inside one half has probability 2 * 2^-200; the
    # spread's sd is 20 / sqrt(12) = 5.77; a sample sd below 4 or above 7.5 among 200
    # draws is beyond 6 sds of its sampling law (sd of the sample sd ~ 0.2): p < 1e-8
    assert min(levels) < 20.0 < max(levels)
    assert 4.0 < float(np.std(levels)) < 7.5


def test_a_range_is_reproducible_per_device_and_seed():
    spec = SyntheticSpec(offset=(0.0, 1.0), noise=0.1)
    a, _ = synthetic_stream(spec, 30, device_rng(5, 2, "data"))
    b, _ = synthetic_stream(spec, 30, device_rng(5, 2, "data"))
    c, _ = synthetic_stream(spec, 30, device_rng(5, 3, "data"))
    assert np.array_equal(a, b) and not np.array_equal(a, c)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ((30.0, 10.0), "min > max"),
        ((1.0, 2.0, 3.0), "pair of numbers"),
        ((1.0, float("nan")), "finite"),
        (float("inf"), "finite"),
        ("x", "not a number"),
    ],
)
def test_a_bad_offset_names_the_field_and_the_value(value, said):
    with pytest.raises(SourceError) as info:
        SyntheticSpec(offset=value)
    assert info.value.field == "source.offset" and said in str(info.value)


@pytest.mark.parametrize(
    ("value", "limit"),
    [
        ("[30.0, 10.0]", "a [min, max] range needs min <= max"),
        ("[1.0, 2.0, 3.0]", "length <= 2"),
        ("[1.0]", "length >= 2"),
    ],
)
def test_a_scenario_with_a_bad_range_is_refused_on_load(value, limit):
    with pytest.raises(ScenarioError) as info:
        parse_scenario(_ranged(QUICKSTART, value))
    assert info.value.field == "source.offset" and info.value.limit == limit
    assert "source.offset" in str(info.value)


def test_a_scenario_range_reaches_the_source():
    loaded = parse_scenario(_ranged(QUICKSTART, "[10.0, 30.0]"))
    assert loaded.source_spec().offset == (10.0, 30.0)


def test_bulk_gateways_draw_a_level_per_device_from_its_key():
    plan = BulkPlan(
        run="r", devices=400, steps=24, batch_steps=4, eps=2.0, w=4, noise=0.0,
        period=(24, 24), offset=(10.0, 30.0),
    )  # fmt: skip
    keys = device_keys(plan, 0, 400)
    levels = device_offsets(plan, keys)
    assert levels.shape == (400,) and levels.min() >= 10.0 and levels.max() < 30.0
    # a whole period: each device's mean is its level
    assert np.allclose(synthetic_values(plan, keys, 0, 24).mean(axis=1), levels, atol=1e-9)
    # uniform on [10, 30] over 400 devices: sd 5.77, sample sd outside (4.5, 7) is > 6
    # sds of its sampling law away (sd ~ 0.15): p < 1e-8
    assert 4.5 < float(levels.std()) < 7.0
    again = BulkPlan.from_dict(plan.to_dict())
    assert again == plan and again.offset == (10.0, 30.0)


def test_bulk_plan_takes_the_scenario_range_and_refuses_a_bad_one():
    text = _ranged(QUICKSTART, "[10.0, 30.0]").replace(
        "[fleet]\n", '[fleet]\nconnection = "bulk"\n', 1
    )
    assert bulk_plan(parse_scenario(text), "r").offset == (10.0, 30.0)
    with pytest.raises(ParameterError) as info:
        BulkPlan(run="r", devices=3, steps=10, batch_steps=5, eps=2.0, w=5, offset=(2.0, 1.0))
    assert info.value.field == "offset"
