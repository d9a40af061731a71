"""The mutation run: planted bugs, and what catches each (issue 21) — theory of operation.

A *mutant* is one deliberate bug planted IN-PROCESS in the real module the code under test
calls (an attribute of a protocol or collector module replaced for the duration of a
``with planted(mutant):`` block; no file on disk is ever edited, and the original is
restored on exit). For every mutant the run asks two questions:

1. **Does the audit catch it?** The battery entry (or entries) that should see the bug is
   audited at the mutant's claims with the mutant planted; ``violation`` = caught. The
   run's gamma is family-wise over all its audits (Bonferroni), as in ``audit all``.
2. **Do the unit tests catch it?** The relevant unit test files (never the audit's own
   tests, which plant the bugs themselves) run in a subprocess,
   ``python -m pytest -p ldpfleet.collector.audit.mutant_plugin FILES`` with
   ``LDPFLEET_MUTANT=<name>`` in the environment: the plugin plants the mutant when pytest
   starts, so every test of those files runs against it. A failing test = caught (the
   first failing test is named).

A mutant neither catches is listed with the reason (``Mutant.missed``): docs/audit.md has
the table. Some are harmless by construction (a Laplace noise of the wrong SIGN is the same
distribution), some are accuracy bugs an audit of privacy cannot see (RR debiasing with
the wrong eps), some only show at another budget (a scale/rate confusion is exact at
eps = 1).
"""

from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

import numpy as np
from ldpfleet.collector.audit.cadr_count_canary import DROPOUT_AUDIT_EPS
from ldpfleet.protocol.errors import ParameterError

__all__ = ["ENV_VAR", "MUTANTS", "Mutant", "Patcher", "mutant_named", "planted", "run_mutant"]

ENV_VAR = "LDPFLEET_MUTANT"


def clear_speed_up_caches() -> None:
    """Empty every module-level ``functools`` cache of ldpfleet's loaded modules.

    The speed-up caches (a shared Warner coin per budget, sampler tables, ...) keep objects
    built before a bug was planted: a planted bug that patches a method of a class the cache
    is keyed by (``"rr eps off by 2x"`` patches ``WarnerRR.__post_init__``) would be served
    the honest object, and an object built under the bug would outlive its undo (helper R's
    review, 2026-12-07). The caches hold pure results, so emptying them changes no draw."""
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("ldpfleet."):
            continue
        for value in list(vars(module).values()):
            if callable(getattr(value, "cache_clear", None)) and hasattr(value, "cache_info"):
                value.cache_clear()


class Patcher:
    """``setattr`` with undo (a tiny monkeypatch that needs no pytest); the speed-up
    caches are emptied on both (``clear_speed_up_caches``)."""

    def __init__(self) -> None:
        self._undo: list[tuple[object, str, object]] = []

    def setattr(self, target: object, name: str, value: object) -> None:
        self._undo.append((target, name, getattr(target, name)))
        setattr(target, name, value)
        clear_speed_up_caches()

    def undo(self) -> None:
        while self._undo:
            target, name, value = self._undo.pop()
            setattr(target, name, value)
        clear_speed_up_caches()


@dataclass(frozen=True)
class Mutant:
    """One planted bug: how to plant it, which audits and test files should catch it."""

    name: str
    description: str
    plant: Callable[[Patcher], None]
    audits: tuple[tuple[str, float], ...] = ()  # (battery entry, claimed eps)
    tests: tuple[str, ...] = ()  # unit test files (relative to the repository)
    trials: int | None = None  # runs per world (default: the entry's own)
    missed: str = ""  # why the audit cannot catch it (empty: it should)
    extra: dict = field(default_factory=dict)


# ---- the bugs -------------------------------------------------------------------------------


def _lpea_rr_double(p: Patcher) -> None:
    from ldpfleet.protocol import lpea, rr

    p.setattr(lpea, "WarnerRR", lambda eps: rr.WarnerRR(2.0 * eps))


def _window_halved_spend(p: Patcher) -> None:
    from ldpfleet.protocol.ledger import WindowAccount

    real = WindowAccount._worst_window_of_run

    def lenient(self, t0, eps0, count):
        start, spent = real(self, t0, eps0, count)
        return start, 0.5 * spent  # every window may spend 2 eps

    p.setattr(WindowAccount, "_worst_window_of_run", lenient)


def _window_forgets_edge(p: Patcher) -> None:
    from ldpfleet.protocol.ledger import WindowAccount

    def forgetful(self, t0, eps0, count):
        w = self.w
        first = max(0, t0 - w + 2)  # bug: the window [t0 - w + 1, t0] is never checked
        if first > t0:  # w = 1: the only window was the forgotten one
            return t0, 0.0
        seg = self._segment(first, t0 + count + w - 1)
        seg[t0 - first : t0 - first + count] += eps0
        prefix = np.concatenate(([0.0], np.cumsum(seg)))
        starts = t0 + count - first
        sums = prefix[w : w + starts] - prefix[:starts]
        k = int(np.argmax(sums))
        return first + k, float(sums[k])

    p.setattr(WindowAccount, "_worst_window_of_run", forgetful)


