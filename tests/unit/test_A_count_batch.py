"""Helper A's speed-ups of the θ-count canaries draw what the code before them drew.

* ``cadr_count_canary._count_releases`` builds the messages and the device names once per
  sample set instead of once per run: every run still builds fresh ``CadrDevice`` machines
  and feeds them the plan and the query. The reference below is a frozen copy of the
  per-run release of before (``cadr_count_release`` on main 67a99fb9), called once per run
  as the battery's sampler called it.
* ``samplers.negative_binomial`` keeps the parts of the last (shape, ratio) objects, and
  ``samplers._word_source`` the word source of the last generator: alternating shapes,
  ratios and generators must give the values and generator states of separate calls.
* ``cadr_theta_noise.bucket_vector``'s int-list path equals its numpy path.
"""

from __future__ import annotations

import hashlib
import math
from fractions import Fraction

import numpy as np
import pytest
from ldpfleet.collector.audit import cadr_count_canary as canary
from ldpfleet.protocol import samplers
from ldpfleet.protocol.cadr_theta_noise import bucket_vector, share_ratio


def _frozen_release(eps_theta, listed, rng, *, parties, survivors):
    """``cadr_count_release`` as it was before the batch (main 67a99fb9)."""
    from ldpfleet.protocol.cadr_device import CadrDevice

    messages = canary._count_messages(eps_theta, parties)
    total = None
    for i in range(survivors):
        k = listed if i == 0 else 1
        neighbours = [f"m{i}x{j:03d}" for j in range(k)]
        device = CadrDevice(canary.RUN, f"d{i:03d}", neighbours, rng)
        for topic, message in messages:
            device.receive(topic, message, 0.0)
        assert device.budget is not None and device.theta_answer is not None
        assert math.isclose(device.budget.theta, eps_theta, rel_tol=1e-9) or i
        total = device.theta_answer if total is None else total + device.theta_answer
    return np.asarray(total)


@pytest.mark.parametrize(
    ("entry", "parties", "survivors"),
    [("cadr-theta-count", canary.COUNT_DEVICES, canary.COUNT_DEVICES),
     ("cadr-theta-count-dropout", 9, canary.DROPOUT_SURVIVORS)],
)  # fmt: skip
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_the_batch_sampler_draws_what_the_per_run_loop_drew(entry, parties, survivors, eps):
    spec = canary.COUNT_BATTERY[entry](eps, 0.0)
    for world, listed in ((spec.canary.sample_d, 0), (spec.canary.sample_dprime, 8)):
        new_rng, old_rng = np.random.default_rng(17), np.random.default_rng(17)
        new = world(new_rng, 40)
        old = np.array(
            [_frozen_release(eps, listed, old_rng, parties=parties, survivors=survivors)
             for _ in range(40)]
        )  # fmt: skip
        assert new.shape == old.shape == (40, 9)
        assert new.dtype == old.dtype
        assert np.array_equal(new, old)
        assert new_rng.bit_generator.state == old_rng.bit_generator.state


def test_one_release_is_the_first_row_of_a_batch():
    one = canary.dropout_count_release(2.0, 8, np.random.default_rng(3))
    rows = canary._dropout_releases(2.0, 8, np.random.default_rng(3), 2)
    assert np.array_equal(one, rows[0])
    assert one.shape == (9,)


# sha256 (first 16 hex digits) of the dropout entry's 300 sums in world D', seed 0, on
# main 67a99fb9 (before these speed-ups): np.array([dropout_count_release(2.0, 8, rng) ...])
DROPOUT_300_DIGEST = "9c4ccdea0c73b185"


def test_the_dropout_entry_opens_the_sums_of_main():
    spec = canary.COUNT_BATTERY["cadr-theta-count-dropout"](2.0, 0.0)
    out = spec.canary.sample_dprime(np.random.default_rng(0), 300)
    assert hashlib.sha256(out.tobytes()).hexdigest()[:16] == DROPOUT_300_DIGEST


def _fresh_nb(seed_state, shape, ratio, size):
    """``negative_binomial`` through its checked (uncached) path on a copy of a state."""
    rng = np.random.default_rng()
    rng.bit_generator.state = seed_state
    u, v = samplers._ratio(ratio, "ratio")
    return samplers._nb_draw(rng, samplers._nb_shape(shape, u, v), size), rng


def test_alternating_shapes_ratios_and_generators_draw_as_separate_calls():
    """The one-entry memos (last (shape, ratio), last generator's word source) never hand a
    call another call's parts or words."""
    first, second = np.random.default_rng(1), np.random.default_rng(2)
    a2, a1 = share_ratio(2.0), share_ratio(1.0)
    calls = [
        (first, Fraction(1, 9), a2),
        (second, Fraction(1, 9), a2),
        (first, Fraction(1, 4), a2),
        (first, Fraction(1, 4), a1),
        (second, Fraction(3, 2), Fraction(2, 3)),
        (first, Fraction(1, 9), a2),
    ]
    for rng, shape, ratio in calls * 3:
        state = rng.bit_generator.state
        expected, reference = _fresh_nb(state, shape, ratio, 18)
        got = samplers.negative_binomial(rng, shape, ratio, 18)
        assert got.tolist() == expected.tolist()
        assert rng.bit_generator.state == reference.bit_generator.state


def test_a_generator_stub_is_asked_through_integers_every_time():
    class Stub:
        def __init__(self):
            self.inner = np.random.default_rng(4)
            self.calls = 0

        def integers(self, *args, **kwargs):
            self.calls += 1
            return self.inner.integers(*args, **kwargs)

    stub = Stub()
    samplers.negative_binomial(stub, Fraction(1, 9), share_ratio(2.0), 18)
    assert stub.calls > 0


@pytest.mark.parametrize(
    "thresholds",
    [[0, 1, 2, 3, 4, 5, 6, 7], [0, 1], [3], [], [5, 2, 9], [0, 16, 40, 2**70]],
)
@pytest.mark.parametrize("degree", [0, 1, 2, 7, 8, 50, 2**70 + 1])
def test_bucket_vector_int_lists_equal_its_numpy_path(thresholds, degree):
    fast = bucket_vector(degree, thresholds)
    numpy_path = bucket_vector(degree, np.asarray(thresholds, dtype=object))
    assert fast.dtype == numpy_path.dtype == np.float64
    assert fast.tolist() == numpy_path.tolist()


def test_bucket_vector_falls_back_for_anything_but_ints():
    # floats and numpy integers in the list: numpy's comparison, as before
    assert bucket_vector(3, [0.5, 2.5, 3.5]).tolist() == [0.0, 0.0, 1.0, 0.0]
    assert bucket_vector(3, [np.int64(1), np.int64(5)]).tolist() == [0.0, 1.0, 0.0]
    from ldpfleet.protocol.errors import ParameterError

    with pytest.raises(ParameterError) as info:
        bucket_vector(-1, [0, 1])
    assert info.value.field == "degree"
    with pytest.raises(ParameterError):
        bucket_vector(True, [0, 1])
