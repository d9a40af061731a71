"""Broken user mechanisms, one defect each, for the bad-plugin tests ONLY.

Each is named in a scenario or an audit as ``tests.unit.bad_mechanisms:Name``; loading must
fail with one sentence naming ``stream.mechanism`` and what is wrong."""

from __future__ import annotations

import sys

import numpy as np
from ldpfleet.protocol.mechanism_contract import LOAD_BATCH_SIZES  # what loading runs


class _Base:
    """A correct mechanism (Laplace, unclipped) that the broken ones change in one place."""

    def __init__(self, eps: float) -> None:
        self.eps = float(eps)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return x + rng.laplace(0.0, 1.0 / self.eps, size=x.shape)

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, dtype=float))

    def estimate_mean(self, y):
        return float(np.mean(y))


def not_a_class(eps):
    """A function, not a class."""
    return _Base(eps)


class MissingMethod:
    """No estimate_mean."""

    def __init__(self, eps: float) -> None:
        self.eps = eps

    def perturb(self, x, rng):
        return np.asarray(x, dtype=float)

    def in_domain(self, y):
        return np.ones(np.shape(y), dtype=bool)


class RefusesSmallEps(_Base):
    """Refuses any eps below 1 (a scenario with eps / w = 0.4 fails)."""

    def __init__(self, eps: float) -> None:
        if eps < 1.0:
            raise ValueError(f"eps must be at least 1, got {eps}")
        super().__init__(eps)


class WrongShape(_Base):
    """Drops the last report."""

    def perturb(self, x, rng):
        return super().perturb(x, rng)[:-1]


class NonFinite(_Base):
    """Reports NaN for input 0."""

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        return np.where(np.asarray(x) == 0.0, np.nan, y)


class RejectsOwnOutputs(_Base):
    """Accepts only reports in [0, 1], which Laplace noise leaves."""

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y >= 0.0) & (y <= 1.0)


class DoubleEps:
    """The example ClippedLaplace built with 2 eps inside: a planted privacy bug."""

    def __init__(self, eps: float) -> None:
        from clipped_laplace import ClippedLaplace

        self._inner = ClippedLaplace(2.0 * eps)
        self.eps = eps
        # the collector's domain at the claimed eps (wider than the inner one's)
        self._claimed = ClippedLaplace(eps)

    def perturb(self, x, rng):
        return self._inner.perturb(x, rng)

    def in_domain(self, y):
        return self._claimed.in_domain(y)

    def estimate_mean(self, y):
        return self._inner.estimate_mean(y)


class NonFiniteLater(_Base):
    """Passes the load-time probe (256 inputs), then reports NaN on a device's stream."""

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        return y if np.size(x) in LOAD_BATCH_SIZES else np.full(np.shape(x), np.nan)


class RaisesLater(_Base):
    """Passes the load-time probe (256 inputs), then raises on a device's stream."""

    def perturb(self, x, rng):
        if np.size(x) not in LOAD_BATCH_SIZES:
            raise RuntimeError("sensor library not initialised")
        return super().perturb(x, rng)


class InDomainScalar(_Base):
    """``in_domain`` returns one bool for the whole array instead of one per report."""

    def in_domain(self, y):
        return True


class MeanFailsLater(_Base):
    """``estimate_mean`` passes the probe (256 reports), then raises on a device's stream."""

    def estimate_mean(self, y):
        if np.size(y) != 256:
            raise ValueError("estimate_mean broke on the collector")
        return super().estimate_mean(y)


class MeanInfiniteLater(_Base):
    """``estimate_mean`` passes the probe (256 reports), then answers infinity."""

    def estimate_mean(self, y):
        return super().estimate_mean(y) if np.size(y) == 256 else float("inf")


class ExitsInPerturb(_Base):
    """Calls ``sys.exit(0)`` in ``perturb``: ``ldpfleet audit`` ended with exit 0 (read as
    "no violation found") and no output."""

    def perturb(self, x, rng):
        raise SystemExit(0)


class GlobalRandom(_Base):
    """Draws its noise from numpy's global RNG instead of the ``rng`` it is given."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return x + np.random.laplace(0.0, 1.0 / self.eps, size=x.shape)


_OWN = np.random.default_rng(7)


class OwnGenerator(_Base):
    """A fixed-seed generator of its own: every call continues where the last one ended."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        return x + _OWN.laplace(0.0, 1.0 / self.eps, size=x.shape)


class ReturnsList(_Base):
    """``perturb`` returns a Python list instead of an ndarray (was converted silently)."""

    def perturb(self, x, rng):
        return super().perturb(x, rng).tolist()