def _laplace_scale(factor: Callable[[float], float]) -> Callable[[Patcher], None]:
    def plant(p: Patcher) -> None:
        from ldpfleet.protocol.laplace import LaplaceMechanism

        p.setattr(LaplaceMechanism, "scale", property(lambda self: factor(self.eps)))

    return plant


def _laplace_wrong_sign(p: Patcher) -> None:
    from ldpfleet.protocol import laplace

    real = laplace.LaplaceMechanism.perturb

    def subtracted(self, v, rng):
        noisy = np.asarray(real(self, v, rng), dtype=float)
        out = 2.0 * np.asarray(v, dtype=float) - noisy  # v - noise instead of v + noise
        return float(out) if out.ndim == 0 else out

    p.setattr(laplace.LaplaceMechanism, "perturb", subtracted)


def _dsr_scale(scale: Callable[[int, float], float]) -> Callable[[Patcher], None]:
    def plant(p: Patcher) -> None:
        from ldpfleet.protocol import dsr

        p.setattr(dsr, "dsr_scale", scale)

    return plant


def _rr_p_double(p: Patcher) -> None:
    from ldpfleet.protocol.rr import WarnerRR

    real = WarnerRR.__post_init__

    def broken(self) -> None:
        real(self)
        object.__setattr__(self, "p", 1.0 / (1.0 + math.exp(-2.0 * self.eps)))
        object.__setattr__(self, "coin_eps", Fraction(2.0 * self.eps))  # the exact coin's

    p.setattr(WarnerRR, "__post_init__", broken)


def _rr_debias_double(p: Patcher) -> None:
    from ldpfleet.protocol.rr import WarnerRR

    real = WarnerRR.debias_count

    def broken(self, yes, asked):
        return real(WarnerRR(2.0 * self.eps), yes, asked)

    p.setattr(WarnerRR, "debias_count", broken)


def _sw_p_double(p: Patcher) -> None:
    from ldpfleet.protocol.sw import SquareWave

    real = SquareWave.__post_init__

    def broken(self) -> None:
        real(self)
        e2 = math.exp(2.0 * self.eps)
        q = 1.0 / (2.0 * self.b * e2 + 1.0)
        object.__setattr__(self, "q", q)
        object.__setattr__(self, "p", e2 * q)
        object.__setattr__(self, "ratio", Fraction(e2))  # the exact sampler's p / q

    p.setattr(SquareWave, "__post_init__", broken)


def _exponential_double(p: Patcher) -> None:
    from ldpfleet.protocol import exponential

    def broken(self, scores):
        s = exponential._check_scores(scores)
        w = (self.eps / self.sensitivity) * (s - s.max(axis=-1, keepdims=True))
        weights = np.exp(w)
        return weights / weights.sum(axis=-1, keepdims=True)

    p.setattr(exponential.ExponentialMechanism, "probabilities", broken)
    real = exponential.ExponentialMechanism.__post_init__

    def broken_rate(self) -> None:  # the exact sampler reads rate, not probabilities
        real(self)
        object.__setattr__(self, "rate", 2 * self.rate)

    p.setattr(exponential.ExponentialMechanism, "__post_init__", broken_rate)


def _built_with_double_eps(module: str, cls: str) -> Callable[[Patcher], None]:
    def plant(p: Patcher) -> None:
        import importlib

        klass = getattr(importlib.import_module(f"ldpfleet.protocol.{module}"), cls)
        real = klass.__post_init__

        def broken(self) -> None:
            claimed = self.eps
            object.__setattr__(self, "eps", 2.0 * claimed)
            real(self)
            object.__setattr__(self, "eps", claimed)

        p.setattr(klass, "__post_init__", broken)

    return plant


def _gcdp_double(p: Patcher) -> None:
    """The fleet's release (``collector.gcdp.windows.laplace_draw``, what the collector's
    ``GcdpReleaser`` draws with) runs Algorithm 4 with every budget and eps_rel doubled."""
    from ldpfleet.collector.gcdp import windows

    real = windows.laplace_release

    def broken(values, **kw):
        kw["budgets"] = 2.0 * np.asarray(kw["budgets"], dtype=float)
        kw["eps_rel"] = 2.0 * kw["eps_rel"]
        return real(values, **kw)

    p.setattr(windows, "laplace_release", broken)


def _gcdp_window_redrawn(p: Patcher) -> None:
    """The release machine publishes each window a second time with a FRESH draw after its
    one ledger charge (a resend that redraws the noise instead of resending the bytes): an
    observer averages the two copies."""
    import msgspec
    from ldpfleet.protocol import gcdp_release

    real = gcdp_release.GcdpReleaseMachine._release

    def broken(self, k: int) -> None:
        real(self, k)
        if self.released and self.released[-1] == k:
            first, released = self._outbound[-1], self._events[-1]
            again = self._draw(released.means, self.theta, self._rng)
            self._send(first.topic, msgspec.structs.replace(first.message, values=again.tolist()))

    p.setattr(gcdp_release.GcdpReleaseMachine, "_release", broken)


