"""The Gau-DP and Risk-DP readings of ``bench gcdp`` (issue 19, part 3): what each one
changes in the release, and Gau-DP's changed-coordinate count per dataset. No statistics:
every check compares releases drawn from the same seeded generator."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from ldpfleet.app import bench_gcdp as bench
from ldpfleet.app.gcdp_datasets import READINGS, WISDM_AXES, _gau_changed, parse_readings
from ldpfleet.collector.gcdp import gau_dp, risk_dp
from ldpfleet.protocol.errors import ParameterError

B = np.full(5, 1 / 30)
Y = np.tile([0.2, 0.4, 0.6, 0.8, 0.5], (40, 1))
CAL = {
    "bounds": B,
    "scales": np.array([0.05, 1 / 30, 0.04, 1 / 30, 1 / 30]),
    "exposure": np.array([0.08, 0.0, 0.22, 1.0, 0.21]),
    "utility": np.array([0.03, 0.0, 1.0, 1.0, 0.0]),
    "gau_l2": 1 / 30,
    "gau_changed": 1,
    "coordinate_map": None,
}


def _release(method: str, **readings: str) -> np.ndarray:
    cal = {**CAL, "readings": dataclasses.replace(READINGS, **readings)}
    return bench._release(method, Y, cal, 1.0, np.random.default_rng(17))


def test_changed_coordinates_per_dataset():
    occurrence, total = READINGS, dataclasses.replace(READINGS, gau_l2="sum")
    assert _gau_changed(occurrence, 5, None, 5) == 1  # Occupancy: a(k) = {k}
    intel = tuple(tuple(range(k * 10, (k + 1) * 10)) for k in range(10))
    assert _gau_changed(occurrence, 10, intel, 100) == 1  # one mote-channel, one block
    assert _gau_changed(occurrence, 6, WISDM_AXES, 3) == 3  # Y: YAVG, YSTANDDEV, RESULTANT
    assert _gau_changed(total, 6, WISDM_AXES, 3) == 6


def test_gau_sigma_reading_picks_the_calibration():
    common = {"bounds": B, "eps": 1.0, "delta": bench.GAU_DELTA, "low": 0.0, "high": 1.0,
              "l2_sensitivity": 1 / 30, "changed_coordinates": 1}  # fmt: skip
    for name in ("zcdp", "classic", "analytic"):
        ref = gau_dp(Y, **common, calibration=name, rng=np.random.default_rng(17))
        assert np.array_equal(_release("Gau-DP", gau_sigma=name), ref)
    spread = {n: np.std(_release("Gau-DP", gau_sigma=n) - Y) for n in ("zcdp", "classic")}
    assert spread["classic"] > spread["zcdp"]  # classic's sigma is the larger one here


def test_risk_readings_change_only_what_they_name():
    common = {"bounds": B, "exposure_norm": CAL["exposure"], "eps_rel": 1.0, "low": 0.0,
              "high": 1.0, "coordinate_map": None}  # fmt: skip
    kept = risk_dp(Y, scales=B, **common, rng=np.random.default_rng(17))
    assert np.array_equal(_release("Risk-DP"), kept)
    eta = risk_dp(Y, scales=B, **common, exposure_offset=1e-8, rng=np.random.default_rng(17))
    assert np.array_equal(_release("Risk-DP", risk_offset="eta"), eta)
    gcdp = risk_dp(Y, scales=CAL["scales"], **common, rng=np.random.default_rng(17))
    assert np.array_equal(_release("Risk-DP", risk_scales="gcdp"), gcdp)
    assert not np.array_equal(kept, eta) and not np.array_equal(kept, gcdp)
    # the other methods do not read them
    assert np.array_equal(_release("GC-DP", risk_offset="eta"), _release("GC-DP"))


def test_parse_the_new_readings():
    chosen = parse_readings("gau_sigma=classic,risk_offset=eta,risk_scales=gcdp")
    assert (chosen.gau_sigma, chosen.risk_offset, chosen.risk_scales) == ("classic", "eta", "gcdp")
    with pytest.raises(ParameterError) as info:
        parse_readings("gau_sigma=float")
    assert info.value.field == "readings.gau_sigma"
