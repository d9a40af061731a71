"""Warner randomized response for one private bit — theory of operation.

Warner ("Randomized Response: A Survey Technique for Eliminating Evasive Answer Bias",
JASA 60(309), 1965) lets a respondent answer a yes/no question truthfully with probability
``p`` and lie with probability ``1 - p``. With

    p = e^eps / (e^eps + 1),   1 - p = 1 / (e^eps + 1),

the two answer laws satisfy ``P(a | t) / P(a | not t) in {e^eps, e^-eps}`` for every answer
``a``, so the mechanism is pure ``eps``-LDP in the sense of Dwork et al. ("Calibrating Noise
to Sensitivity in Private Data Analysis", TCC 2006): the output distributions of any two
inputs differ by at most the factor ``e^eps``. It is the optimal binary randomizer.

In CADR-LDP (``/work/shared/reference/cadr-ldp.md``, Zhang et al., arXiv 2507.10627) this is
LPEA-LOW's answer channel (Alg. 5): neighbour ``j`` answers "yes" to an edge-add request iff
its kept degree is below ``theta``, through Warner RR with ``eps' = alpha * eps / 2``. The
requesting device asked ``|U1|`` neighbours and received ``|U2|`` noisy yeses; with ``c`` true
yeses, ``E[|U2|] = c p + (|U1| - c)(1 - p)``, which inverts to the unbiased count

    c' = (|U2| (e^eps + 1) - |U1|) / (e^eps - 1),   E[c'] = c.

Each answer is Bernoulli with variance ``p (1 - p) = e^eps / (e^eps + 1)^2`` whatever the
truth, so ``Var[c'] = |U1| e^eps / (e^eps - 1)^2`` EXACTLY (not only a bound) for every true
count; ``variance_bound`` returns it (the ``V_i`` of the spec's Thm 3.5).

Numerics: ``p`` is computed as ``1 / (1 + e^-eps)`` and ``e^eps - 1`` with ``expm1``, so
small ``eps`` loses no precision; ``eps`` is capped at ``EPS_MAX = 50`` as for every other
mechanism of the package (beyond it ``1 - p < 2e-22``: no privacy left to speak of).
Sampling is exact (``samplers.rr_lie``): the "lie" coin is ``Bernoulli(1 / (1 + e^eps))``
for the exact rational of the float ``eps``, by rejection on the injected
``numpy.random.Generator``'s bounded integers (propose "truth" with probability 1/2, else
"lie" accepted with an exact ``Bernoulli(exp(-eps))``), so the answer ratio is ``e^eps``
exactly at every ``eps <= 50`` (the former ``rng.random() >= p`` lost ``1 - p`` entirely
above ``eps ~ 36.8``: ``p`` rounded to 1.0 and the answer was always the truth). ``p`` is
kept for the estimators. The module is pure (no global RNG, no I/O).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanism_contract import EPS_MIN, below_eps_min
from ldpfleet.protocol.samplers import VECTOR_MIN, rr_lie, rr_lie_drawn, rr_lie_parts
from ldpfleet.protocol.sw import EPS_MAX
from ldpfleet.protocol.validate import integer_counts, positive_real

__all__ = ["WarnerRR"]


def _as_bits(value: object, name: str) -> np.ndarray:
    """``value`` as a bool array: bools, or integers that are all 0 or 1."""
    arr = np.asarray(value)
    if arr.dtype == np.bool_:
        return arr
    if np.issubdtype(arr.dtype, np.integer) and np.all((arr == 0) | (arr == 1)):
        return arr.astype(bool)
    raise ParameterError(
        f"must be a bool or an array of bools / 0-1 integers, got {value!r}",
        field=name,
        limit="a bool or an array of bools / 0-1 integers",
        value=value,
    )


def _as_counts(value: object, name: str) -> np.ndarray:
    """``value`` as an int64 array of non-negative integer counts (bools refused)."""
    return integer_counts(value, name).astype(np.int64)


def _scalar_or_array(arr: np.ndarray) -> float | np.ndarray:
    return float(arr) if arr.ndim == 0 else arr


@dataclass(frozen=True)
class WarnerRR:
    """Warner randomized response with budget ``eps`` per answered bit (module docstring)."""

    eps: float
    p: float = field(init=False, repr=False, compare=False)
    coin_eps: Fraction = field(init=False, repr=False, compare=False)  # the sampler's eps
    # coin_eps prepared once for the one-bit coin (samplers.rr_lie_parts)
    coin_parts: tuple[int, int, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        eps = positive_real(self.eps, "eps")
        if eps > EPS_MAX:
            raise ParameterError(
                f"must be <= {EPS_MAX:g}, got {self.eps!r}",
                field="eps",
                limit=f"<= {EPS_MAX:g}",
                value=self.eps,
            )
        if eps < EPS_MIN:  # the variance bound ~1/eps^2 overflows below ~1e-154
            raise ParameterError(
                below_eps_min(self.eps), field="eps", limit=f">= {EPS_MIN:g}", value=self.eps
            )
        object.__setattr__(self, "eps", eps)
        object.__setattr__(self, "p", 1.0 / (1.0 + math.exp(-eps)))
        object.__setattr__(self, "coin_eps", Fraction(eps))
        object.__setattr__(self, "coin_parts", rr_lie_parts(self.coin_eps))

    def probability(self, answer: bool, truth: bool) -> float:
        """``P(answer | truth)``: ``p`` if they agree, ``1 - p`` otherwise."""
        a = bool(_as_bits(answer, "answer"))
        t = bool(_as_bits(truth, "truth"))
        # 1 - p computed directly (no cancellation for large eps)
        return self.p if a == t else 1.0 / (1.0 + math.exp(self.eps))

    def respond(self, bit: bool | np.ndarray, rng: np.random.Generator) -> bool | np.ndarray:
        """Answer ``bit`` truthfully with probability ``p``, exactly: the lie coins are
        ``samplers.rr_lie(rng, coin_eps, n)`` (module docstring), or for a ``bool`` and
        arrays of fewer than ``VECTOR_MIN`` bits one coin per bit on the bit pool
        (``samplers.rr_lie_drawn`` with ``coin_parts``: ``rr_lie_one``'s draws, ``eps``
        prepared once; the same law; an array of n < 64 bits draws as n ``bool`` calls
        do). Returns a bool for scalar input, a bool array of the same shape otherwise."""
        if type(bit) is bool:  # the machines' one bit: the pure-Python coin (same law)
            return bit != rr_lie_drawn(rng, self.coin_parts)
        bits = _as_bits(bit, "bit")
        if bits.size < VECTOR_MIN:  # one bool's coin per bit: the same draws as bool calls
            parts = self.coin_parts
            lie = np.array([rr_lie_drawn(rng, parts) for _ in range(bits.size)], dtype=bool)
        else:
            lie = rr_lie(rng, self.coin_eps, bits.size)
        lie = lie.reshape(bits.shape)
        out = np.logical_xor(bits, lie)
        return bool(out) if out.ndim == 0 else out

    def debias_count(self, yes: int | np.ndarray, asked: int | np.ndarray) -> float | np.ndarray:
        """Unbiased estimate ``c' = (yes (e^eps + 1) - asked) / (e^eps - 1)`` of the number of
        true yeses among ``asked`` answers of which ``yes`` came back "yes".

        Needs integers ``0 <= yes <= asked`` (elementwise for arrays). ``c'`` may fall outside
        ``[0, asked]``; do not clip before averaging (clipping biases it). A float for scalar
        inputs, an array (broadcast) otherwise."""
        em1 = math.expm1(self.eps)
        if type(yes) is int and type(asked) is int and 0 <= yes <= asked:
            return (yes * (em1 + 2.0) - asked) / em1  # the machines' scalar: same float
        y = _as_counts(yes, "yes")
        n = _as_counts(asked, "asked")
        if np.any(y > n):
            raise ParameterError(
                f"must be <= asked ({asked!r}), got {yes!r}",
                field="yes",
                limit="<= asked (every entry)",
                value=yes,
            )
        return _scalar_or_array((y * (em1 + 2.0) - n) / em1)

    def variance_bound(self, asked: int | np.ndarray) -> float | np.ndarray:
        """``Var[c'] = asked e^eps / (e^eps - 1)^2`` — exact for every true count."""
        n = _as_counts(asked, "asked")
        em1 = math.expm1(self.eps)
        return _scalar_or_array(n * (em1 + 1.0) / (em1 * em1))
