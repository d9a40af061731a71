"""The histogram post-processing's refusals carry ``field``, ``limit`` and ``value`` (claim
R6; collector/degree_postprocess.py, bucket_denoise.py, bucket_isotonic.py)."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector import degree_postprocess as dpp
from ldpfleet.collector.bucket_denoise import bucket_sums_array, simplex_projection
from ldpfleet.collector.bucket_isotonic import second_mode_top, tail_threshold
from ldpfleet.protocol.errors import ParameterError


def _refusal(call, *args, **kwargs) -> ParameterError:
    with pytest.raises(ParameterError) as err:
        call(*args, **kwargs)
    return err.value


def test_degree_postprocess_refusals_name_limit_and_value():
    err = _refusal(dpp.histogram_l1, [1, 2], [0, 0, 0])
    assert (err.field, err.limit) == ("histogram", "a positive total count")
    np.testing.assert_array_equal(err.value, [0, 0, 0])
    err = _refusal(dpp.post_process, [1.0, np.inf], 3, 1.0)
    assert (err.field, err.limit, err.value) == ("released[1]", "a finite real number", np.inf)
    err = _refusal(dpp.consistent_histogram, [0.5, 0.6], 3)
    assert err.field == "prior" and err.limit == "non-negative, summing to 1"


def test_bucket_readings_refusals_name_limit_and_value():
    err = _refusal(bucket_sums_array, [])
    assert err.field == "bucket_sums" and err.limit == "a non-empty array of finite numbers"
    err = _refusal(simplex_projection, [1.0, np.nan], 2.0)
    assert err.field == "values" and err.limit == "a non-empty array of finite numbers"
    err = _refusal(second_mode_top, [1.0, 2.0], 5, 1.0, level=0.05)
    assert (err.field, err.limit, err.value) == ("top", "a bucket in [0, 1]", 5)
    err = _refusal(tail_threshold, 3, 0.5, 1.0, 1.5)
    assert (err.field, err.limit, err.value) == ("level", "in (0, 1)", 1.5)