class ReturnsListLater(_Base):
    """Passes the load-time probe (256 inputs), then returns a list on a device's stream."""

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        return y if np.size(x) in LOAD_BATCH_SIZES else y.tolist()


class ReturnsComplex(_Base):
    """``perturb`` returns complex reports (their imaginary part was dropped silently)."""

    def perturb(self, x, rng):
        return super().perturb(x, rng) + 0j


class ReturnsInts(_Base):
    """Randomized response on x > 0.5 reporting 0/1 as int64: allowed (int dtype)."""

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        keep = rng.random(x.shape) < np.exp(self.eps) / (np.exp(self.eps) + 1.0)
        return np.where(keep, x > 0.5, x <= 0.5).astype(np.int64)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y == 0.0) | (y == 1.0)


class _MeanReturns(_Base):
    """``estimate_mean`` returns ``self.value(mean)`` instead of a float."""

    def estimate_mean(self, y):
        return self.value(float(np.mean(y)))


class MeanString(_MeanReturns):
    value = staticmethod(lambda m: str(m))


class MeanOneElementArray(_MeanReturns):
    value = staticmethod(lambda m: np.array([m]))  # a 0-d array is one number: accepted


class MeanOneElementList(_MeanReturns):
    value = staticmethod(lambda m: [m])


class MeanBool(_MeanReturns):
    value = staticmethod(lambda m: m > 0.5)


class MeanNumpyScalar(_MeanReturns):
    """A numpy float32 scalar: allowed (a real number)."""

    value = staticmethod(lambda m: np.float32(m))


class OutOfDomainLater(_Base):
    """Passes the load-time probe (256 inputs), then sends reports its own ``in_domain``
    rejects (above 1e3): a collector refuses them, so no bench or audit may score them."""

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        return y if np.size(x) in LOAD_BATCH_SIZES else y + 1e4

    def in_domain(self, y):
        return np.abs(np.asarray(y, dtype=float)) < 1e3


class OneDimensional(_Base):
    """Written for the 1-D arrays a device passes (``len(x)``, not ``x.shape``)."""

    def perturb(self, x, rng):
        return np.asarray(x, dtype=float) + rng.laplace(0.0, 1.0 / self.eps, size=len(x))


class NeedsTwoArgs(_Base):
    """``__init__`` takes a required argument besides eps (was "refused eps = ...")."""

    def __init__(self, eps: float, levels: int) -> None:
        super().__init__(eps)
        self.levels = levels


class NanOnBadEps(_Base):
    """Accepts any eps, so eps = 0 or NaN reaches its arithmetic (the budget must be
    checked before a plugin sees it)."""

    def estimate_mean(self, y):
        return float(np.mean(y)) * self.eps / self.eps


class InDomainInts(_Base):
    """``in_domain`` answers 0/1 ints: the collector's ``~mask`` made every report "outside
    the domain" and the run hung."""

    def in_domain(self, y):
        return super().in_domain(y).astype(np.int64)


class InDomainFloats(_Base):
    """``in_domain`` answers 0.0/1.0: the collector's ``~mask`` raised (a traceback)."""

    def in_domain(self, y):
        return super().in_domain(y).astype(float)


class InDomainList(_Base):
    """``in_domain`` answers a list of bools: the collector's ``~mask`` raised."""

    def in_domain(self, y):
        return [bool(v) for v in super().in_domain(y)]


class InDomainFailsLater(_Base):
    """``in_domain`` passes the probe (256 reports), then raises on the collector."""

    def in_domain(self, y):
        if np.size(y) not in LOAD_BATCH_SIZES:
            raise RuntimeError("in_domain broke on the collector")
        return super().in_domain(y)


class Prints(_Base):
    """Prints while it builds and perturbs (a debugging user): the JSON that ``ldpfleet
    audit`` and ``bench mechanisms`` print on stdout must stay parseable."""

    def __init__(self, eps: float) -> None:
        print(f"building Prints at eps = {eps}")
        super().__init__(eps)

    def perturb(self, x, rng):
        print("perturb called")
        return super().perturb(x, rng)


class ScalarVariance(_Base):
    """Unclipped Laplace stating its constant variance 2 / eps^2 as one number."""

    def variance(self, x):
        return 2.0 / self.eps**2


class VarianceWrongShape(_Base):
    def variance(self, x):
        return np.full(3, 2.0 / self.eps**2)


class DensityRaises(_Base):
    """States a ``density`` that raises: the audit ended with a traceback and exit 1."""

    def density(self, y, v):
        raise NotImplementedError("density not written yet")


class DensityScalar(_Base):
    """``density`` answers one number for all reports."""

    def density(self, y, v):
        return 0.5


