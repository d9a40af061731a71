"""``samplers.grid_laplace_scale`` remembers its result per (sensitivity, eps, grid,
coordinates) of plain floats and ints (helper A, 2026-12-07 evening, claim A6): the same
Fraction as computed afresh, and every bad argument still refused even after an equal good
one was remembered (the cache is typed: ``True`` is not ``1``)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from ldpfleet.protocol import samplers
from ldpfleet.protocol.errors import ParameterError


def test_remembered_values_are_the_computed_ones():
    samplers._grid_laplace_scale_cached.cache_clear()
    grid = [0.0, -0.0, 1, 1.0, 0.1, 2.5, 1e-9, 123456.789]
    for sens, eps, g, n in itertools.product(
        grid, [0.1, 0.5, 1, 2.0, 7.3], [2.0**-10, 1.0], [1, 3]
    ):
        for _ in range(2):
            got = samplers.grid_laplace_scale(sens, eps, g, n)
            assert got == samplers._grid_laplace_scale(sens, eps, g, n)
            assert type(got) is type(samplers._grid_laplace_scale(sens, eps, g, n))
    assert samplers._grid_laplace_scale_cached.cache_info().hits > 0


@pytest.mark.parametrize(
    "args",
    [
        (True, 1.0, 1.0, 1),
        (1.0, True, 1.0, 1),
        (1.0, 1.0, True, 1),
        (1.0, 1.0, 1.0, True),
        (1.0, 0.0, 1.0, 1),
        (-1.0, 1.0, 1.0, 1),
        (float("nan"), 1.0, 1.0, 1),
        (1.0, float("inf"), 1.0, 1),
        (1.0, 1.0, 0.3, 1),
        (1.0, 1.0, 1.0, 0),
        ("1", 1.0, 1.0, 1),
    ],
)
def test_bad_arguments_are_refused_after_good_ones(args):
    samplers.grid_laplace_scale(1, 1, 1.0, 1)  # remembered: 1, 1, 1.0, 1
    samplers.grid_laplace_scale(1.0, 1.0, 1.0, 1)
    for _ in range(2):
        with pytest.raises(ParameterError):
            samplers.grid_laplace_scale(*args)


def test_numpy_scalars_take_the_uncached_path_and_agree():
    assert samplers.grid_laplace_scale(np.float64(0.5), np.float64(2.0)) == (
        samplers.grid_laplace_scale(0.5, 2.0)
    )
