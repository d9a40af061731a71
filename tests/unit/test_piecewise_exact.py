"""The Piecewise Mechanism's exact grid sampler (protocol/piecewise.py, module docstring).

Statistical thresholds. A chi-square test over the output cells' groups fails only when its
p-value is below ``1e-6`` (every expected count >= 5), and a mean is compared with its
expectation in units of its standard error at ``Z = 4.9`` (two-sided ``9.6e-7`` by the
CLT), so a correct sampler fails a test with probability about 1e-6 (fixed seeds).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from ldpfleet.protocol.piecewise import PiecewiseMechanism, pm_variance
from scipy import stats

P_MIN = 1e-6
Z = 4.9


def _cell_index(mech: PiecewiseMechanism, y: np.ndarray) -> np.ndarray:
    """The cell of each report; asserts every report is a cell midpoint."""
    position = (np.asarray(y) - mech.output_low) / mech.cell - 0.5
    index = np.rint(position)
    assert np.array_equal(position, index), "a report is not a cell midpoint"
    assert np.all((index >= 0) & (index < mech.cells))
    return index.astype(np.int64)


@pytest.mark.parametrize("eps", [0.5, 1.0, 4.0])
def test_outputs_are_midpoints_whatever_the_inputs_low_bits(eps):
    """Fails on the former inverse CDF, whose output l(t) + (u - q (l + C)) / p carried
    the input's low bits: two inputs 1e-15 apart gave different reports on the same draws."""
    mech = PiecewiseMechanism(eps)
    x = np.full(5000, 0.3)
    y = mech.perturb(x, np.random.default_rng(3))
    y_near = mech.perturb(np.nextafter(x, 1.0), np.random.default_rng(3))
    assert np.array_equal(y, y_near)
    _cell_index(mech, y)
    assert mech.cell == 2.0**-20  # GRID


def _cell_law(mech: PiecewiseMechanism, x: float) -> tuple[int, int, Fraction]:
    """(first centre cell a, K, P(centre) = K R / (K R + M))."""
    near = mech.centre_cells
    far = mech.cells - near
    start = round(x * far)
    return start, near, near * mech.ratio / (near * mech.ratio + far)


@pytest.mark.parametrize(("eps", "x"), [(0.7, 0.0), (1.0, 0.62), (3.0, 1.0)])
def test_the_cell_law_is_exact(eps, x):
    """Reports grouped as the centre piece and 10 equal runs of far-cell indices: the
    expected fraction of each group is exact (far cells are equally likely)."""
    mech = PiecewiseMechanism(eps)
    start, near, p_centre = _cell_law(mech, x)
    n = 200_000
    cells = _cell_index(mech, mech.perturb(np.full(n, x), np.random.default_rng(11)))
    centre = (cells >= start) & (cells < start + near)
    far_rank = np.where(cells[~centre] < start, cells[~centre], cells[~centre] - near)
    far_cells = mech.cells - near
    edges = np.linspace(0, far_cells, 11).round().astype(np.int64)
    observed = np.concatenate(([centre.sum()], np.histogram(far_rank, bins=edges)[0]))
    probs = np.concatenate(([float(p_centre)], float(1 - p_centre) * np.diff(edges) / far_cells))
    assert (probs * n).min() >= 5
    assert stats.chisquare(observed, probs * n).pvalue > P_MIN


@pytest.mark.parametrize("eps", [1e-12, 1e-6, 0.3, 2.0, 30.0, 50.0])
def test_the_grid_constants_keep_the_ratio_and_the_mass(eps):
    """p / q = R <= e^eps, the cell masses sum to 1, the range is whole cells, and the
    slope of E[y] is within 1e-5 of the continuous constants' 1."""
    mech = PiecewiseMechanism(eps)
    near, far = mech.centre_cells, mech.cells - mech.centre_cells
    assert 1 <= near < mech.cells and mech.bound == mech.cells * mech.cell / 2
    assert mech.ratio <= Fraction(math.exp(eps)) * (1 + Fraction(1, 2**50))
    assert mech.ratio > 1 and mech.p / mech.q == pytest.approx(float(mech.ratio), rel=1e-12)
    assert (near * mech.p + far * mech.q) * mech.cell == pytest.approx(1.0, rel=1e-12)
    assert mech.gain == pytest.approx(1.0, abs=1e-5)


def _exact_variance(mech: PiecewiseMechanism, x: float) -> tuple[float, float, float]:
    """(Var and mean of ``estimate``, the rounded input a / M) from the cell law itself
    (sums over every cell)."""
    start, near, _ = _cell_law(mech, x)
    mids = mech.output_low + (np.arange(mech.cells) + 0.5) * mech.cell
    weights = np.ones(mech.cells)
    weights[start : start + near] = float(mech.ratio)
    weights /= weights.sum()
    est = (mids / mech.gain + 1.0) / 2.0
    mean = float(weights @ est)
    return float(weights @ (est - mean) ** 2), mean, start / (mech.cells - near)


@pytest.mark.parametrize(("eps", "x"), [(0.5, 0.0), (1.0, 0.3), (8.0, 1.0), (30.0, 0.5)])
def test_estimate_is_unbiased_and_variance_exact_on_the_grid(eps, x):
    """The grid law's mean estimate is the rounded input a / M and its variance is
    ``variance`` (computed from every cell's probability), close to Lemma 1's while the
    centre piece spans many cells (at eps = 30 it is one cell, wider than the ideal 6e-7:
    less far mass, a smaller variance)."""
    mech = PiecewiseMechanism(eps)
    var, mean, rounded = _exact_variance(mech, x)
    assert mean == pytest.approx(rounded, abs=1e-9)
    assert abs(rounded - x) <= 1.0 / (mech.cells - mech.centre_cells)
    assert float(mech.variance(np.array([x]))[0]) == pytest.approx(var, rel=1e-6)
    if mech.centre_cells > 1000:  # the piece spans many cells: Lemma 1's law, nearly
        ideal = float(pm_variance(eps, np.array([2 * x - 1]))[0]) / 4
        assert var == pytest.approx(ideal, rel=1e-4)


@pytest.mark.parametrize("eps", [30.0, 50.0])
def test_unbiased_at_budgets_where_the_centre_is_one_cell(eps):
    mech = PiecewiseMechanism(eps)
    assert mech.centre_cells == 1
    n = 100_000
    for x in (0.0, 0.4, 1.0):
        est = mech.estimate(mech.perturb(np.full(n, x), np.random.default_rng(5)))
        sd = math.sqrt(float(mech.variance(np.array([x]))[0]) / n)
        assert abs(est.mean() - x) <= Z * sd + 1.0 / (mech.cells - 1)


class _ZeroGenerator:
    """Every bounded integer is 0: the far coin's uniform is below any positive
    probability, and the far cell is the first."""

    def integers(self, low, high=None, size=None, dtype=np.int64):
        return np.zeros(() if size is None else size, dtype=np.int64)

    def random(self, size=None):
        return np.zeros(() if size is None else size)


def test_the_far_branch_is_reachable_at_the_largest_budget():
    """At eps = 50 a far cell has probability 1 / (R + M) ~ 1e-22 each (M ~ 2**21): not
    sampleable, but reachable on the draws that realise it, and still a midpoint."""
    mech = PiecewiseMechanism(50.0)
    y = mech.perturb(np.array([1.0]), _ZeroGenerator())
    assert y[0] == mech.output_low + mech.cell / 2
    assert mech.density(y, 1.0)[0] == mech.q and mech.density(y, 0.0)[0] == mech.p
