"""Privacy bugs of user mechanisms the audit missed (helper D, round 2, 2026-12-06), each
family with its plugin written here, and honest plugins of unusual shapes that must stay
inconclusive. The 37 plugins of the trial are in scripts/D2_plugins (docs/audit.md,
"Round 2 of user plugins").

Families newly caught:

* antithetic noise across a batch (the noise of neighbouring readings cancels, so the sum
  of two reports is the sum of their readings): witness "sum of the reports";
* a leak confined to inputs between the k/20 grid (a per-bin table wrong in bins of
  width 1/40): the 8 off-grid inputs ``battery.OFF_GRID``;
* a Gaussian claimed as pure eps, stating its density: its own log-ratio exceeds eps far
  in the tails (``stated_density``), exit status 1 with one warning;
* a branch wrong only for small budgets: ``--eps 0.4,1`` audits a plugin at several
  budgets (gamma family-wise), as a scenario runs it at eps0 = eps / w.

Statistics: fixed seed 0; the honest plugins are audited at gamma = 1e-6, so the split
bounds their false violation by 1e-6 each (measured at seed 0: 0.50, 0.68, 0.68). The
leaks' margins, measured at seed 0: antithetic pairs make the sum of the pair (x, 0) equal
x exactly (log-ratio infinite, the certified bound capped by the runs: 5.33 at gamma 1e-6;
2.64 since round 3, whose one-reading calls (an eighth of the runs) carry no pair and whose
partners 1 shift the sum by 1: 2,023 of 3,000 vs 83; asserted > 2); the band table runs
4 eps in its bins (3.22 at gamma 1e-6, asserted > 1.5);
the small-eps branch spends ln(0.7/0.3) = 0.85 at a claim of 0.4 (0.73 at gamma 0.025 per
budget, a violation of 0.4). The stated density check is deterministic given the seed
(the sample only decides where to probe): the Gaussian's own log-ratio 3.40 at report 80.2
for inputs 1 vs 0, the tight Laplace and geometric densities 0.99999905 and 1 + 4e-16.
"""

from __future__ import annotations

import json
import math
import sys
import types

import numpy as np
import pytest
from ldpfleet.app.cli import app
from ldpfleet.collector.audit import battery
from ldpfleet.collector.audit.battery import run_audit
from ldpfleet.collector.audit.stated_density import stated_density_check
from ldpfleet.protocol.samplers import GRID, grid_laplace_scale, laplace_on_grid
from typer.testing import CliRunner

GAMMA = 1e-6
MODULE = "d2_test_plugins"


class _GridLaplace:
    def __init__(self, eps):
        self.eps = float(eps)
        self._scale = grid_laplace_scale(1.0, self.eps)

    def perturb(self, x, rng):
        return laplace_on_grid(rng, np.asarray(x, dtype=float), self._scale, GRID)

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5


class AntitheticPairs(_GridLaplace):
    """Neighbouring readings get noise (n, -n): their reports sum to their readings."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        noise = laplace_on_grid(rng, np.zeros(x.shape), self._scale, GRID)
        half = x.size // 2
        noise[1 : 2 * half : 2] = -noise[0 : 2 * half : 2]
        return np.round(x / GRID) * GRID + noise


class BandTableBug(_GridLaplace):
    """Scale quartered in bins 1, 5, 9, ... of 40 (x in [0.025, 0.05), [0.125, 0.15), ...)."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        out = laplace_on_grid(rng, x, self._scale, GRID)
        bad = np.minimum((x * 40).astype(int), 39) % 4 == 1
        out[bad] = laplace_on_grid(rng, x[bad], grid_laplace_scale(1.0, 4 * self.eps), GRID)
        return out


class GaussianAsPureDensity(_GridLaplace):
    """Gaussian noise with sigma for (eps, 1e-5), claimed pure eps, density stated."""

    def __init__(self, eps):
        super().__init__(eps)
        self.sigma = math.sqrt(2 * math.log(1.25 / 1e-5)) / self.eps

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return np.round((x + self.sigma * rng.standard_normal(x.shape)) / GRID) * GRID

    def density(self, y, v):
        z = (np.asarray(y, dtype=float) - v) / self.sigma
        return np.exp(-0.5 * z * z) / (self.sigma * math.sqrt(2 * math.pi))


class LaplaceDensity(_GridLaplace):
    """Honest, tight: grid Laplace stating the continuous Laplace density at its scale."""

    def density(self, y, v):
        b = float(self._scale)
        return np.exp(-np.abs(np.asarray(y, dtype=float) - v) / b) / (2 * b)


class SmallEpsBranch:
    """One-bit RR with p = 1/2 + eps/2 below eps = 1 (e^0.85 at a claim of 0.4)."""

    def __init__(self, eps):
        self.eps = float(eps)
        self.p = 1 / (1 + math.exp(-self.eps)) if self.eps >= 1 else 0.5 + self.eps / 2

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        bit = rng.random(x.shape) < x
        return np.where(rng.random(x.shape) < self.p, bit, ~bit).astype(float)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y == 0.0) | (y == 1.0)

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float((np.mean(y) - (1 - self.p)) / (2 * self.p - 1)) if y.size else 0.5


class ShuffledBatch(_GridLaplace):
    """Honest: the batch's reports in an order drawn from rng (post-processing)."""

    def perturb(self, x, rng):
        noisy = super().perturb(x, rng)
        return noisy[rng.permutation(noisy.size)]


