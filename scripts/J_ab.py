"""Helper J: paired old / new ``detect_period`` for step 3c's vetoed multiple
(docs/preregistration/J-vetoed-multiple.md). OLD = ``VETO_CHECKS_MULTIPLE = True`` (the rule
before J: the vetoed multiple's masked check at its own cycles), NEW = False. The switch is
the evaluated change (docs/preregistration/J-vetoed-multiple.diff; FAILED, not on main):
apply it to run this.

The two rules differ only on a stream where step 3's multiple was vetoed (``_fundamental``
returned a vetoed multiple): the new detector runs on every stream, the old one only where
``_fundamental`` reported a veto (elsewhere its answer is the new one by construction);
``verify`` checks that shortcut by running both on every stream.

    python scripts/J_ab.py aperiodic SEED TRIALS OUT.jsonl   # 5 kinds x 5 n x 4 eps0, SW
    python scripts/J_ab.py clean SEED TRIALS OUT.jsonl       # red / AR(1) without privacy noise
    python scripts/J_ab.py worst SEED TRIALS OUT.jsonl       # AR(1) 0.95 / 0.99, n 1,000, eps0 5
    python scripts/J_ab.py daily SEED TRIALS OUT.jsonl       # helper H's Occupancy windows
    python scripts/J_ab.py grid SEED TRIALS OUT.jsonl        # bench grid cells, jitter 0.02
    python scripts/J_ab.py verify SEED TRIALS                 # shortcut == full, daily + aperiodic
    python scripts/J_ab.py table OUT.jsonl ...
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
from ldpfleet.app.bench_cpr_grid import GRID_SHAPES, GRID_SOURCES, claims_upper95, sign_test_p
from ldpfleet.app.cpr_grid_streams import (
    aperiodic_stream,
    grid_stream,
    grid_template,
    source_name,
    trial_rng,
)
from ldpfleet.collector import period_search
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave

sys.path.insert(0, str(Path(__file__).resolve().parent))
import H_user_streams as H

APERIODIC_KINDS = ("white", "random_walk", "ar1_0.5", "ar1_0.9", "trend")
APERIODIC_N = (96, 300, 1000, 3000, 10000)
APERIODIC_EPS0 = (0.5, 1.0, 2.0, 5.0)
CLEAN_KINDS = ("white", "random_walk", "ar1_0.5", "ar1_0.9", "ar1", "ar1_slow")
CLEAN_N = (300, 1000, 3000)
DAILY_CELLS = [(c, b) for c in ("Temperature", "Humidity", "Light", "CO2") for b in (30, 10, 5)]
DAILY_EPS0 = (0.0, 0.5, 1.0, 2.0, 5.0)  # 0: raw readings
GRID_EPS0 = (0.5, 2.0, 5.0)


def _need_switch() -> None:
    """Exit with one sentence where the switch is absent (the rule FAILED: not on main)."""
    if not hasattr(period_search, "VETO_CHECKS_MULTIPLE"):
        sys.exit(
            "J_ab.py needs the VETO_CHECKS_MULTIPLE switch: git apply "
            "docs/preregistration/J-vetoed-multiple.diff (the change "
            "docs/preregistration/J-vetoed-multiple.md "
            "evaluated; it failed, not landed)"
        )


_seen = {"veto": False}
_fundamental = period_search._fundamental


def _watched(*args, **kwargs):
    out = _fundamental(*args, **kwargs)
    _seen["veto"] |= out[2] is not None
    return out


period_search._fundamental = _watched


def _answer(y: np.ndarray, old: bool) -> int | None:
    period_search.VETO_CHECKS_MULTIPLE = old
    try:
        return detect_period(y).period
    finally:
        period_search.VETO_CHECKS_MULTIPLE = False


def pair(y: np.ndarray, full: bool = False) -> tuple[int | None, int | None, bool]:
    """(old, new, vetoed): the old answer is computed only where a veto was seen."""
    _seen["veto"] = False
    new = _answer(y, False)
    vetoed = _seen["veto"]
    old = _answer(y, True) if (vetoed or full) else new
    return old, new, vetoed


def _aperiodic(seed: int, trials: int, clean: bool, worst: bool = False):
    kinds, lengths, budgets = (
        (CLEAN_KINDS, CLEAN_N, (None,)) if clean else (APERIODIC_KINDS, APERIODIC_N, APERIODIC_EPS0)
    )
    if worst:  # the addendum's item 3b: step 3b's red cells
        kinds, lengths, budgets = ("ar1", "ar1_slow"), (1000,), (5.0,)
    for kind in kinds:
        for n in lengths:
            for eps0 in budgets:
                tag = f"{kind}/{n}/{eps0}"
                for trial in range(trials):
                    rng = trial_rng(seed, "aperiodic", trial, tag)
                    x = aperiodic_stream(kind, n, rng)
                    y = x if eps0 is None else SquareWave(eps0).perturb(x, rng)
                    yield {"block": "clean" if clean else "aperiodic", "cell": tag}, None, y


def _daily(seed: int, trials: int):
    for ci, (name, minutes) in enumerate(DAILY_CELLS):
        for eps0 in DAILY_EPS0:
            for trial in range(trials):
                rng = np.random.default_rng([seed, 2, ci, int(eps0 * 10), trial])
                x = H.daily_stream(name, minutes, 10, rng)
                y = x if eps0 == 0 else SquareWave(eps0).perturb(x, rng)
                yield {"block": "daily", "cell": f"{name}/{minutes}/{eps0}"}, 1440 // minutes, y


def _grid(seed: int, trials: int):
    for source in GRID_SOURCES:
        for period, cycles in GRID_SHAPES:
            for eps0 in GRID_EPS0:
                tag = f"{source_name(source)}/{period}/{cycles}/{eps0}/0.02/0.0"
                for trial in range(trials):
                    rng = trial_rng(seed, "grid", trial, tag)
                    clean = grid_stream(grid_template(source, period, rng), period * cycles, rng)
                    y = SquareWave(eps0).perturb(clean, rng)
                    yield {"block": "grid", "cell": tag}, period, y


def run(mode: str, seed: int, trials: int, out: str) -> None:
    """Write one JSON row per stream: cell, truth, old, new, vetoed."""
    _need_switch()
    streams = {
        "aperiodic": lambda: _aperiodic(seed, trials, False),
        "clean": lambda: _aperiodic(seed, trials, True),
        "worst": lambda: _aperiodic(seed, trials, False, worst=True),
        "daily": lambda: _daily(seed, trials),
        "grid": lambda: _grid(seed, trials),
    }[mode]()
    with open(out, "a") as f:
        for row, truth, y in streams:
            old, new, vetoed = pair(y)
            f.write(json.dumps({**row, "T": truth, "old": old, "new": new, "veto": vetoed}) + "\n")


def verify(seed: int, trials: int) -> None:
    """The shortcut gives the full run's old answers (daily + aperiodic, few trials)."""
    _need_switch()
    bad = total = 0
    for gen in (_daily(seed, trials), _aperiodic(seed, trials, False)):
        for _row, _truth, y in gen:
            old, new, _ = pair(y)
            full_old, full_new, _ = pair(y, full=True)
            bad += (old, new) != (full_old, full_new)
            total += 1
    print(f"verify: {bad} of {total} streams differ")


