"""Old against new ``detect_period``: is every field of the estimate the same?

For refactors and speed work that must not change an answer (issue 19, helper K).
``OLD`` is a copy of an earlier ``collector/period.py`` (``git show REV:collector/period.py
> /tmp/period_old.py``); "new" is the installed package.

- ``record OLD CACHE.json``: the old module's estimates on the stream set below.
- ``check CACHE.json``: the installed module against them; exit status 1 if any differs.

Streams (deterministic, 3,540): the period grid's cells (``bench_cpr.grid_cells``) x
trials 0-1 at seeds 0 and 5 (2,640); the five grid and twelve held-out aperiodic kinds x
n in 150, 300, 1,000, 3,000 x eps0 in 0.2, 1, 5 at seeds 3 and 6 (408); the phase-jump
cells (``cpr_phase_jumps.cells``) x trials 0-1 at seed 780 (480); 12 edge streams (zeros,
constants, too short, clean sines, 1e300 and 1e-200 scales, a ramp, 20,000 samples).
Fields added after OLD (``searched``, ``clamped``) are left out of the comparison.

Run: ``python scripts/cpr_period_same.py record /tmp/period_old.py /tmp/same.json``, then
``python scripts/cpr_period_same.py check /tmp/same.json`` (about 1 min each here).
"""

from __future__ import annotations

import dataclasses
import json
import sys

import numpy as np
from ldpfleet.app import bench_cpr as b
from ldpfleet.app import cpr_phase_jumps as pj
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from cpr_period_ab import load_old  # the scripts share one loader of an old period.py

ADDED = ("searched", "clamped")  # fields the old module may not have


def _grid_streams():
    for seed in (0, 5):
        for source, period, cycles, eps0, jitter, drift in b.grid_cells(None, None, None):
            tag = f"{source}/{period}/{cycles}/{eps0}/{jitter}/{drift}"
            for trial in range(2):
                rng = b.trial_rng(seed, "grid", trial, tag)
                cycle = b.grid_template(source, period, rng)
                clean = b.grid_stream(cycle, period * cycles, rng, jitter, drift)
                yield f"g{seed}/{tag}/{trial}", SquareWave(eps0).perturb(clean, rng)


def _aperiodic_streams():
    for seed in (3, 6):
        for kind in b.APERIODIC_KINDS + b.HELD_OUT_KINDS:
            for n in (150, 300, 1000, 3000):
                for eps0 in (0.2, 1.0, 5.0):
                    rng = b.trial_rng(seed, "aperiodic", 0, f"{kind}/{n}/{eps0}")
                    clean = b.aperiodic_stream(kind, n, rng)
                    yield f"a{seed}/{kind}/{n}/{eps0}", SquareWave(eps0).perturb(clean, rng)


def _jump_streams():
    for i, (kind, period, cycles, eps0, jumps) in enumerate(pj.cells()):
        for trial in range(2):
            rng = np.random.default_rng([pj.SEED + 1, i, trial])
            cycle = b.grid_template(kind, period, rng)
            clean = pj.jump_stream(cycle, period * cycles, jumps, rng)
            yield f"j/{i}/{trial}", SquareWave(eps0).perturb(clean, rng)


def _edge_streams():
    rng = np.random.default_rng(42)
    yield "e/zeros", np.zeros(100)
    yield "e/const", np.ones(50)
    yield "e/short", rng.random(5)
    yield "e/sine", np.sin(2 * np.pi * np.arange(1000) / 37)
    yield "e/sine365", np.sin(2 * np.pi * np.arange(1460) / 365)
    yield "e/big", 1e300 * rng.random(500)
    yield "e/tiny", 1e-200 * rng.random(500)
    yield "e/ramp", np.arange(300.0)
    yield "e/square7", (np.arange(70) % 7 < 3).astype(float)
    yield "e/white9", rng.standard_normal(9)
    yield "e/sine97", np.sin(2 * np.pi * np.arange(97 * 6) / 97)
    yield "e/noise_long", rng.random(20000)


def streams():
    """Every (key, reports) of the comparison set, in a fixed order."""
    yield from _grid_streams()
    yield from _aperiodic_streams()
    yield from _jump_streams()
    yield from _edge_streams()


def as_dict(estimate) -> dict:
    """The estimate's fields as JSON values (floats by ``repr``: bit for bit)."""
    fields = dataclasses.asdict(estimate)
    for name in ADDED:
        fields.pop(name, None)
    fields["votes"] = sorted(fields["votes"].items())
    fields["scales"] = list(fields["scales"])
    return {k: (repr(v) if isinstance(v, float) else v) for k, v in fields.items()}


def run(detect) -> dict:
    """``as_dict(detect(reports))`` for every stream of the set."""
    return {key: as_dict(detect(x)) for key, x in streams()}


def main(argv: list[str]) -> int:
    if argv[0] == "record":
        out = run(load_old(argv[1]).detect_period)
        with open(argv[2], "w") as handle:
            json.dump(out, handle)
        print("recorded", len(out))
        return 0
    from ldpfleet.collector.period import detect_period

    with open(argv[1]) as handle:
        old = json.load(handle)
    new = json.loads(json.dumps(run(detect_period)))
    diff = [k for k in old if old[k] != new[k]]
    print(f"streams {len(old)}, identical {len(old) - len(diff)}, different {len(diff)}")
    for key in diff[:20]:
        print(key, old[key], new[key])
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
