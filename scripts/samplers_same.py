"""A digest of seeded runs of every sampler caller, to compare two trees of the package.

    python scripts/samplers_same.py                                # this tree
    PYTHONPATH=/tmp/old/pkg python scripts/samplers_same.py         # another (run from /tmp)

(``/tmp/old/pkg/ldpfleet`` a copy of ``ldpfleet/`` with the layer folders linked into it.)
One line per caller: Square Wave (both variants), Laplace, Duchi, Hybrid, Piecewise, Warner
RR (bool, small and large arrays), the exponential mechanism, DSR, geometric and negative
binomial (bit-pool and array paths), discrete Laplace (both paths), ``laplace_on_grid``,
``bernoulli_exp``; each the SHA-256 of its outputs and of the generator's state after, for
small requests (the pure-Python bit-pool paths) and large ones (the array paths). Equal
lines: the same outputs for the same generator state.
"""

from __future__ import annotations

import hashlib
from fractions import Fraction

import numpy as np
from ldpfleet.protocol import samplers
from ldpfleet.protocol.dsr import dsr_release
from ldpfleet.protocol.duchi import DuchiMechanism
from ldpfleet.protocol.exponential import ExponentialMechanism
from ldpfleet.protocol.hybrid import HybridMechanism
from ldpfleet.protocol.laplace import LaplaceMechanism
from ldpfleet.protocol.piecewise import PiecewiseMechanism
from ldpfleet.protocol.rr import WarnerRR
from ldpfleet.protocol.sw import SquareWave


def _runs():
    x_small, x_large = np.linspace(0.0, 1.0, 7), np.linspace(0.0, 1.0, 3000)
    for eps in (0.5, 2.0, 9.0):
        for name, mech in (
            ("sw", SquareWave(eps)),
            ("sw01", SquareWave(eps, variant="sw01")),
            ("laplace", LaplaceMechanism(eps)),
            ("duchi", DuchiMechanism(eps)),
            ("hybrid", HybridMechanism(eps)),
            ("piecewise", PiecewiseMechanism(eps)),
        ):
            for x in (x_small, x_large):
                yield f"{name} eps={eps} n={x.size}", lambda rng, m=mech, x=x: m.perturb(x, rng)
        rr = WarnerRR(eps)
        yield (
            f"rr bool eps={eps}",
            lambda rng, rr=rr: [rr.respond(i % 2 == 0, rng) for i in range(500)],
        )
        for n in (10, 500):
            yield (
                f"rr array eps={eps} n={n}",
                lambda rng, rr=rr, n=n: rr.respond(np.arange(n) % 3 == 0, rng),
            )
        em = ExponentialMechanism(eps, 1.0)
        yield (
            f"exponential eps={eps}",
            lambda rng, em=em: [em.sample([0.0, 1.0, 3.0, 2.5], rng) for _ in range(300)],
        )
        yield (
            f"dsr eps={eps}",
            lambda rng, eps=eps: [dsr_release(k, 20, eps, rng) for k in range(40)],
        )
    ratio = Fraction(3, 4)
    for n in (5, 2000):
        yield f"geometric n={n}", lambda rng, n=n: samplers.geometric(rng, ratio, n)
        yield (
            f"negative_binomial n={n}",
            lambda rng, n=n: samplers.negative_binomial(rng, Fraction(7, 3), ratio, n),
        )
        yield f"discrete_laplace n={n}", lambda rng, n=n: samplers.discrete_laplace(rng, 2.5, n)
        yield (
            f"laplace_on_grid n={n}",
            lambda rng, n=n: samplers.laplace_on_grid(rng, np.full(n, 0.3), 0.7),
        )
        yield f"bernoulli_exp n={n}", lambda rng, n=n: samplers.bernoulli_exp(rng, 2.3, n)
    yield (
        "discrete_laplace scalars",
        lambda rng: [samplers.discrete_laplace(rng, 1.5) for _ in range(300)],
    )


def main() -> None:
    total = hashlib.sha256()
    for seed, (label, run) in enumerate(_runs()):
        rng = np.random.default_rng(seed)
        out = run(rng)
        digest = hashlib.sha256(repr((np.asarray(out).tolist(), rng.bit_generator.state)).encode())
        total.update(digest.digest())
        print(f"{digest.hexdigest()[:16]}  {label}")
    print(f"{total.hexdigest()}  all")


if __name__ == "__main__":
    main()
