"""The ``raw`` stream mechanism: clipped, normalised readings sent in the clear.

Theory of operation. Every other stream mechanism (``protocol.mechanisms``) privatises a
reading on the device (local model). ``raw`` is the identity on a reading that the device
has already clipped to FIXED public bounds and mapped to [0, 1]: it is the CENTRAL model,
where the device trusts the collector and the collector performs the one private release
(GC-DP, ``collector.gcdp_stage``). A raw report therefore spends nothing: the device's
ledger holds a ``protocol.ledger.RawAccount`` (0 spent, charges refused), the report says
``mechanism = "raw"`` and ``eps0 = 0``, and the privacy loss is charged to the collector's
ledger before each release. A trace verifier can tell the two models apart from the
report alone.

The collector still validates what it receives: a raw value must be finite and inside
[0, 1] (``in_domain``), so an out-of-range or non-finite reading is refused (counted, a
``Reject`` published) and never aggregated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ldpfleet.protocol.errors import ParameterError

__all__ = ["RawMechanism"]


@dataclass(frozen=True)
class RawMechanism:
    """Identity on [0, 1]; spends no budget (``eps = 0``) and is NOT differentially private."""

    eps: float = 0.0
    variant: str = "raw"
    output_low: float = 0.0
    output_high: float = 1.0

    def __post_init__(self) -> None:
        if self.eps != 0.0:
            raise ParameterError(
                f"a raw stream spends no local budget: eps must be 0, got {self.eps!r}",
                field="eps",
                limit="0 (a raw stream spends no local budget)",
                value=self.eps,
            )

    def perturb(self, v: float | np.ndarray, rng: np.random.Generator) -> np.ndarray | float:
        """Return ``v`` unchanged (``rng`` is not used); ``v`` must lie in [0, 1]."""
        arr = np.asarray(v, dtype=float)
        if np.any(~((arr >= 0.0) & (arr <= 1.0))):
            raise ParameterError(
                "input must lie in [0, 1]",
                field="v",
                limit="in [0, 1] (every entry; value is the first entry outside)",
                value=float(arr.reshape(-1)[np.argmax(~((arr >= 0.0) & (arr <= 1.0)).reshape(-1))]),
            )
        out = arr.copy()
        return float(out) if out.ndim == 0 else out

    def estimate(self, y: np.ndarray) -> np.ndarray:
        """The report is the (clipped, normalised) reading itself."""
        return np.asarray(y, dtype=float)

    def estimate_mean(self, y: np.ndarray) -> float:
        """The mean of the readings themselves."""
        return float(np.mean(np.asarray(y, dtype=float)))

    def in_domain(self, y: np.ndarray) -> np.ndarray:
        """Finite and inside [0, 1]."""
        yy = np.asarray(y, dtype=float)
        return np.isfinite(yy) & (yy >= 0.0) & (yy <= 1.0)
