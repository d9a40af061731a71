"""``ldpfleet bench mechanisms``: mean-estimation MSE of the per-report stream mechanisms.

For every mechanism (``sw``, ``sw01``, ``laplace``, ``duchi``, ``piecewise``, ``hybrid``;
any ``package.module:Class`` too), budget eps per report, input distribution and
population size n: a fixed population x_1..x_n in [0, 1] is drawn once (seeded), each of
``trials`` repetitions privatises every x_i once, and the MSE of ``estimate_mean`` against
the true mean is measured; a t-test of the mean error flags a biased ``estimate_mean``
(``bias_test``: JSON ``mean_error``, ``bias_z``, ``biased``; one warning line on stderr per
flagged row; false-flag rate 1e-6 per row). Beside it, the analytic MSE where the
mechanism states its per-report variance (``variance(x)``): ``sum_i Var(x_i) / n^2`` plus
the squared bias of ``sw01``, whose estimate is ``clip(x, b, 1 - b)`` in expectation
(``protocol.sw``). The empirical MSE has relative standard error about
``sqrt(2 / trials)``.

Distributions: ``uniform`` U(0, 1); ``skewed`` Beta(0.5, 3); ``constant`` all 0.9;
``bimodal`` half Beta(20, 80), half Beta(80, 20); ``occupancy-light`` the UCI Occupancy
"Light" column (data/uci-occupancy/datatraining.txt), a random sample of n readings
normalised by the public bounds [0, 800] lux of scenarios/occupancy-cpr.toml (clipped).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from ldpfleet.app.bench_commands import (
    MECHANISM_DISTRIBUTIONS,
    MECHANISMS,
    bench_mechanisms_command,
)

__all__ = [
    "DISTRIBUTIONS",
    "bench_mechanisms",
    "bench_mechanisms_command",
    "bias_test",
    "bias_warnings",
    "estimate_errors",
    "markdown",
]

EPSILONS = (0.5, 1.0, 2.0, 4.0)
SIZES = (100, 1000, 10000)
OCCUPANCY = ("uci-occupancy/datatraining.txt", "Light", (0.0, 800.0))


def _occupancy(rng: np.random.Generator, n: int) -> np.ndarray:
    import ldpfleet.data
    from ldpfleet.devices.sources import load_table

    relative, column, (lo, hi) = OCCUPANCY
    names, matrix = load_table(str(Path(ldpfleet.data.__file__).parent / relative))
    values = matrix[:, names.index(column)]
    return (np.clip(rng.choice(values, size=n, replace=True), lo, hi) - lo) / (hi - lo)


def _bimodal(rng: np.random.Generator, n: int) -> np.ndarray:
    low = rng.beta(20.0, 80.0, n - n // 2)
    return np.concatenate([low, rng.beta(80.0, 20.0, n // 2)])


# The command line, MECHANISMS and the names of the distributions are in
# app/bench_commands.py (its --help imports nothing heavy); name -> sampler(rng, n):
DISTRIBUTIONS = dict(zip(MECHANISM_DISTRIBUTIONS, (
    lambda rng, n: rng.random(n),  # uniform
    lambda rng, n: rng.beta(0.5, 3.0, n),  # skewed
    lambda rng, n: np.full(n, 0.9),  # constant
    _bimodal,  # bimodal
    _occupancy,  # occupancy-light
), strict=True))  # fmt: skip


def analytic_mse(mechanism, x: np.ndarray, name: str = "mechanism") -> float | None:
    """``sum Var(x_i) / n^2`` (+ the squared bias of ``sw01``); None without ``variance``."""
    spread = analytic_variance(mechanism, x, name)
    if spread is None:
        return None
    bias = 0.0
    if getattr(mechanism, "variant", None) == "sw01":
        b = mechanism.b
        bias = float(np.mean(np.clip(x, b, 1.0 - b)) - np.mean(x))
    return float(spread + bias**2)


def analytic_variance(mechanism, x: np.ndarray, name: str = "mechanism") -> float | None:
    """The variance of one trial's ``estimate_mean`` over population x as the mechanism
    states it, ``sum Var(x_i) / n^2``; None without ``variance``."""
    variance = getattr(mechanism, "variance", None)
    if variance is None:
        return None
    return float(np.sum(_variances(variance, x, name)) / x.size**2)


def _variances(variance: Callable, x: np.ndarray, name: str) -> np.ndarray:
    """``variance(x)``, one finite value >= 0 per input; a scalar stands for every input (a
    constant-variance mechanism's natural answer: summed as one value, it made the analytic
    MSE n times too small). Another shape or a bad value: one sentence."""
    from ldpfleet.protocol.mechanism_contract import nonnegative_values

    call = lambda: variance(x)  # noqa: E731
    return nonnegative_values(
        call, x.shape, name, "variance", "input", one_for_all=True, where=("x", x)
    )


def measure(
    mechanism, x: np.ndarray, trials: int, rng: np.random.Generator, name: str = "mechanism"
) -> float:
    """Empirical MSE of ``estimate_mean`` over ``trials`` privatisations of population x
    (``estimate_errors`` squared and averaged)."""
    return float(np.mean(estimate_errors(mechanism, x, trials, rng, name) ** 2))


def estimate_errors(
    mechanism, x: np.ndarray, trials: int, rng: np.random.Generator, name: str = "mechanism"
) -> np.ndarray:
    """``estimate_mean - mean(x)`` for each of ``trials`` privatisations of population x.

    Each batch of privatisations is ONE ``perturb`` call on a 1-D array (the populations
    one after another, as a device's stream is 1-D) through the contract's check
    (``contract_reports``: shape, finite real numbers, ``in_domain`` accepting every
    report) and each estimate through ``checked_mean``: the bench measures only reports a
    collector would accept, and a plugin failing either gives one sentence
    (``ParameterError``) naming it."""
    from ldpfleet.protocol.mechanism_contract import checked_mean, contract_reports

    truth = float(np.mean(x))
    errors = np.empty(trials)
    batch = max(1, 2_000_000 // x.size)  # rows per perturb call: bounded memory
    for start in range(0, trials, batch):
        rows = min(batch, trials - start)
        reports = contract_reports(mechanism, np.tile(x, rows), rng, name).reshape(rows, x.size)
        for i in range(rows):
            errors[start + i] = checked_mean(mechanism, reports[i], name) - truth
    return errors


BIAS_FALSE_FLAG_RATE = 1e-6  # per row, for an unbiased estimate_mean


TIE_TOLERANCE = 1e-12  # errors within this (times 1 + their largest size) are one value


def bias_test(errors: np.ndarray, variance: float | None = None) -> dict:
    """Is ``estimate_mean`` biased? A two-sided t-test of the mean error against 0: the
    errors of one row are independent (fresh noise per trial on a fixed population), and
    each is an average of n independent reports, so their mean is close to normal and t
    with trials - 1 degrees of freedom holds. The threshold is the t quantile for a
    two-sided false-flag rate of ``BIAS_FALSE_FLAG_RATE`` = 1e-6 per row (5.05 at 200
    trials, 4.92 at 1,000; 4.89 for many).

    The standard error is ``sd / sqrt(trials)`` with sd the larger of the errors' sample
    standard deviation and, when the mechanism states its per-report ``variance(x)``,
    ``sqrt(variance)`` (the variance of one trial's estimate, ``sum Var(x_i) / n^2``). The
    sample sd alone under-reads a heavy tail that few trials do not reach: at eps = 20 a
    Square Wave report falls outside its window about once in a thousand reports, so 200
    trials of n = 1 mostly see none, their sd is the window's alone and their mean sits
    off 0 by the missing tail: sw, piecewise and hybrid rows were flagged in 49-55 of 60
    (helper U2, 2026-12-07). Errors that are all one value (a spread below
    ``TIE_TOLERANCE`` of their size: estimates equal up to rounding, which gave t =
    -4.2e12 for two duchi trials at n = 100) have sd 0; without a stated variance such a
    row is flagged when its mean error is not 0 (a deterministic estimate)."""
    from scipy.stats import t as student_t

    trials = errors.size
    mean_error = float(np.mean(errors))
    if trials < 2:
        return {"mean_error": mean_error, "bias_z": None, "biased": False}
    size = float(np.max(np.abs(errors)))
    tied = float(np.ptp(errors)) <= TIE_TOLERANCE * (1.0 + size)
    sd = 0.0 if tied else float(np.std(errors, ddof=1))
    if variance is not None:
        sd = max(sd, math.sqrt(variance))
    standard_error = sd / math.sqrt(trials)
    threshold = float(student_t.isf(BIAS_FALSE_FLAG_RATE / 2.0, trials - 1))
    if standard_error > 0.0:
        z = mean_error / standard_error
    else:
        z = 0.0 if mean_error == 0.0 else math.copysign(math.inf, mean_error)
    return {
        "mean_error": mean_error,
        "bias_z": z if math.isfinite(z) else str(z),
        "biased": bool(abs(z) > threshold),
    }


def bias_warnings(result: dict) -> list[str]:
    """One line per row whose ``estimate_mean`` the bias test flags (for stderr)."""
    return [
        f"warning: {r['mechanism']} at eps {r['eps']:g}, {r['distribution']}, n = {r['n']}: "
        f"estimate_mean looks biased (mean error {r['mean_error']:.3g}, t = {_t(r['bias_z'])}, "
        f"false-flag rate 1e-6 per row{'' if r['analytic_mse'] is not None else NO_VARIANCE})"
        for r in result["rows"]
        if r["biased"]
    ]


# a plugin without variance(x) is tested against its errors' sample sd alone, which a tail
# its trials did not reach leaves too small (an SW wrapper without variance, eps 20, n 1-10,
# 200 trials: 48 of 300 rows flagged, helper U2)
NO_VARIANCE = (
    " if its errors are near normal; it states no variance(x), so the test used their sample"
    " sd, which a rare large report the trials missed leaves too small: state variance(x),"
    " or raise --trials or --sizes"
)


def _t(z: float | str) -> str:
    return f"{z:.1f}" if isinstance(z, float) else z


def cell_generator(seed: int, d_index: int, n: int, m_index: int, eps: float):
    """The generator of one bench cell, keyed by eps's exact bits: ``int(eps * 1000)`` gave
    budgets within 0.001 of each other the same generator (identical uniforms)."""
    eps_key = int(np.float64(eps).view(np.uint64))
    return np.random.default_rng([seed, d_index, n, m_index, eps_key])


def bench_mechanisms(
    *,
    mechanisms: tuple[str, ...] = MECHANISMS,
    eps_list: tuple[float, ...] = EPSILONS,
    sizes: tuple[int, ...] = SIZES,
    distributions: tuple[str, ...] = tuple(DISTRIBUTIONS),
    trials: int = 200,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> dict:
    """Every (mechanism, eps, distribution, n) cell: empirical and analytic MSE.
    ``progress(done, total)`` is called after each cell."""
    from ldpfleet.protocol.mechanisms import stream_mechanism

    started = time.perf_counter()
    rows = []
    cells = len(distributions) * len(sizes) * len(mechanisms) * len(eps_list)
    for d_index, name in enumerate(distributions):
        for n in sizes:
            x = DISTRIBUTIONS[name](np.random.default_rng([seed, d_index, n]), n)
            for m_index, mech_name in enumerate(mechanisms):
                for eps in eps_list:
                    mech = stream_mechanism(mech_name, eps)
                    rng = cell_generator(seed, d_index, n, m_index, eps)
                    errors = estimate_errors(mech, x, trials, rng, mech_name)
                    rows.append({
                        "mechanism": mech_name, "eps": eps, "distribution": name, "n": n,
                        "true_mean": float(np.mean(x)),
                        "mse": float(np.mean(errors**2)),
                        "analytic_mse": analytic_mse(mech, x, mech_name),
                        **bias_test(errors, analytic_variance(mech, x, mech_name)),
                    })  # fmt: skip
                    if progress is not None:
                        progress(len(rows), cells)
    return {
        "bench": "mechanisms",
        "trials": trials,
        "seed": seed,
        "rows": rows,
        "seconds": round(time.perf_counter() - started, 2),
    }


def markdown(result: dict) -> str:
    """One table per population size: rows (distribution, eps), columns mechanisms, cells
    ``empirical (analytic)`` MSE."""
    rows = result["rows"]
    mechanisms = list(dict.fromkeys(r["mechanism"] for r in rows))
    cells = {(r["distribution"], r["eps"], r["n"], r["mechanism"]): r for r in rows}
    out = []
    for n in dict.fromkeys(r["n"] for r in rows):
        out += [f"n = {n} (MSE of the mean on [0, 1]; analytic in parentheses)", ""]
        out += ["| distribution | ε | " + " | ".join(mechanisms) + " |"]
        out += ["|---|---|" + "---|" * len(mechanisms)]
        for dist in dict.fromkeys(r["distribution"] for r in rows):
            for eps in dict.fromkeys(r["eps"] for r in rows):
                parts = [_cell(cells[(dist, eps, n, m)]) for m in mechanisms]
                out.append(f"| {dist} | {eps:g} | " + " | ".join(parts) + " |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def _cell(row: dict) -> str:
    analytic = row["analytic_mse"]
    return f"{row['mse']:.3g}" + ("" if analytic is None else f" ({analytic:.3g})")