def table(paths: list[str]) -> None:
    """Per block: exact / wrong / claims old and new, vetoes, changed answers, worst cells."""
    rows = []
    for p in paths:
        with open(p) as f:
            rows += [json.loads(line) for line in f]
    by_block = defaultdict(list)
    for r in rows:
        by_block[r["block"]].append(r)
    for block, rs in by_block.items():
        vetoes = sum(r["veto"] for r in rs)
        changed = [r for r in rs if r["old"] != r["new"]]
        print(f"## {block}: {len(rs)} streams, {vetoes} with a veto, {len(changed)} changed")
        cells = defaultdict(list)
        for r in rs:
            cells[r["cell"]].append(r)
        if rs[0]["T"] is None:  # aperiodic: claims are false claims
            co = sum(r["old"] is not None for r in rs)
            cn = sum(r["new"] is not None for r in rs)
            print(f"claims old {co} new {cn} of {len(rs)}")
            fam = defaultdict(lambda: [0, 0, 0])
            worst = (0, "")
            for cell, cr in cells.items():
                k = cell.split("/")[0]
                c_new = sum(r["new"] is not None for r in cr)
                fam[k][0] += sum(r["old"] is not None for r in cr)
                fam[k][1] += c_new
                fam[k][2] += len(cr)
                worst = max(worst, (c_new, f"{cell} ({len(cr)})"))
            for k, (o, nn, t) in fam.items():
                print(
                    f"  {k}: old {o} new {nn} of {t}; new upper95 "
                    f"{100 * claims_upper95(nn, t):.2f} %"
                )
            print(f"  worst cell (new): {worst[0]} claims, {worst[1]}")
            for r in changed:
                print(f"  changed: {r['cell']} old {r['old']} new {r['new']}")
            continue
        eo = sum(r["old"] == r["T"] for r in rs)
        en = sum(r["new"] == r["T"] for r in rs)
        wo = sum(r["old"] is not None and r["old"] != r["T"] for r in rs)
        wn = sum(r["new"] is not None and r["new"] != r["T"] for r in rs)
        print(f"exact old {eo} new {en}; wrong old {wo} new {wn}")
        worst_p = (1.0, "")
        for cell, cr in cells.items():
            lost = sum(r["old"] == r["T"] and r["new"] != r["T"] for r in cr)
            won = sum(r["new"] == r["T"] and r["old"] != r["T"] for r in cr)
            p = sign_test_p(lost, won)
            worst_p = min(worst_p, (p, cell))
            if lost or won:
                print(f"  {cell}: exact +{won} -{lost} (sign p of the losses {p:.3g})")
        print(f"  smallest sign-test p of losses: {worst_p[0]:.3g} ({worst_p[1]})")
        moves = defaultdict(int)
        for r in changed:
            moves[(r["cell"].split("/")[0], r["T"], r["old"], r["new"])] += 1
        for key, count in sorted(moves.items(), key=lambda kv: -kv[1])[:30]:
            print(f"  changed {key}: {count}")


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[0] == "table":
        table(argv[1:])
    elif argv[0] == "verify":
        verify(int(argv[1]), int(argv[2]))
    else:
        run(argv[0], int(argv[1]), int(argv[2]), argv[3])
