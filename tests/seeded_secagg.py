"""Test-only: a scenario's secure-sum server draws its SecAgg+ graph labelling from a seed.

A deployment's ``collector.secure_sum`` draws the labelling (and its probe key) from
``os.urandom``, so a run with ``[secure_sum] dropout`` on a SecAgg+ graph aborts with a
small probability (``protocol.secagg.graph.abort_probability_bound``: 2.65e-4 for the
shipped ``scenarios/secure-sum.toml``, 100 devices, k = 15, t = 9, 10 dropping). A test
that must not fail by chance draws it from ``SEED`` instead: then the session, an abort
included, is a fixed function of the seeds (the dropping devices are the scenario seed's),
and ``tests/unit/test_F_seeded_secagg.py`` checks that this seed's labelling leaves every
device of the shipped scenario enough live share holders. Nothing in the package changes:
the scenario paths' one ``secure_sum`` (``scenarios.secure_sum_stage``, which
``ldpfleet run`` and the split and partitioned runs all call) is wrapped in the test's
process.

Two uses: ``install()`` in a test's own process, or, for a documented command run as a
subprocess (tests/e2e/test_docs_commands.py), ``python tests/seeded_secagg.py ARGS...``
in place of ``python -m ldpfleet.app.cli ARGS...``.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

import numpy as np

SEED = 0  # checked by tests/unit/test_F_seeded_secagg.py for scenarios/secure-sum.toml
STREAM = 0x5EC6  # a stream of its own: never the scenario seed's dropout draw


def seeded_random_bytes(seed: int = SEED) -> Callable[[int], bytes]:
    """A fresh ``random_bytes`` source for one session's server, decided by ``seed``."""
    return np.random.default_rng([seed, STREAM]).bytes


def seeded(secure_sum, seed: int = SEED):
    """``secure_sum`` whose server randomness is ``seeded_random_bytes(seed)`` (fresh per
    session, so each session's labelling is the same whatever ran before it)."""

    @functools.wraps(secure_sum)
    async def session(*args, **options):
        options.setdefault("random_bytes", seeded_random_bytes(seed))
        return await secure_sum(*args, **options)

    return session


def install(seed: int = SEED) -> None:
    """Every scenario path's secure sum in this process draws its labelling from ``seed``."""
    from ldpfleet.collector.secure_sum import secure_sum
    from ldpfleet.scenarios import secure_sum_stage

    secure_sum_stage.secure_sum = seeded(secure_sum, seed)


def main() -> None:
    """``ldpfleet ARGS...`` with the seeded labelling installed."""
    install()
    from ldpfleet.app.cli import main as cli_main

    sys.argv = ["ldpfleet", *sys.argv[1:]]
    cli_main()


if __name__ == "__main__":
    main()