def _gcdp_means_summed(p: Patcher) -> None:
    """The coordinator's ``MeansAssembler`` takes a redelivered ``GcdpWindowMeans`` (QoS 1
    resends a message whose ack was lost) as more data: a node's mean given again before
    its window is complete is ADDED to the one filed instead of refused, so node 0's mean
    counts twice and its move is 2 B_0 while the noise is scaled for B_0."""
    from ldpfleet.protocol import gcdp_release

    real = gcdp_release.MeansAssembler.add_means

    def summed(self, k, nodes, means):
        given = self._given.get(k)
        index = np.asarray(nodes, dtype=int)
        if given is not None and k not in self._taken and given[index].all():
            self._means[k][index] += np.asarray(means, dtype=float)  # bug: counted twice
            return bool(given.all())
        return real(self, k, nodes, means)

    p.setattr(gcdp_release.MeansAssembler, "add_means", summed)


def _gcdp_released_per_partition(p: Patcher) -> None:
    """The coordinator does not wait for every partition: each admitted ``GcdpWindowMeans``
    of a window still incomplete publishes the window's means given so far (the missing
    nodes at 0) with a FRESH draw, the one ledger charge left to the complete release;
    node 0's mean, in before the others', is published once per later message."""
    from ldpfleet.protocol import gcdp_release, topics
    from ldpfleet.protocol.messages import GcdpRelease

    real = gcdp_release.GcdpReleaseMachine.add_means

    def early(self, k, devices, means):
        real(self, k, devices, means)
        assembler = self.assembler
        if k not in assembler._given or assembler.complete(k):
            return
        th = self.theta
        values = self._draw(assembler._means[k].copy(), th, self._rng)  # bug: no wait
        self._send(
            topics.rel(self.run, gcdp_release.RELEASE_KIND),
            GcdpRelease(
                run=self.run, sender=topics.COLLECTOR_ID, seq=k, window=k,
                t0=k * th.window, steps=th.window, mechanism=gcdp_release.RELEASE_MECHANISM,
                method=th.method, eps_cal=th.eps_cal, eps_rel=th.eps_rel,
                adjacency=th.adjacency, values=values.tolist(), budgets=th.budgets.tolist(),
                scales=th.scales.tolist(), bounds=th.bounds.tolist(), nodes=self.nodes,
                edges=self._edges,
            ),
        )  # fmt: skip

    p.setattr(gcdp_release.GcdpReleaseMachine, "add_means", early)


def _gcdp_os_noise_seeded(p: Patcher) -> None:
    """``release_rng(seed, "os")`` ignores the mode: the release's noise comes from the
    run's seed, which results.json publishes (the "os" promise broken: whoever holds the
    seed replays the noise and subtracts it)."""
    from ldpfleet.collector import gcdp_stage

    p.setattr(gcdp_stage, "noise_rng", lambda mode, seeded: seeded())


def _gau_double(p: Patcher) -> None:
    from ldpfleet.collector.gcdp import baselines

    real = baselines.gaussian_grid
    p.setattr(baselines, "gaussian_grid", lambda eps, *args: real(2 * eps, *args))


def secagg_skips_pairwise(p: Patcher) -> None:
    """Planted bug: device dev00 sends encode(x) + PRG(b) only (no pairwise masks)."""
    from ldpfleet.protocol.secagg import client as client_module
    from ldpfleet.protocol.secagg.encoding import add_mod

    real = client_module.SecAggClient._masked_input

    def broken(self):
        if self.device != "dev00":
            return real(self)
        setup = self._setup()
        mask = client_module.self_mask(self._seed, setup.dim, setup.bits)
        return add_mod(self._fixed_point.encode(self._x), mask, setup.bits)

    p.setattr(client_module.SecAggClient, "_masked_input", broken)


def secagg_unmasks_a_split_graph(p: Patcher) -> None:
    """Planted bug: the server's split check is disabled (``SecAggServer._split`` says the
    survivors' graph is always in one part), so a SecAgg+ ring cut by dropouts is unmasked
    and each part's own sum is the server's."""
    from ldpfleet.protocol.secagg import server as server_module

    p.setattr(server_module.SecAggServer, "_split", lambda self, survivors: "")


def secagg_skips_self_mask(p: Patcher) -> None:
    """Planted bug: every device sends encode(x) + its pairwise masks, no PRG(b_u): hidden
    while nobody drops, read in the clear once the server rebuilds a dropped device's mask
    key (``secagg-dropout``)."""
    from ldpfleet.protocol.secagg import client as client_module
    from ldpfleet.protocol.secagg.encoding import sub_mod

    real = client_module.SecAggClient._masked_input

    def broken(self):
        setup = self._setup()
        mask = client_module.self_mask(self._seed, setup.dim, setup.bits)
        return sub_mod(real(self), mask, setup.bits)

    p.setattr(client_module.SecAggClient, "_masked_input", broken)


