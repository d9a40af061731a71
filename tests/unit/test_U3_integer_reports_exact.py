"""Integer reports a float64 cannot hold exactly are refused, not rounded (helper U3,
2026-12-07).

The contract converts an integer ``perturb`` result to float64, what the wire carries. An
integer above 2^53 in magnitude may have no float64 of its own: a unary encoding of 60
levels packed as one int64 bitmask per report (a natural way to fit OUE into "one number
per reading") lost its low bits in that conversion, silently. Every check passed, the run
exited 0, and ``estimate_mean`` read other bits than the device sent: for inputs U(0, 1)
at eps 1 it estimated 0.35 for a true mean of 0.50 (200,000 reports). Now the load-time
check (and each device call, the bench and the audit: one check, ``checked_reports``)
refuses such a report with a sentence naming it, its value and the limit."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanism_contract import checked_reports

import ldpfleet

K = 60  # levels: bitmasks up to 2^60 - 1


class PackedOUE:
    """OUE on K levels of [0, 1], the bit vector packed as one int64 per report."""

    def __init__(self, eps):
        self.eps = float(eps)
        self.q = 1.0 / (math.exp(self.eps) + 1.0)

    def perturb(self, x, rng):
        level = np.rint(np.asarray(x, dtype=float) * (K - 1)).astype(np.int64)
        u = rng.random((*level.shape, K))
        onehot = level[..., None] == np.arange(K)
        bits = np.where(onehot, u < 0.5, u < self.q)
        return (bits.astype(np.int64) << np.arange(K)).sum(axis=-1)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y >= 0) & (y < 2.0**K) & (y == np.floor(y))

    def estimate_mean(self, y):
        y = np.asarray(y)
        y = y if y.dtype.kind in "iu" else y.astype(np.int64)
        c = ((y[:, None] >> np.arange(K)) & 1).mean(axis=0)
        return float(((c - self.q) / (0.5 - self.q)) @ (np.arange(K) / (K - 1)))


class SmallPackedOUE(PackedOUE):
    """The same reports masked to 52 bits: every one exact in float64."""

    def perturb(self, x, rng):
        return super().perturb(x, rng) & ((1 << 52) - 1)


def test_an_integer_report_float64_cannot_hold_is_refused():
    y = np.array([3, 2**60 + 1, 2**53 + 1], dtype=np.int64)
    with pytest.raises(ParameterError) as caught:
        checked_reports(np.zeros(3), y, "pkg.mod:PackedOUE")
    text = str(caught.value)
    assert caught.value.field == "mechanism"
    assert "report 1 is 1152921504606846977" in text and "2^53" in text
    assert "2 of 3" in text


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_integers_float64_holds_exactly_pass(dtype):
    y = np.array([0, 2**53, 2**60, 2**62, 12345], dtype=dtype)  # all exact in float64
    out = checked_reports(np.zeros(5), y, "pkg.mod:Ok")
    assert out.dtype == np.float64 and [int(v) for v in out] == [int(v) for v in y]


def test_negative_int64_extremes():
    y = np.array([-(2**63), -(2**53) - 1], dtype=np.int64)
    with pytest.raises(ParameterError, match=r"report 1 is -9007199254740993"):
        checked_reports(np.zeros(2), y, "pkg.mod:Neg")


def test_the_packed_plugin_is_refused_when_it_loads():
    with pytest.raises(ParameterError, match="float64"):
        ldpfleet.get_mechanism(PackedOUE, 1.0)
    ldpfleet.get_mechanism(SmallPackedOUE, 1.0)
