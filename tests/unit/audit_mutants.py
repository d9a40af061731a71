"""Deliberately broken variants of ldpfleet's mechanisms, for the audit tests ONLY.

Each mutant is a function ``apply(monkeypatch)`` that plants one bug in the real module the
audit battery calls (the battery imports at call time, so a patched module attribute is what
it runs). ``MUTANTS`` maps a name to (apply, battery entry, eps, trials per world).
"""

from __future__ import annotations

import math
from fractions import Fraction

# Import every patched submodule explicitly: `protocol.stream` is an attribute of the package
# only once something imported it, so a test run alone failed on the attribute lookup.
import ldpfleet.devices.fleet
import ldpfleet.protocol.dsr
import ldpfleet.protocol.duchi
import ldpfleet.protocol.exponential
import ldpfleet.protocol.hybrid
import ldpfleet.protocol.laplace
import ldpfleet.protocol.ledger
import ldpfleet.protocol.piecewise
import ldpfleet.protocol.rr
import ldpfleet.protocol.stream
import ldpfleet.protocol.sw  # noqa: F401
import numpy as np

from ldpfleet import devices, protocol


def laplace_scale_halved(mp) -> None:
    mp.setattr(protocol.laplace.LaplaceMechanism, "scale", property(lambda self: 0.5 / self.eps))


def dsr_scale_halved(mp) -> None:
    real = protocol.dsr.dsr_scale
    mp.setattr(protocol.dsr, "dsr_scale", lambda theta, eps: 0.5 * real(theta, eps))


def rr_p_for_double_eps(mp) -> None:
    real_post_init = protocol.rr.WarnerRR.__post_init__

    def broken(self) -> None:
        real_post_init(self)
        object.__setattr__(self, "p", 1.0 / (1.0 + math.exp(-2.0 * self.eps)))
        object.__setattr__(self, "coin_eps", Fraction(2.0 * self.eps))  # the exact coin's

    mp.setattr(protocol.rr.WarnerRR, "__post_init__", broken)


def sw_wrong_p(mp) -> None:
    """p = e^(2 eps) q: the in-window density is e^(2 eps) times the outside one."""
    real_post_init = protocol.sw.SquareWave.__post_init__

    def broken(self) -> None:
        real_post_init(self)
        e2 = math.exp(2.0 * self.eps)
        q = 1.0 / (2.0 * self.b * e2 + 1.0)
        object.__setattr__(self, "q", q)
        object.__setattr__(self, "p", e2 * q)
        object.__setattr__(self, "ratio", Fraction(e2))  # the exact sampler's p / q

    mp.setattr(protocol.sw.SquareWave, "__post_init__", broken)


def sw_wrong_b(mp) -> None:
    """The sampler's window half-width is b(eps / 2) > b(eps) while p, q and the output range
    are eps's: the wider window takes mass from the tails, so the report never reaches the
    top end of the output range for input 0 but does for input 1 (an unbounded ratio). (A
    NARROWER window with the same p/q stays eps-DP: only the ratio p/q matters.)"""
    real_post_init = protocol.sw.SquareWave.__post_init__

    def broken(self) -> None:
        real_post_init(self)
        object.__setattr__(self, "b", protocol.sw.sw_b(0.5 * self.eps))

    mp.setattr(protocol.sw.SquareWave, "__post_init__", broken)


def exponential_without_factor_2(mp) -> None:
    def broken(self, scores):
        s = protocol.exponential._check_scores(scores)
        w = (self.eps / self.sensitivity) * (s - s.max(axis=-1, keepdims=True))
        weights = np.exp(w)
        return weights / weights.sum(axis=-1, keepdims=True)

    mp.setattr(protocol.exponential.ExponentialMechanism, "probabilities", broken)
    real = protocol.exponential.ExponentialMechanism.__post_init__

    def broken_rate(self) -> None:  # the exact sampler reads rate, not probabilities
        real(self)
        object.__setattr__(self, "rate", 2 * self.rate)

    mp.setattr(protocol.exponential.ExponentialMechanism, "__post_init__", broken_rate)


def dsr_clipping_removed(mp) -> None:
    def broken(kept_degree, theta, eps, rng):
        kept = np.asarray(kept_degree, dtype=float)
        return kept + rng.laplace(0.0, protocol.dsr.dsr_scale(theta, eps), size=kept.shape)

    mp.setattr(protocol.dsr, "dsr_release", broken)


def stream_eps0_is_eps(mp) -> None:
    """Per-step budget eps instead of eps / w: the device LEDGER must stop it."""
    mp.setattr(protocol.stream.StreamConfig, "eps0", property(lambda self: self.eps))