def secagg_reveals_both_shares(p: Patcher) -> None:
    """Planted bug: asked to unmask, a device reveals of every dropped node its b-share
    too (beside the s-share asked for), so t such devices hand the server both secrets."""
    import msgspec
    from ldpfleet.protocol.secagg import client as client_module
    from ldpfleet.protocol.secagg import shamir
    from ldpfleet.protocol.secagg.messages import RevealedShare

    real = client_module.SecAggClient._on_unmask_request

    def broken(self, request):
        held = dict(self._held)
        real(self, request)
        out = self._outbound[-1]
        extra = [
            RevealedShare(node=v, kind="b", share=shamir.share_to_bytes(held[v].b_share))
            for v in sorted(request.dropped)
        ]
        both = msgspec.structs.replace(out.message, shares=list(out.message.shares) + extra)
        self._outbound[-1] = out._replace(message=both)

    p.setattr(client_module.SecAggClient, "_on_unmask_request", broken)


def secagg_sums_a_late_masked_input(p: Patcher) -> None:
    """Planted bug: a masked input arriving in the unmask stage from a device the server
    declared dropped (U2 \\ U3) is accepted and the device moved into U3."""
    from ldpfleet.protocol.secagg import server as server_module
    from ldpfleet.protocol.secagg.messages import SaMasked

    real = server_module.SecAggServer._receive

    def broken(self, topic, message, now):
        label = self.label_of.get(message.sender)
        late = isinstance(message, SaMasked) and self.state == "unmask"
        if late and label in self.u2 - self.u3 and label not in self._replies["masked"]:
            self._replies["masked"][label] = message
            self.u3 = self.u3 | {label}
            return
        real(self, topic, message, now)

    p.setattr(server_module.SecAggServer, "_receive", broken)


def _dsr_no_clip(p: Patcher) -> None:
    from ldpfleet.protocol import dsr

    def broken(kept_degree, theta, eps, rng):
        kept = np.asarray(kept_degree, dtype=float)
        out = kept + rng.laplace(0.0, dsr.dsr_scale(theta, eps), size=kept.shape)
        return float(out) if out.ndim == 0 else out

    p.setattr(dsr, "dsr_release", broken)


def _reused_seeds(p: Patcher) -> None:
    from ldpfleet.devices import fleet

    real = fleet.device_rng
    p.setattr(fleet, "device_rng", lambda seed, index, purpose: real(seed, 0, purpose))


def _stream_eps0_is_eps(p: Patcher) -> None:
    from ldpfleet.protocol.stream import StreamConfig

    p.setattr(StreamConfig, "eps0", property(lambda self: 0.0 if self.raw else self.eps))


# ---- held-out mutants (written from the mechanisms before reading the list above) ----------


def _theta_noise_sensitivity_one(p: Patcher) -> None:
    from ldpfleet.protocol import cadr_theta_noise

    real = cadr_theta_noise.share_ratio
    p.setattr(cadr_theta_noise, "share_ratio", lambda eps, sensitivity=2: real(eps, 1))


def _polya_share_with(combine: Callable[[np.ndarray, np.ndarray], np.ndarray]):
    """``polya_share`` whose two NB halves are combined by ``combine``, planted where the
    device machine imported it too."""

    def plant(p: Patcher) -> None:
        from fractions import Fraction

        from ldpfleet.protocol import cadr_device, cadr_theta_noise, samplers

        def broken(rng, parties, eps, size):
            a = cadr_theta_noise.share_ratio(eps)
            both = samplers.negative_binomial(rng, Fraction(1, int(parties)), a, 2 * int(size))
            return combine(both[: int(size)], both[int(size) :])

        p.setattr(cadr_theta_noise, "polya_share", broken)
        p.setattr(cadr_device, "polya_share", broken)

    return plant


def _noise_parties_all(p: Patcher) -> None:
    from ldpfleet.collector import cadr_fleet, cadr_reference
    from ldpfleet.protocol import cadr_theta_noise

    def broken(n, survival=cadr_theta_noise.NOISE_SURVIVAL):
        return int(n)  # bug: noise for every device, none for the dropouts

    for module in (cadr_theta_noise, cadr_fleet, cadr_reference):
        p.setattr(module, "noise_parties", broken)


def _bucket_vector_inclusive(p: Patcher) -> None:
    from ldpfleet.protocol import cadr_device, cadr_theta_noise

    def broken(degree, thresholds):
        t = np.asarray(thresholds)
        out = np.zeros(len(t) + 1)
        out[int(np.sum(t <= degree))] = 1.0  # bug: t_j <= d instead of t_j < d
        return out

    p.setattr(cadr_theta_noise, "bucket_vector", broken)
    p.setattr(cadr_device, "bucket_vector", broken)


def _ndoe_unclamped(p: Patcher) -> None:
    from ldpfleet.protocol import cadr_device, exponential

    def broken(degree, partitions):
        parts = exponential._check_partitions(partitions)
        medians = (parts[:, 0] + parts[:, 1]) / 2.0
        return -np.abs(int(degree) - medians)  # bug: no clamp into [d_min, d_max]

    p.setattr(exponential, "ndoe_scores", broken)
    p.setattr(cadr_device, "ndoe_scores", broken)


