"""Stream reconstruction at the collector: CPR and the seed-003 baselines, by name.

All methods work on one device's reports in [0, 1]-normalised units and return a
reconstruction of its clean stream in [0, 1] (the caller maps it back to physical units).
Post-processing only: no privacy cost.

- ``cpr`` (sw, sw01 reports): CPR (``collector.cpr``): period, per-phase EMS + KDE mode.
- ``sw`` (sw, sw01): the unbiased estimate of each report, clipped to [0, 1].
- ``sw_moving`` (sw, sw01): centred moving average (``SMOOTHING_WINDOW`` steps) of those.
- ``sw_filter`` (sw, sw01): zero-phase 4th-order Butterworth low-pass, cutoff
  ``FILTER_CUTOFF`` of Nyquist, on the estimates.
- ``laplace`` (laplace reports): centred moving average (``SMOOTHING_WINDOW``).
- ``lbd`` (LDP-IDS budget division): interactive, so it is evaluated in ``ldpfleet bench
  cpr`` (``collector.baselines.lbd``), not on fleet reports.

``none`` keeps only the per-device mean estimate (the foundation stage's analytics).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ldpfleet.collector.baselines import laplace_smoothed, sw_filter, sw_moving, sw_raw
from ldpfleet.collector.cpr import CprConfig, cpr

RECONSTRUCTIONS = ("none", "cpr", "sw", "sw_moving", "sw_filter", "laplace")
SW_METHODS = ("cpr", "sw", "sw_moving", "sw_filter")
SMOOTHING_WINDOW = 9
FILTER_CUTOFF = 0.1


@dataclass(frozen=True)
class Reconstruction:
    """A reconstructed stream in [0, 1], with the period CPR found (None otherwise)."""

    values: np.ndarray
    period: int | None = None
    confidence: float | None = None
    template: np.ndarray | None = None


def compatible(method: str, mechanism: str) -> bool:
    """Whether ``method`` can reconstruct reports of device mechanism ``mechanism``."""
    if method in SW_METHODS:
        return mechanism in ("sw", "sw01")
    if method == "laplace":
        return mechanism == "laplace"
    return method == "none"


def reconstruct(
    method: str, reports: np.ndarray, mechanism, config: CprConfig | None = None
) -> Reconstruction:
    """Reconstruct one stream from its reports with ``method``."""
    if method == "cpr":
        result = cpr(reports, mechanism, config or CprConfig())
        return Reconstruction(
            result.reconstruction, result.period, result.confidence, result.template
        )
    if method == "sw":
        return Reconstruction(sw_raw(reports, mechanism))
    if method == "sw_moving":
        return Reconstruction(sw_moving(reports, mechanism, SMOOTHING_WINDOW))
    if method == "sw_filter":
        return Reconstruction(sw_filter(reports, mechanism, cutoff=FILTER_CUTOFF))
    if method == "laplace":
        return Reconstruction(laplace_smoothed(np.asarray(reports, dtype=float), SMOOTHING_WINDOW))
    raise ValueError(f"reconstruct: {method!r} is not one of {RECONSTRUCTIONS[1:]}")
