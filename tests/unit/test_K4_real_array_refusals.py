"""The "must be an array of real numbers" refusals of protocol/dsr.py,
protocol/exponential.py and collector/bucket_denoise.py, pinned: each took its own
try/except before ``protocol.validate.real_array`` did the same, and moving them onto it
keeps the message, field, limit, value and code of every refusal (and the arrays of the
inputs they accept).
"""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.bucket_denoise import bucket_sums_array
from ldpfleet.protocol.dsr import post_process_distribution
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.exponential import ExponentialMechanism

LIMIT = "an array of real numbers"
NOT_REAL = [
    [1.0, "x"],  # a ValueError in numpy
    object(),  # a TypeError in numpy
    {"a": 1.0},
]
MECHANISM = ExponentialMechanism(1.0, 1.0)
# (function of the input, the field it names)
READERS = [
    (lambda values: post_process_distribution(values, 3), "noisy"),
    (lambda values: MECHANISM.probabilities(values), "scores"),
    (lambda values: MECHANISM.sample(values, np.random.default_rng(0)), "scores"),
    (bucket_sums_array, "bucket_sums"),
]


@pytest.mark.parametrize("values", NOT_REAL, ids=["mixed", "object", "dict"])
@pytest.mark.parametrize(("read", "field"), READERS, ids=["dsr", "probs", "sample", "bucket"])
def test_a_value_that_is_no_array_of_reals_is_refused_as_before(read, field, values):
    with pytest.raises(ParameterError) as refused:
        read(values)
    error = refused.value
    assert error.reason == f"must be {LIMIT}, got {values!r}"
    assert str(error) == f"{field}: must be {LIMIT}, got {values!r}"
    assert (error.field, error.limit, error.code) == (field, LIMIT, None)
    assert error.value is values
    assert error.__suppress_context__  # `from None`: no numpy traceback behind it


def test_the_accepted_inputs_read_as_before():
    assert post_process_distribution([0.2, 2.6, -1.0, 9.0], 3).tolist() == [2, 0, 0, 2]
    assert post_process_distribution(np.array([[1.0], [1.4]]), 3).tolist() == [0, 2, 0, 0]
    assert MECHANISM.probabilities([0, 0]).tolist() == [0.5, 0.5]
    assert MECHANISM.probabilities((1, 1.0)).tolist() == [0.5, 0.5]
    given = np.array([1.0, 2.0])
    read = bucket_sums_array(given)
    assert np.shares_memory(read, given) and read.tolist() == [1.0, 2.0]  # a view, no copy
    assert bucket_sums_array([[1, 2], [3, 4]]).tolist() == [1.0, 2.0, 3.0, 4.0]
