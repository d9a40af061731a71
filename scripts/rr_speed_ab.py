"""Warner RR's one-bit report, old against new, in one process (docs/mechanisms.md).

    git show <old>:protocol/samplers.py > /tmp/samplers_old.py
    git show <old>:protocol/rr.py > /tmp/rr_old.py
    python scripts/rr_speed_ab.py /tmp/samplers_old.py /tmp/rr_old.py [--reports 100000]

First the proof that the law is untouched: ``--reports`` seeded ``WarnerRR.respond(bool)``
reports per budget (and as many bits in arrays of 1 to 63, the per-bit path), old and new
from generators of the same seed, must be identical, and so must the generators' states
after. Then the cost: rounds of 20,000 reports, old and new alternating (so both see the
same load on a shared machine); the median per report of each is printed.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time

import numpy as np
from ldpfleet.protocol import rr as rr_new

BUDGETS = (0.1, 0.5, 1.0, 2.3, 4.0)  # eps' = alpha eps / 2 of LPEA-LOW spans these


def load_old(samplers_path: str, rr_path: str):
    """The old ``rr`` module, importing the old ``samplers`` module (both from files)."""
    samplers_spec = importlib.util.spec_from_file_location("samplers_old", samplers_path)
    samplers_old = importlib.util.module_from_spec(samplers_spec)
    sys.modules["samplers_old"] = samplers_old  # dataclasses look their module up
    samplers_spec.loader.exec_module(samplers_old)
    real = sys.modules["ldpfleet.protocol.samplers"]
    sys.modules["ldpfleet.protocol.samplers"] = samplers_old  # what the old rr imports
    try:
        rr_spec = importlib.util.spec_from_file_location("rr_old", rr_path)
        rr_old = importlib.util.module_from_spec(rr_spec)
        sys.modules["rr_old"] = rr_old
        rr_spec.loader.exec_module(rr_old)
    finally:
        sys.modules["ldpfleet.protocol.samplers"] = real
    return rr_old


def _reports(module, eps: float, n: int, seed: int) -> tuple[list, str]:
    """``n`` bool reports of alternating truths, then ``n`` bits in arrays of 1..63."""
    mech, rng = module.WarnerRR(eps), np.random.default_rng(seed)
    out = [mech.respond(i % 3 == 0, rng) for i in range(n)]
    done = 0
    while done < n:
        size = min(1 + done % 63, n - done)
        out.extend(mech.respond(np.arange(size) % 2 == 0, rng).tolist())
        done += size
    return out, repr(rng.bit_generator.state)


def check_identical(rr_old, n: int) -> None:
    for seed, eps in enumerate(BUDGETS):
        old, new = _reports(rr_old, eps, n, seed), _reports(rr_new, eps, n, seed)
        assert old == new, f"eps {eps}: the reports or the generator state differ"
        print(f"eps {eps}: {2 * n} reports identical old vs new (and the generator state)")


def _round(module, eps: float, n: int) -> float:
    mech, rng = module.WarnerRR(eps), np.random.default_rng(1)
    started = time.perf_counter()
    for i in range(n):
        mech.respond(i % 2 == 0, rng)
    return (time.perf_counter() - started) / n * 1e6


def measure(rr_old, rounds: int, n: int) -> None:
    for eps in BUDGETS:
        times: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(rounds):
            times["old"].append(_round(rr_old, eps, n))
            times["new"].append(_round(rr_new, eps, n))
        old, new = statistics.median(times["old"]), statistics.median(times["new"])
        print(f"eps {eps}: old {old:.2f} us, new {new:.2f} us per report ({old / new:.2f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old_samplers")
    parser.add_argument("old_rr")
    parser.add_argument("--reports", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--per-round", type=int, default=20_000)
    args = parser.parse_args()
    rr_old = load_old(args.old_samplers, args.old_rr)
    check_identical(rr_old, args.reports)
    measure(rr_old, args.rounds, args.per_round)


if __name__ == "__main__":
    main()