def _stream_mechanism_at_eps(p: Patcher) -> None:
    from ldpfleet.protocol import stream

    def broken(self):
        return stream.stream_mechanism(self.mechanism, self.eps)  # bug: eps, not eps0

    p.setattr(stream.StreamConfig, "mechanism_object", broken)


def _charge_run_checks_first_step(p: Patcher) -> None:
    from ldpfleet.protocol.ledger import BudgetExhausted, WindowAccount, _exceeds

    def broken(self, t0, eps0, count):
        tt, e0 = self._validate(t0, eps0)
        n = int(count)
        if n == 0:
            return 0, None
        s, spent = self._worst_window(tt, e0)  # bug: only the run's first step is checked
        if _exceeds(spent, self.eps):
            self.refusals += 1
            return 0, BudgetExhausted(f"window [{s}, {s + self.w - 1}] full", field="eps0")
        self._record(tt, e0, n)
        return n, None

    p.setattr(WindowAccount, "charge_run", broken)


def _discrete_laplace_zero_twice(p: Patcher) -> None:
    from ldpfleet.protocol import samplers

    def broken(bits, t, s):
        while True:
            u = bits.below(t)
            if not samplers._bern_exp_scalar(bits, u, t):
                continue
            v = 0
            while samplers._bern_exp_scalar(bits, 1, 1):
                v += 1
            y = (u + t * v) // s
            return -y if bits.take(1) else y  # bug: (-, 0) kept, so 0 counts twice

    p.setattr(samplers, "_discrete_laplace_scalar", broken)


def _rr_scalar_inverted(p: Patcher) -> None:
    from ldpfleet.protocol.rr import WarnerRR

    real = WarnerRR.respond

    def broken(self, bit, rng):
        if type(bit) is bool:
            return bit != (rng.random() < self.p)  # bug: lies with probability p
        return real(self, bit, rng)

    p.setattr(WarnerRR, "respond", broken)


def _piecewise_centre_slope(p: Patcher) -> None:
    from ldpfleet.protocol.piecewise import PiecewiseMechanism

    def broken(self, x):
        t = 2.0 * np.asarray(x, dtype=float) - 1.0
        left = (self.bound - 1.0) / 2.0 * t - (self.bound - 1.0) / 2.0  # bug: C - 1, not C + 1
        return left, left + self.bound - 1.0

    p.setattr(PiecewiseMechanism, "centre", broken)


def _hybrid_alpha_reversed(p: Patcher) -> None:
    from ldpfleet.protocol import hybrid

    real = hybrid.HybridMechanism.__post_init__

    def broken(self) -> None:
        real(self)
        alpha = -math.expm1(-self.eps / 2.0) if self.eps <= hybrid.EPS_STAR else 0.0
        bound = self.piecewise.bound if alpha > 0.0 else self.duchi.bound
        object.__setattr__(self, "alpha", alpha)  # bug: the eps* comparison reversed
        object.__setattr__(self, "output_low", -bound)
        object.__setattr__(self, "output_high", bound)

    p.setattr(hybrid.HybridMechanism, "__post_init__", broken)


def _sw01_window_unshifted(p: Patcher) -> None:
    from ldpfleet.protocol.sw import SquareWave

    real = SquareWave._window_start

    def broken(self, v):
        if self.variant == "sw":
            return real(self, v)
        return np.clip(v, 0.0, 1.0 - 2.0 * self.b)  # bug: not centred on v (v - b)

    p.setattr(SquareWave, "_window_start", broken)


def _sw_one_uniform_per_batch(p: Patcher) -> None:
    from ldpfleet.protocol.sw import SquareWave

    real = SquareWave.perturb

    class _Shared:
        """A generator whose ``integers(low, high, (n, k))`` repeats one row of draws for
        all n inputs (the exact sampler's per-input words; module docstring of sw.py)."""

        def __init__(self, rng):
            self._rng = rng

        def integers(self, low, high, size=None):
            if isinstance(size, tuple) and len(size) == 2:
                row = self._rng.integers(low, high, size=(1, size[1]))
                return np.repeat(row, size[0], axis=0)
            return self._rng.integers(low, high, size=size)

    p.setattr(SquareWave, "perturb", lambda self, v, rng: real(self, v, _Shared(rng)))


def _laplace_one_draw_per_batch(p: Patcher) -> None:
    from ldpfleet.protocol import laplace

    real = laplace.laplace_on_grid

    def broken(rng, value, scale, grid):
        x = np.asarray(value, dtype=float)
        noise = real(rng, 0.0, scale, grid)  # bug: one draw for the whole batch
        out = np.rint(x / grid) * grid + noise
        return float(out) if out.ndim == 0 else out

    p.setattr(laplace, "laplace_on_grid", broken)