class CoarseGeometricDensity:
    """Honest: randomised rounding to 5 levels, two-sided geometric with ratio e^(-eps/4)
    per level, density stated (a discrete law: probes off its support are refused)."""

    def __init__(self, eps):
        self.eps = float(eps)
        self.alpha = math.exp(-self.eps / 4)

    def perturb(self, x, rng):
        s = np.asarray(x, dtype=float) * 4
        lo = np.floor(s)
        k = lo + (rng.random(s.shape) < s - lo)
        g = rng.geometric(1 - self.alpha, s.shape) - rng.geometric(1 - self.alpha, s.shape)
        return (k + g) / 4.0

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return np.isfinite(y) & (y * 4 == np.round(y * 4))

    def estimate_mean(self, y):
        y = np.asarray(y, dtype=float)
        return float(np.mean(y)) if y.size else 0.5

    def density(self, y, v):
        y = np.asarray(y, dtype=float)
        if not np.all(y * 4 == np.round(y * 4)):
            raise ValueError("not a report of this mechanism")
        a, k, s = self.alpha, np.round(y * 4), v * 4
        lo, up = math.floor(s), s - math.floor(s)
        pmf = lambda level: (1 - a) / (1 + a) * a ** np.abs(k - level)  # noqa: E731
        return (1 - up) * pmf(lo) + (up * pmf(lo + 1) if up > 0 else 0.0)


@pytest.fixture(autouse=True)
def plugins():
    module = types.ModuleType(MODULE)
    for cls in (
        AntitheticPairs,
        BandTableBug,
        GaussianAsPureDensity,
        LaplaceDensity,
        SmallEpsBranch,
        ShuffledBatch,
        CoarseGeometricDensity,
    ):
        setattr(module, cls.__name__, cls)
    sys.modules[MODULE] = module
    yield
    del sys.modules[MODULE]


def test_antithetic_noise_across_a_batch_is_a_violation():
    result = run_audit(f"{MODULE}:AntitheticPairs", 1.0, gamma=GAMMA, seed=0)
    assert result.verdict == "violation" and result.eps_lb > 2.0, result
    assert result.witness == "sum of the reports"


def test_a_leak_between_the_grid_points_is_a_violation():
    result = run_audit(f"{MODULE}:BandTableBug", 1.0, gamma=GAMMA, seed=0)
    assert result.verdict == "violation" and result.eps_lb > 1.5, result
    assert set(result.canary_pair) & set(battery.OFF_GRID), result.canary_pair
    assert result.inputs_searched == len(battery.PLUGIN_GRID) == 33


def test_the_off_grid_inputs_are_off_the_twentieths_and_hundredths():
    assert len(battery.OFF_GRID) == 8 and all(0 < x < 1 for x in battery.OFF_GRID)
    assert all(abs(x * 100 - round(x * 100)) > 1e-3 for x in battery.OFF_GRID)
    assert battery.PLUGIN_GRID[: len(battery.UNIT_GRID)] == battery.UNIT_GRID


def test_a_gaussian_claimed_pure_is_contradicted_by_its_own_density():
    result = run_audit(f"{MODULE}:GaussianAsPureDensity", 1.0, gamma=GAMMA, seed=0)
    assert result.verdict == "inconclusive"  # no sample reaches the tails where it leaks
    check = result.stated_density
    assert check["exceeds_claim"] and check["max_log_ratio"] > 1.5, check
    out = CliRunner().invoke(app, ["audit", f"{MODULE}:GaussianAsPureDensity", "--quiet"])
    assert out.exit_code == 1, out.output
    assert "its own density gives" in out.output and "not eps-LDP" in out.output


@pytest.mark.parametrize("eps", [0.5, 1.0, 20.0])
def test_a_tight_stated_density_is_not_flagged(eps):
    mech = LaplaceDensity(eps)  # log-ratio exactly 1/scale < eps everywhere; underflow at 20
    check = stated_density_check(mech, "LaplaceDensity", eps, battery.PLUGIN_GRID, seed=0)
    assert not check["exceeds_claim"] and check["max_log_ratio"] <= eps, check


def test_a_discrete_density_refusing_far_probes_is_not_flagged():
    check = stated_density_check(
        CoarseGeometricDensity(1.0), "Coarse", 1.0, battery.PLUGIN_GRID, seed=0
    )
    assert check is not None and not check["exceeds_claim"], check
    assert abs(check["max_log_ratio"] - 1.0) < 1e-9  # tight: levels 0 vs 4 give e^eps


def test_a_small_eps_branch_is_caught_by_a_list_of_budgets():
    out = CliRunner().invoke(app, ["audit", f"{MODULE}:SmallEpsBranch", "--eps", "0.4,1"])
    assert out.exit_code == 1, out.output
    rows = json.loads(out.stdout)
    assert [r["eps_claimed"] for r in rows] == [0.4, 1.0]
    assert all(r["gamma"] == pytest.approx(0.025) for r in rows)  # gamma family-wise
    assert rows[0]["verdict"] == "violation" and rows[1]["verdict"] == "inconclusive"


def test_a_battery_entry_still_takes_one_budget():
    out = CliRunner().invoke(app, ["audit", "laplace", "--eps", "1,2"])
    assert out.exit_code == 2 and "one budget per mechanism" in out.output


@pytest.mark.parametrize("name", ["ShuffledBatch", "CoarseGeometricDensity", "LaplaceDensity"])
def test_honest_plugins_stay_inconclusive(name):
    result = run_audit(f"{MODULE}:{name}", 1.0, gamma=GAMMA, seed=0)
    assert result.verdict == "inconclusive" and result.eps_lb <= 1.0, result
    if result.stated_density is not None:
        assert not result.stated_density["exceeds_claim"], result.stated_density
