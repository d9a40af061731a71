"""The DP θ search's noise floor is enforced by the secure sum itself: each survivor's
Pólya share is sized for ``noise_parties`` sharers, so a sum over fewer devices would be
under-noised. ``secure_sum(min_inputs=m)`` aborts such a session before anything is
unmasked (the collector never learns it), and the CADR fleet asks for it with
``m = noise_parties(n)`` on the bucket query."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import cadr_fleet
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol.cadr_theta_noise import noise_parties
from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.scenarios.cadr_run import run_cadr_fleet

from tests.e2e.test_cadr_theta_noise import secure_sum_over_agents

FIXED = FixedPoint(-8.0, 8.0, 1.0, 32)


async def _sum_with_dropouts(dropping: int, min_inputs: int):
    names = [f"d{i:02d}" for i in range(10)]
    inputs = {name: np.full(3, float(i % 4)) for i, name in enumerate(names)}
    dropouts = dict.fromkeys(names[:dropping], "after_keys")
    result = await secure_sum_over_agents(
        "floor", inputs, dropouts, FIXED, stage_timeout=30.0, min_inputs=min_inputs
    )
    return result, inputs


async def test_a_sum_over_fewer_than_min_inputs_is_never_unmasked():
    result, _ = await _sum_with_dropouts(dropping=2, min_inputs=9)
    assert result.total is None and result.encoded_total is None
    assert result.aborted is not None
    assert "only 8 of 10" in result.aborted and "at least 9 inputs (min_inputs)" in result.aborted


async def test_a_sum_that_meets_min_inputs_is_exact():
    result, inputs = await _sum_with_dropouts(dropping=1, min_inputs=9)
    assert result.aborted is None and len(result.survivors) == 9
    expected = sum(inputs[name] for name in result.survivors)
    np.testing.assert_allclose(result.total, expected)


@pytest.fixture
def floors(monkeypatch) -> dict[str, int]:
    """The ``min_inputs`` each secure sum of a CADR fleet run asks for, by session."""
    asked: dict[str, int] = {}
    real = cadr_fleet.secure_sum

    async def recording(*args, **kwargs):
        asked[args[2]] = kwargs.get("min_inputs", 0)  # args: transport, run, session, ...
        return await real(*args, **kwargs)

    monkeypatch.setattr(cadr_fleet, "secure_sum", recording)
    return asked


GRAPH = generate("barabasi_albert", 30, seed=4, m=2)


async def test_the_fleet_asks_the_bucket_sum_for_noise_parties_inputs(floors):
    result = await run_cadr_fleet(GRAPH, theta="auto-dev", seed=1)  # the dp pipeline
    assert floors["theta-buckets"] == noise_parties(GRAPH.n) == 27
    assert result["theta_search"]["noise_parties"] == 27


async def test_the_exact_search_of_the_paper_pipeline_sets_no_floor(floors):
    await run_cadr_fleet(GRAPH, theta="auto-dev", seed=1, pipeline="paper")
    assert floors and set(floors.values()) == {0}  # its θ rounds carry no noise