STRICT_BOUND = 8.0  # |report| the collector's copy of ``StricterOnCollector`` accepts


def _called_by_the_collector() -> bool:
    """Whether the stream collector's report check is on the call stack."""
    frame = sys._getframe(2)
    for _ in range(8):
        if frame is None:
            return False
        code = frame.f_code
        if code.co_name == "_on_report" and code.co_filename.endswith("stream.py"):
            return True
        frame = frame.f_back
    return False


class StricterOnCollector(_Base):
    """A device/collector disagreement in one process: the devices run a version whose
    ``in_domain`` accepts every finite report, the collector a newer one that narrowed the
    domain to ``|y| < STRICT_BOUND`` (its copy is told apart by the call stack: the stream
    collector's ``_on_report``). Laplace reports at eps0 = 0.5 (scale 2) of inputs in [0, 1]
    leave that domain about once in fifty, so most batches pass and some are finally
    rejected."""

    def in_domain(self, y):
        inside = super().in_domain(y)
        if _called_by_the_collector():
            inside &= np.abs(np.asarray(y, dtype=float)) < STRICT_BOUND
        return inside


class StatesDoubleEps(_Base):
    """Built at eps, states ``self.eps = 2 eps``: labelled at a budget it was not built with."""

    def __init__(self, eps: float) -> None:
        super().__init__(eps)
        self.eps = 2.0 * float(eps)


class StatesEpsRounded(_Base):
    """States its eps up to a rounding far inside the relative tolerance 1e-6: accepted."""

    def __init__(self, eps: float) -> None:
        super().__init__(eps)
        self.eps = float(eps) * (1.0 + 1e-9)


class StatesEpsText(_Base):
    """States ``self.eps`` as text."""

    def __init__(self, eps: float) -> None:
        super().__init__(eps)
        self.eps = str(eps)


class NegativeDensity(_Base):
    """A density that goes negative for reports above 0.5 (a sign slip)."""

    def density(self, y, v):
        y = np.asarray(y, dtype=float)
        laplace = 0.5 * self.eps * np.exp(-self.eps * np.abs(y - v))
        return np.where(y > 0.5, -laplace, laplace)


class NanVariance(_Base):
    """A variance that is NaN for inputs above 0.5."""

    def variance(self, x):
        x = np.asarray(x, dtype=float)
        return np.where(x > 0.5, np.nan, 2.0 / self.eps**2)


class ReturnsInt64Scalar(_Base):
    """``perturb`` returns one numpy int64 instead of an array."""

    def perturb(self, x, rng):
        return np.int64(0)


class OutsideStatedRange(_Base):
    """States the report range [0, 1] (``output_low``/``output_high``) while its Laplace
    reports leave it; its ``in_domain`` accepts every finite report, so only the stated range
    could tell (before the fix the reports were accepted, aggregated and audited)."""

    output_low, output_high = 0.0, 1.0


class OutsideStatedRangeLater(_Base):
    """Passes the load-time probe (256 inputs, reports clipped to its stated [-30, 31]),
    then sends 1e4 on a device's stream, which its permissive ``in_domain`` accepts."""

    output_low, output_high = -30.0, 31.0

    def perturb(self, x, rng):
        y = np.clip(super().perturb(x, rng), self.output_low, self.output_high)
        return y if np.size(x) in LOAD_BATCH_SIZES else y + 1e4


class StatesRangeReversed(_Base):
    """States ``output_low`` above ``output_high``."""

    output_low, output_high = 1.0, 0.0


class StatesRangeText(_Base):
    """States ``output_high`` as text."""

    output_low, output_high = 0.0, "1"


class PermissiveStatedRange(_Base):
    """States the report range [-30, 31] with an ``in_domain`` that accepts any finite value
    (a collector must still refuse a report outside the stated range)."""

    output_low, output_high = -30.0, 31.0

    def perturb(self, x, rng):
        return np.clip(super().perturb(x, rng), self.output_low, self.output_high)


class ReturnsMasked(_Base):
    """Returns a ``numpy.ma.MaskedArray`` hiding NaN reports under its mask: ``np.isfinite``
    of a masked array skips the masked entries (a traceback before the fix, an IndexError of
    the reproducibility check)."""

    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        y[::7] = np.nan
        return np.ma.masked_invalid(y)


class AddsInPlace(_Base):
    """Adds its noise to the input array in place and returns it (``x += noise``): the
    load-time check named it "not a function of its inputs and rng", which sent its author
    hunting for a global RNG."""

    def perturb(self, x, rng):
        x += rng.laplace(0.0, 1.0 / self.eps, size=np.shape(x))
        return x