def ledger_not_charging(mp) -> None:
    """The window account grants every run and records nothing (with the eps0 bug above,
    w reports at eps each leave the device)."""
    stream_eps0_is_eps(mp)
    mp.setattr(protocol.ledger.WindowAccount, "charge_run",
               lambda self, t0, eps0, count: (count, None))  # fmt: skip


def reused_device_seeds(mp) -> None:
    real = devices.fleet.device_rng
    mp.setattr(devices.fleet, "device_rng", lambda seed, index, purpose: real(seed, 0, purpose))


# name -> (apply, battery entry, claimed eps, runs per world)
MUTANTS = {
    "laplace scale halved": (laplace_scale_halved, "laplace", 1.0, 2000),
    "dsr scale halved": (dsr_scale_halved, "dsr", 1.0, 2000),
    "rr p for 2 eps": (rr_p_for_double_eps, "rr", 1.0, 2000),
    "sw p for 2 eps": (sw_wrong_p, "sw", 1.0, 2000),
    "sw wrong b": (sw_wrong_b, "sw", 1.0, 4000),
    "exponential without factor 2": (exponential_without_factor_2, "exponential", 1.0, 4000),
    "dsr clipping removed": (dsr_clipping_removed, "dsr", 1.0, 2000),
    "ledger not charging": (ledger_not_charging, "stream", 1.0, 2000),
    "reused device seeds": (reused_device_seeds, "devices", 1.0, 600),
}


# End-to-end only (tests/e2e/test_audit_fleet.py): bugs on the fleet path that the
# function-level entries cannot see.


def batch_sends_readings(mp) -> None:
    """The reporter charges its ledger and privatises every step with the real Square Wave
    (``reporter.values`` holds the SW outputs), but the batch it PUBLISHES carries the
    normalised readings: a wiring bug between the mechanism and the wire. The ``sw`` and
    ``stream`` entries call the mechanism and read ``reporter.values``, so they pass; the
    collector accepts the values (0 and 1 lie in the SW output domain); only the trace
    shows the readings in the clear."""
    real_add = protocol.stream.StreamReporter.add_readings
    real_send = protocol.stream.StreamReporter._send_batch

    def add_readings(self, readings, now):
        # note the normalised readings first: real_add may publish at once (credit)
        x = np.asarray(readings, dtype=float).ravel()
        if not hasattr(self, "_mutant_clean"):
            self._mutant_clean = np.full(self.config.steps, np.nan)
        start = self.privatised
        end = min(start + x.size, self.config.steps)
        if end > start and np.all(np.isfinite(x)):
            clean = protocol.sw.normalise(x[: end - start], self.config.lo, self.config.hi)
            self._mutant_clean[start:end] = clean
        real_add(self, readings, now)

    def send_batch(self, seq, now):
        privatised = self.values
        self.values = getattr(self, "_mutant_clean", privatised)
        try:
            real_send(self, seq, now)
        finally:
            self.values = privatised

    mp.setattr(protocol.stream.StreamReporter, "add_readings", add_readings)
    mp.setattr(protocol.stream.StreamReporter, "_send_batch", send_batch)


# ---- Comparison stream mechanisms (protocol.duchi, protocol.piecewise, protocol.hybrid) ----
# The planted bug: the mechanism is built with 2 eps internally while it claims eps (its
# ``eps`` attribute, and so the ledger and the audit's claim, say eps).


def built_with_double_eps(cls) -> object:
    """``apply(monkeypatch)`` making ``cls`` compute its parameters at 2 eps."""

    def apply(mp) -> None:
        real_post_init = cls.__post_init__

        def broken(self) -> None:
            claimed = self.eps
            object.__setattr__(self, "eps", 2.0 * claimed)
            real_post_init(self)
            object.__setattr__(self, "eps", claimed)

        mp.setattr(cls, "__post_init__", broken)

    return apply


from ldpfleet.protocol import duchi, hybrid, piecewise  # noqa: E402

MUTANTS.update({
    "duchi built with 2 eps": (built_with_double_eps(duchi.DuchiMechanism), "duchi", 1.0, 2000),
    "piecewise built with 2 eps": (
        built_with_double_eps(piecewise.PiecewiseMechanism), "piecewise", 1.0, 2000
    ),
    "hybrid built with 2 eps": (
        built_with_double_eps(hybrid.HybridMechanism), "hybrid", 1.0, 2000
    ),
})  # fmt: skip