_U = "tests/unit/"
_LEDGER_TESTS = (
    _U + "test_ledger.py",
    _U + "test_stream_machines.py",
    _U + "test_budget_safety.py",
)
_CADR_TESTS = (
    _U + "test_cadr_mechanisms.py",
    _U + "test_cadr_device.py",
    _U + "test_lpea_machine.py",
)
_MISSED_PRIVATE = "post-processing: privacy is unchanged, only the estimate is wrong"
_MISSED_ACCURACY = (
    "still eps-DP (the output law changes, not its privacy): only the estimate is wrong"
)

MUTANTS: tuple[Mutant, ...] = (
    Mutant("lpea builds WarnerRR(2 eps)", "protocol/lpea.py answers at 2 eps while claiming eps",
           _lpea_rr_double, (("lpea-answer", 1.0),), _CADR_TESTS),
    Mutant("ledger allows 2x the window", "WindowAccount lets every window spend 2 eps",
           _window_halved_spend, (("stream-ledger", 1.0),), _LEDGER_TESTS),
    Mutant("ledger forgets a window edge",
           "WindowAccount never checks the window [t - w + 1, t] ending at the charged step",
           _window_forgets_edge, (("stream-ledger", 1.0),), _LEDGER_TESTS),
    Mutant("laplace eps off by 2x", "LaplaceMechanism scale 1 / (2 eps)",
           _laplace_scale(lambda eps: 0.5 / eps), (("laplace", 1.0),), (_U + "test_laplace.py",)),
    Mutant("laplace scale = eps (rate/scale confusion)", "LaplaceMechanism scale eps, not 1 / eps",
           _laplace_scale(lambda eps: eps), (("laplace", 1.0), ("laplace", 0.5)),
           (_U + "test_laplace.py",),
           missed="at eps = 1 the wrong scale equals the right one; only eps < 1 leaks"),
    Mutant("laplace noise subtracted (sign)", "y = v - noise instead of v + noise",
           _laplace_wrong_sign, (("laplace", 1.0),), (_U + "test_laplace.py",),
           missed="Laplace noise is symmetric: v - noise has the same law, so it is no bug"),
    Mutant("dsr eps off by 2x", "dsr_scale theta / (2 eps)",
           _dsr_scale(lambda theta, eps: 0.5 * theta / eps),
           (("dsr", 1.0), ("cadr-dsr", 1.0)), _CADR_TESTS),
    Mutant("dsr wrong sensitivity (1, not theta)", "dsr_scale 1 / eps",
           _dsr_scale(lambda theta, eps: 1.0 / eps), (("dsr", 1.0), ("cadr-dsr", 1.0)),
           _CADR_TESTS),
    Mutant("dsr clipping removed", "no clip to [0, theta] before the noise", _dsr_no_clip,
           (("dsr", 1.0),), _CADR_TESTS),
    Mutant("rr eps off by 2x", "WarnerRR p computed for 2 eps", _rr_p_double, (("rr", 1.0),),
           _CADR_TESTS),
    Mutant("rr debiasing with 2 eps", "WarnerRR.debias_count uses 2 eps", _rr_debias_double,
           (("lpea-answer", 1.0),), _CADR_TESTS, missed=_MISSED_PRIVATE),
    Mutant("sw eps off by 2x", "SquareWave p = e^(2 eps) q", _sw_p_double,
           (("sw", 1.0),), (_U + "test_sw.py",)),
    Mutant("exponential eps off by 2x", "no factor 2 in the exponent", _exponential_double,
           (("exponential", 1.0),), (_U + "test_cadr_mechanisms.py",), trials=6000),
    Mutant("duchi eps off by 2x", "built with 2 eps",
           _built_with_double_eps("duchi", "DuchiMechanism"),
           (("duchi", 1.0),), (_U + "test_comparison_mechanisms.py",)),
    Mutant("piecewise eps off by 2x", "built with 2 eps",
           _built_with_double_eps("piecewise", "PiecewiseMechanism"),
           (("piecewise", 1.0),), (_U + "test_comparison_mechanisms.py",)),
    Mutant("hybrid eps off by 2x", "built with 2 eps",
           _built_with_double_eps("hybrid", "HybridMechanism"),
           (("hybrid", 1.0),), (_U + "test_comparison_mechanisms.py",)),
    Mutant("gcdp eps off by 2x",
           "the fleet's release draw: every coordinate's budget and eps_rel doubled",
           _gcdp_double, (("gcdp", 1.0),), (_U + "test_gcdp_fleet.py",)),
    Mutant("gcdp window published twice",
           "GcdpReleaseMachine sends each window again with a fresh draw, one ledger charge",
           _gcdp_window_redrawn, (("gcdp", 1.0),),
           (_U + "test_gcdp_release_protocol.py", _U + "test_gcdp_fleet.py")),
    Mutant("gcdp partition means counted twice",
           "MeansAssembler adds a redelivered GcdpWindowMeans' mean to the one filed",
           _gcdp_means_summed, (("gcdp-partitioned", 1.0),),
           (_U + "test_gcdp_release_protocol.py",)),
    Mutant("gcdp window released per partition message",
           "each admitted GcdpWindowMeans publishes the incomplete window, fresh draw",
           _gcdp_released_per_partition, (("gcdp-partitioned", 1.0),),
           (_U + "test_gcdp_release_protocol.py",)),
    Mutant("gcdp os noise from the seed",
           'release_rng(seed, "os") ignores the mode: the noise replays from the seed',
           _gcdp_os_noise_seeded, (("gcdp-partitioned", 1.0),),
           (_U + "test_L_gcdp_release_noise.py",)),
    Mutant("gau-dp eps off by 2x", "sigma of the Gaussian for 2 eps", _gau_double,
           (("gau-dp", 1.0),), (_U + "test_gcdp_gaussian.py", _U + "test_gcdp_release.py")),
    Mutant("secagg device leaks its input", "dev00 sends encode(x) + PRG(b_u), no pairwise masks",
           secagg_skips_pairwise, (("secagg", 0.0),), (_U + "test_secagg_machines.py",)),
    Mutant("secagg unmasks a split survivors' graph",
           "SecAggServer._split disabled: a ring cut by dropouts is unmasked part by part",
           secagg_unmasks_a_split_graph, (("secagg-split", 0.0),),
           (_U + "test_secagg_user_partial_sums.py",)),
    Mutant("secagg device skips its self mask",
           "devices send encode(x) + pairwise masks, no PRG(b_u): read once declared dropped",
           secagg_skips_self_mask, (("secagg-dropout", 0.0),),
           (_U + "test_secagg_machines.py",)),
    Mutant("secagg devices reveal both shares of a dropped device",
           "an unmask answer gives a dropped node's b-share beside its s-share",
           secagg_reveals_both_shares, (("secagg-dropout", 0.0),),
           (_U + "test_secagg_machines.py",)),
    Mutant("secagg server sums a late masked input",
           "a masked input arriving after its device was declared dropped joins U3",
           secagg_sums_a_late_masked_input, (("secagg-dropout", 0.0),),
           (_U + "test_secagg_machines.py",),
           missed="no leak: the survivors were asked for the device's s-shares and answer "
           "once, so its b_u is never revealed and the session aborts in both worlds"),
    Mutant("reused device seeds", "every device of a fleet gets device 0's generator",
           _reused_seeds, (("devices", 1.0),), (_U + "test_sources.py",), trials=600),
    Mutant("stream per-step eps instead of eps / w", "StreamConfig.eps0 = eps",
           _stream_eps0_is_eps, (("stream", 1.0),), (_U + "test_stream_machines.py",),
           missed="the device ledger refuses steps 2..w: only one report at eps leaves"),
    Mutant("theta noise for sensitivity 1",
           "share_ratio uses a = exp(-eps), not exp(-eps / 2): the one-hot vector moves 2",
           _theta_noise_sensitivity_one, (("cadr-theta-count", 1.0),),
           (_U + "test_cadr_theta_noise.py",)),
    Mutant("theta noise shares added, not subtracted",
           "polya_share returns NB + NB (one-sided noise) instead of NB - NB",
           _polya_share_with(lambda a, b: a + b), (("cadr-theta-count", 1.0),),
           (_U + "test_cadr_theta_noise.py",)),
    Mutant("theta noise without the dropout margin",
           "noise_parties(n) = n: every survivor adds noise for n, too little after a dropout",
           _noise_parties_all, (("cadr-theta-count-dropout", DROPOUT_AUDIT_EPS),),
           (_U + "test_cadr_theta_noise.py",), trials=60_000),
    Mutant("theta bucket off by one", "bucket_vector puts degree d in the bucket of t_j <= d",
           _bucket_vector_inclusive, (("cadr-theta-count", 1.0),),
           (_U + "test_cadr_theta_noise.py",), missed=_MISSED_PRIVATE),
    Mutant("ndoe degree not clamped", "ndoe_scores skips the clamp into [d_min, d_max]",
           _ndoe_unclamped, (("ndoe", 1.0),), (_U + "test_cadr_mechanisms.py",),
           missed="beyond d_max every score moves by the same amount (m_j - d): the "
           "exponential mechanism's law is unchanged, so it is no privacy bug"),
    Mutant("stream mechanism built at eps, ledger charges eps / w",
           "StreamConfig.mechanism_object builds the randomizer at eps instead of eps0",
           _stream_mechanism_at_eps, (("stream", 1.0),), (_U + "test_stream_machines.py",)),
    Mutant("ledger checks only a run's first step",
           "WindowAccount.charge_run checks the first step's windows, then records the run",
           _charge_run_checks_first_step, (("stream-ledger", 1.0),), _LEDGER_TESTS),
    Mutant("discrete laplace counts zero twice",
           "the small-request sampler keeps (sign -, 0): P[0] doubled",
           _discrete_laplace_zero_twice, (("dsr", 1.0),), (_U + "test_samplers.py",),
           missed="one grid point's mass doubles: no histogram witness isolates it"),
    Mutant("dsr sensitivity theta - 1", "dsr_scale (theta - 1) / eps",
           _dsr_scale(lambda theta, eps: (theta - 1) / eps), (("dsr", 1.0), ("cadr-dsr", 1.0)),
           _CADR_TESTS),
    Mutant("rr machine path lies with probability p",
           "WarnerRR.respond(bool) tells the truth with 1 - p", _rr_scalar_inverted,
           (("lpea-answer", 1.0),), _CADR_TESTS, missed=_MISSED_ACCURACY),
    Mutant("piecewise centre slope (C - 1) / 2", "PM's centre piece moves too slowly with t",
           _piecewise_centre_slope, (("piecewise", 1.0),),
           (_U + "test_comparison_mechanisms.py",), missed=_MISSED_ACCURACY),
    Mutant("hybrid alpha condition reversed", "HM mixes PM in below eps*, not above",
           _hybrid_alpha_reversed, (("hybrid", 1.0),), (_U + "test_comparison_mechanisms.py",),
           missed=_MISSED_ACCURACY),
    Mutant("sw01 window not centred", "sw01 window starts at v instead of v - b",
           _sw01_window_unshifted, (("sw01", 1.0),), (_U + "test_sw.py",),
           missed=_MISSED_ACCURACY),
    Mutant("sw one uniform per batch", "SquareWave.perturb draws one set of words for all inputs",
           _sw_one_uniform_per_batch, (("stream", 1.0), ("stream-batch", 1.0)),
           (_U + "test_sw.py", _U + "test_stream_machines.py")),
    Mutant("laplace one noise draw per batch",
           "LaplaceMechanism adds the same noise to every value of a batch",
           _laplace_one_draw_per_batch, (("laplace", 1.0), ("stream-batch-laplace", 1.0)),
           (_U + "test_laplace.py", _U + "test_stream_machines.py")),
)  # fmt: skip


