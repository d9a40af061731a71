"""collector.bucket_isotonic.geometric_tail_counts: the released histogram's tail above the
top significant bucket re-placed on a fitted geometric decay (issue 20, helper B;
docs/cadr-private.md, "Released histogram: a geometric tail (helper B)"). Tier 1: the pure
function on hand-made sums."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.collector.bucket_isotonic import (
    TAIL_DECAY_MAX,
    _fitted_decay,
    geometric_tail_counts,
)
from ldpfleet.protocol.errors import ParameterError

SD = 2.0  # the noise sd of the hand-made sums; significant: a sum of at least 3 SD = 6


def _counts(y):
    """Hand-made counts: the positive part of the sums (any non-negative counts do)."""
    return np.maximum(np.asarray(y, float), 0.0)


def test_the_tail_mass_moves_down_onto_the_fitted_decay_and_the_rest_is_kept():
    # bulk in buckets 0-3 (significant), an exactly geometric tail 8, 4, 2, 1 (ρ = 0.5)
    # in buckets 4-7, then empty buckets with one far noise spike of 5 in bucket 11
    y = np.array([40, 90, 60, 20, 8, 4, 2, 1, 0, 0, 0, 5, 0], float)
    x = _counts(y)
    widths = np.ones(y.size)
    out = geometric_tail_counts(y, x, widths, SD, mode_z=3.0)
    top = 4  # bucket 4 (sum 8 >= 6) is the top significant one
    np.testing.assert_array_equal(out[: top + 1], x[: top + 1])
    assert out.sum() == pytest.approx(x.sum())
    tail = out[top + 1 :]
    assert np.all(tail >= 0) and np.all(np.diff(tail) <= 1e-12)  # non-increasing
    # the tail above bucket 4 is 4, 2, 1, 0, 0, 0, 5, 0: its least-squares decay
    rho = _fitted_decay(y[top + 1 :], TAIL_DECAY_MAX)
    assert 0.0 < rho < 0.9
    np.testing.assert_allclose(tail[1:] / tail[:-1], rho)
    assert tail.sum() == pytest.approx(12.0)  # the counts' own tail mass, 4 + 2 + 1 + 5
    assert out[11] < 0.5 < x[11]  # the far spike's mass is now near the tail's start


def test_an_exact_geometric_tail_is_fitted_on_the_grid():
    tail = 30.0 * 0.62 ** np.arange(12)
    assert _fitted_decay(tail, TAIL_DECAY_MAX) == pytest.approx(0.62)
    assert _fitted_decay(tail, 0.5) == pytest.approx(0.5)  # capped
    # a tail of zeros or negatives: a = 0 for every ρ, the lowest (0) is taken
    assert _fitted_decay(np.array([-3.0, 0.0, -1.0]), TAIL_DECAY_MAX) == 0.0


def test_zero_width_buckets_get_no_mass_and_the_decay_counts_live_buckets():
    y = np.array([50, 30, 4, 2, 1, 3], float)
    x = _counts(y)
    widths = np.array([1, 3, 5, 8, 12, 0], float)  # the last bucket (t_k, D] is empty
    out = geometric_tail_counts(y, x, widths, SD, mode_z=3.0)
    assert out[-1] == 0.0
    assert out.sum() == pytest.approx(x.sum())
    assert out[2] >= out[3] >= out[4]


@pytest.mark.parametrize(
    "y",
    [
        [1.0, 2.0, -1.0, 3.0],  # no bucket significant (all below 6)
        [1.0, 2.0, -1.0, 30.0],  # the top significant bucket is the last
        [30.0, 20.0, -1.0, -2.0],  # no mass above the top significant bucket
    ],
)
def test_nothing_to_re_place_leaves_the_counts_as_they_are(y):
    x = _counts(y)
    out = geometric_tail_counts(y, x, np.ones(4), SD, mode_z=3.0)
    np.testing.assert_array_equal(out, x)


def test_ties_keep_the_tail_compact():
    # a tail of zeros but counts above g (e.g. the bootstrap's correction): ρ = 0, all
    # the mass in the first live bucket above g
    y = np.array([60.0, 0.0, 0.0, 0.0])
    x = np.array([57.0, 1.0, 0.0, 2.0])
    out = geometric_tail_counts(y, x, np.ones(4), SD, mode_z=3.0)
    np.testing.assert_allclose(out, [57.0, 3.0, 0.0, 0.0])


@pytest.mark.parametrize(
    ("kwargs", "field", "shown"),
    [
        ({"counts": [1.0, 2.0]}, "counts", "got 2 values"),
        ({"counts": [1.0, -2.0, 3.0]}, "counts", "minimum -2.0"),
        ({"widths": [1.0, 1.0, np.nan]}, "widths", "finite non-negative"),
        ({"noise_sd": 0.0}, "noise_sd", "0.0"),
        ({"mode_z": -1.0}, "mode_z", "-1.0"),
        ({"decay_max": 1.0}, "decay_max", "[0, 1), got 1.0"),
        ({"decay_max": -0.1}, "decay_max", "got -0.1"),
    ],
)
def test_bad_input_is_refused_naming_the_field_the_limit_and_the_value(kwargs, field, shown):
    args = {"counts": [1.0, 2.0, 3.0], "widths": [1.0, 1.0, 1.0], "noise_sd": 1.0}
    args.update(kwargs)
    options = {"mode_z": kwargs.get("mode_z", 3.0)}
    if "decay_max" in kwargs:
        options["decay_max"] = kwargs["decay_max"]
    with pytest.raises(ParameterError, match=field) as err:
        geometric_tail_counts(
            [10.0, 1.0, 1.0], args["counts"], args["widths"], args["noise_sd"], **options
        )
    assert shown in str(err.value)
