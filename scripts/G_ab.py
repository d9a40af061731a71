"""Helper G: step 3c's named-period masked margin (docs/preregistration/G-named-masked-margin.md).

One pass of ``detect_period`` per stream with ``VETO_NAMED_MARGIN = None`` (OLD: the vetoed
multiple's masked check alone decides); where a multiple was vetoed it also records the named
period's masked margin (log p - few-cycles penalty - threshold, < 0 passes) and the answer
with the named check passed (``VETO_NAMED_MARGIN = -inf``). The answer under the rule with
margin M is then ``pass`` where ``margin <= -M``, else ``old`` (the rule changes nothing else),
so one run serves every M. Streams: helper J's generators (scripts/J_ab.py).

    python scripts/G_ab.py run MODE SEED TRIALS OUT.jsonl  # daily grid aperiodic clean worst
    python scripts/G_ab.py table M OUT.jsonl ...            # J's table, NEW = the rule at M
    python scripts/G_ab.py margins OUT.jsonl ...            # streams the rule could change
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import J_ab
from ldpfleet.app.bench_cpr_grid import claims_upper95, sign_test_p
from ldpfleet.collector import period_search
from ldpfleet.collector.period import detect_period

_cap: dict = {}
_renamed = period_search._Search.renamed


def _capture(self, period, settled, harmonics):
    out = _renamed(self, period, settled, harmonics)
    _cap.update(search=self, named=out)
    return out


period_search._Search.renamed = _capture


def _answer(y, margin: float | None) -> int | None:
    before = period_search.VETO_NAMED_MARGIN
    period_search.VETO_NAMED_MARGIN = margin
    try:
        _cap.clear()
        return detect_period(y).period
    finally:
        period_search.VETO_NAMED_MARGIN = before


def measure(y) -> dict:
    """old answer, veto seen at decide, the named period, its margin and the answer if it passes."""
    old = _answer(y, None)
    s = _cap.get("search")
    if s is None or s.vetoed is None:
        return {"old": old, "veto": False}
    named = _cap["named"]
    margin = s.named_margin(named)
    passed = _answer(y, float("-inf"))
    return {"old": old, "veto": True, "named": named, "margin": margin, "pass": passed}


GENERATORS = {
    "aperiodic": lambda seed, t: J_ab._aperiodic(seed, t, False),
    "clean": lambda seed, t: J_ab._aperiodic(seed, t, True),
    "worst": lambda seed, t: J_ab._aperiodic(seed, t, False, worst=True),
    "daily": lambda seed, t: J_ab._daily(seed, t),
    "grid": lambda seed, t: J_ab._grid(seed, t),
}


def run(mode: str, seed: int, trials: int, out: str) -> None:
    """Write one JSON row per stream."""
    with open(out, "w") as f:
        for row, truth, y in GENERATORS[mode](seed, trials):
            f.write(json.dumps({**row, "T": truth, **measure(y)}) + "\n")


def new_answer(r: dict, m: float) -> int | None:
    """The answer under the rule with margin ``m``."""
    if r["veto"] and r["margin"] <= -m:
        return r["pass"]
    return r["old"]


def load(paths: list[str]) -> list[dict]:
    rows = []
    for p in paths:
        with open(p) as f:
            rows += [json.loads(line) for line in f]
    return rows


def table(m: float, paths: list[str]) -> None:
    """J's table with NEW = the rule at ``m``; rows get ``new`` and feed J_ab.table's logic."""
    rows = load(paths)
    for r in rows:
        r["new"] = new_answer(r, m)
    by_block = defaultdict(list)
    for r in rows:
        by_block[r["block"]].append(r)
    for block, rs in by_block.items():
        vetoes = sum(r["veto"] for r in rs)
        changed = [r for r in rs if r["old"] != r["new"]]
        print(f"## {block} (M = {m}): {len(rs)} streams, {vetoes} vetoes, {len(changed)} changed")
        cells = defaultdict(list)
        for r in rs:
            cells[r["cell"]].append(r)
        if rs[0]["T"] is None:
            co = sum(r["old"] is not None for r in rs)
            cn = sum(r["new"] is not None for r in rs)
            print(
                f"claims old {co} new {cn} of {len(rs)} (limit old + max(3, 10 %): "
                f"{co + max(3, int(0.1 * co))})"
            )
            fam = defaultdict(lambda: [0, 0, 0])
            worst = (0, "")
            for cell, cr in cells.items():
                k = cell.split("/")[0]
                c_new = sum(r["new"] is not None for r in cr)
                fam[k][0] += sum(r["old"] is not None for r in cr)
                fam[k][1] += c_new
                fam[k][2] += len(cr)
                worst = max(worst, (c_new, f"{cell} ({len(cr)})"))
                c_old = sum(r["old"] is not None for r in cr)
                if len(cr) >= 1000:  # item 3b (worst): its two cells
                    print(
                        f"  cell {cell}: old {c_old} new {c_new} of {len(cr)} (limit "
                        f"{c_old + max(3, int(0.1 * c_old))}); new upper95 "
                        f"{100 * claims_upper95(c_new, len(cr)):.2f} %"
                    )
            for k, (o, nn, t) in fam.items():
                print(
                    f"  {k}: old {o} new {nn} of {t}; new upper95 "
                    f"{100 * claims_upper95(nn, t):.2f} %"
                )
            print(f"  worst cell (new): {worst[0]} claims, {worst[1]}")
            for r in changed:
                print(f"  changed: {r['cell']} {r['old']} -> {r['new']} margin {r['margin']:.2f}")
            continue
        eo = sum(r["old"] == r["T"] for r in rs)
        en = sum(r["new"] == r["T"] for r in rs)
        wo = sum(r["old"] is not None and r["old"] != r["T"] for r in rs)
        wn = sum(r["new"] is not None and r["new"] != r["T"] for r in rs)
        ve = [r for r in rs if r["veto"]]
        veto_old = sum(r["old"] == r["T"] for r in ve)
        veto_new = sum(r["new"] == r["T"] for r in ve)
        print(
            f"exact old {eo} new {en}; wrong old {wo} new {wn}; "
            f"veto streams exact {veto_old} -> {veto_new}"
        )
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


def margins(paths: list[str]) -> None:
    """Every stream whose answer the rule could change (veto, pass != old), with its margin."""
    for r in load(paths):
        if r["veto"] and r["pass"] != r["old"]:
            print(
                f"{r['block']} {r['cell']} T {r['T']} old {r['old']} pass {r['pass']} "
                f"named {r['named']} margin {r['margin']:.2f}"
            )


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[0] == "table":
        table(float(argv[1]), argv[2:])
    elif argv[0] == "margins":
        margins(argv[1:])
    else:
        run(argv[1 - 1 + 1], int(argv[2]), int(argv[3]), argv[4])