def mutant_named(name: str) -> Mutant:
    """The mutant called ``name`` (``ParameterError`` naming the known ones otherwise)."""
    for mutant in MUTANTS:
        if mutant.name == name:
            return mutant
    raise ParameterError(
        f"unknown mutant {name!r}; known: {', '.join(m.name for m in MUTANTS)}",
        field="mutant",
        limit=f"one of {', '.join(m.name for m in MUTANTS)}",
        value=name,
    )


@contextmanager
def planted(mutant: Mutant) -> Iterator[None]:
    """Plant ``mutant`` for the duration of the block (in-process; restored on exit)."""
    patcher = Patcher()
    try:
        mutant.plant(patcher)
        yield
    finally:
        patcher.undo()


def _audit_with(mutant: Mutant, gamma: float, seed: int, delta_gau: float) -> list[dict]:
    from ldpfleet.collector.audit.battery import run_audit

    rows = []
    with planted(mutant):
        for entry, eps in mutant.audits:
            delta = delta_gau if entry == "gau-dp" else 0.0
            result = run_audit(
                entry, eps, delta=delta, trials=mutant.trials, gamma=gamma, seed=seed
            )
            rows.append(
                {"entry": entry, "eps": eps, "eps_lb": result.eps_lb, "verdict": result.verdict}
            )
    return rows


