"""GC-DP-Cache: reuse the calibrated parameters while a drift monitor accepts the graph —
seed 000, Section 5 (runtime discussion with Table 12 and Figure 7).

Theory of operation. Calibration (Algorithms 1-3) dominates the cost of a release; the
release itself (Algorithm 4) is linear in d. GC-DP-Cache keeps the calibrated parameters
theta and reuses them for later releases "only while a predeclared drift monitor accepts
the graph": a correlation *summary* of the current data is compared with the summary taken
at calibration time, and theta is recalibrated when their distance exceeds a fixed
threshold; a periodic refresh (every ``refresh_every`` releases) is the fallback.

Privacy. Staleness does not invalidate DP while the adjacency and the certified bounds stay
fixed: a stale theta can only cost utility (Theorem 1 holds for ANY theta that passes the
refusal layer). Two things do cost budget, and both are the caller's to account:

* every refresh computed from protected records is a new calibration, composed with the
  previous ones — ``refresh`` is called through the ``on_refresh`` hook FIRST (e.g. a
  ledger charge of eps_cal, or ``PrivateCalibration.release``), and if it raises
  (``BudgetExhausted``) the cache keeps its current theta and the error propagates;
* the summary the monitor reads must itself be public or a DP release (its budget charged
  by whoever computes it): the monitor never looks at the data.

Distance. ``summary_distance`` is the largest absolute difference between the two summary
vectors (for the lag-aware score vector S in [0, 1]^P: the largest change of any pair's
score), so the threshold is in score units and does not depend on M.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import numpy as np
from ldpfleet.protocol.errors import ParameterError

__all__ = ["CacheDecision", "CachedCalibration", "DriftMonitor", "summary_distance"]

Theta = TypeVar("Theta")


def summary_distance(reference: object, current: object) -> float:
    """``max_j |reference_j - current_j|`` of two finite summary vectors of one length."""
    a = np.asarray(reference, dtype=float).reshape(-1)
    b = np.asarray(current, dtype=float).reshape(-1)
    if a.shape != b.shape:
        raise ParameterError(
            f"must have the reference's {a.size} entries, got {b.size}",
            field="summary",
            limit=f"the reference's {a.size} entries (value: the count)",
            value=b.size,
        )
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        raise ParameterError(
            "must be finite",
            field="summary",
            limit="finite (value: the first non-finite one)",
            value=float(np.concatenate((a, b))[~np.isfinite(np.concatenate((a, b)))][0]),
        )
    return float(np.max(np.abs(a - b))) if a.size else 0.0


@dataclass(frozen=True)
class DriftMonitor:
    """The predeclared rule: refresh when the summary moved by more than ``threshold`` or
    after ``refresh_every`` releases with the same theta (``None``: no periodic refresh)."""

    threshold: float
    refresh_every: int | None = None

    def __post_init__(self) -> None:
        if (
            isinstance(self.threshold, bool)
            or not isinstance(self.threshold, int | float)
            or not np.isfinite(self.threshold)
            or self.threshold < 0
        ):
            raise ParameterError(
                f"must be a finite number >= 0, got {self.threshold!r}",
                field="threshold",
                limit="a finite number >= 0",
                value=self.threshold,
            )
        if self.refresh_every is not None and (
            isinstance(self.refresh_every, bool)
            or not isinstance(self.refresh_every, int)
            or self.refresh_every < 1
        ):
            raise ParameterError(
                f"must be an integer >= 1 or None, got {self.refresh_every!r}",
                field="refresh_every",
                limit="an integer >= 1 or None",
                value=self.refresh_every,
            )

    def accepts(self, distance: float, releases_since_refresh: int) -> bool:
        """True while theta may be reused."""
        if distance > self.threshold:
            return False
        return self.refresh_every is None or releases_since_refresh < self.refresh_every


@dataclass(frozen=True)
class CacheDecision(Generic[Theta]):
    """What ``CachedCalibration.theta_for`` decided for one release."""

    theta: Theta
    refreshed: bool
    distance: float
    reason: str  # "first", "drift", "periodic" or "reuse"


class CachedCalibration(Generic[Theta]):
    """GC-DP-Cache (module docstring): ``theta_for(summary)`` returns the cached theta or
    recalibrates with ``calibrate()`` when the monitor refuses the graph."""

    def __init__(
        self,
        calibrate: Callable[[], Theta],
        monitor: DriftMonitor,
        *,
        on_refresh: Callable[[], None] | None = None,
    ) -> None:
        if not callable(calibrate):
            raise ParameterError(
                "must be callable", field="calibrate", limit="callable", value=calibrate
            )
        if not isinstance(monitor, DriftMonitor):
            raise ParameterError(
                "must be a DriftMonitor", field="monitor", limit="a DriftMonitor", value=monitor
            )
        self._calibrate = calibrate
        self.monitor = monitor
        self._on_refresh = on_refresh
        self._theta: Theta | None = None
        self._reference: np.ndarray | None = None
        self.releases_since_refresh = 0
        self.refreshes = 0

    def theta_for(self, summary: object) -> CacheDecision[Theta]:
        """The theta to use for the next release, given the current (public or DP)
        correlation summary."""
        current = np.asarray(summary, dtype=float).reshape(-1).copy()
        if self._theta is None or self._reference is None:
            return self._refresh(current, 0.0, "first")
        distance = summary_distance(self._reference, current)
        if self.monitor.accepts(distance, self.releases_since_refresh):
            self.releases_since_refresh += 1
            return CacheDecision(self._theta, False, distance, "reuse")
        reason = "drift" if distance > self.monitor.threshold else "periodic"
        return self._refresh(current, distance, reason)

    def _refresh(self, summary: np.ndarray, distance: float, reason: str) -> CacheDecision[Theta]:
        if not np.all(np.isfinite(summary)):
            raise ParameterError(
                "must be finite",
                field="summary",
                limit="finite (value: the first non-finite one)",
                value=float(np.asarray(summary)[~np.isfinite(summary)][0]),
            )
        if self._on_refresh is not None:
            self._on_refresh()  # e.g. charge eps_cal; raising keeps the cached theta
        theta = self._calibrate()
        self._theta, self._reference = theta, summary
        self.releases_since_refresh = 1
        self.refreshes += 1
        return CacheDecision(theta, True, distance, reason)