_FAILED = re.compile(r"^FAILED (\S+)", re.MULTILINE)


def _tests_with(mutant: Mutant, root: Path, timeout: float) -> dict:
    files = [f for f in mutant.tests if (root / f).is_file()]
    if not files:
        return {"status": "not run", "files": list(mutant.tests), "failed": None}
    env = {**os.environ, ENV_VAR: mutant.name}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-rf", "-p", "no:cacheprovider",
               "-p", "ldpfleet.collector.audit.mutant_plugin",
               "-m", "not slow", *files]  # fmt: skip
    try:
        done = subprocess.run(
            command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "files": files, "failed": None}
    match = _FAILED.search(done.stdout)
    status = {0: "passed", 1: "failed"}.get(done.returncode, f"error (exit {done.returncode})")
    return {"status": status, "files": files, "failed": match.group(1) if match else None}


def run_mutant(
    mutant: Mutant,
    *,
    gamma: float,
    seed: int = 0,
    audit: bool = True,
    tests: bool = True,
    root: Path | None = None,
    timeout: float = 600.0,
    delta_gau: float = 1e-5,
) -> dict:
    """One row of the mutation table: the audits (each at ``gamma``) and the test run."""
    audits = _audit_with(mutant, gamma, seed, delta_gau) if audit else []
    test_row = _tests_with(mutant, root or Path.cwd(), timeout) if tests else None
    audit_caught = any(r["verdict"] == "violation" for r in audits)
    tests_caught = test_row is not None and test_row["status"] == "failed"
    if audit_caught:
        verdict = "audit"
    elif tests_caught:
        verdict = "tests only"
    elif (audit or not mutant.audits) and (tests or not mutant.tests):
        verdict = "nothing"
    else:
        verdict = "not run"
    return {
        "mutant": mutant.name,
        "description": mutant.description,
        "audits": audits,
        "tests": test_row,
        "caught_by": verdict,
        "missed": mutant.missed,
    }
