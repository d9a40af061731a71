"""The pass criteria of docs/preregistration/E3-long-divisors.md, read off the OLD and NEW
outputs of its five commands (helper E, round 3).

Run: ``python scripts/E3_ab_compare.py DIR`` with DIR holding ``ev-target-{old,new}.jsonl``,
``ev-table-{old,new}.jsonl``, ``ev-heldout-{old,new}.jsonl``, ``ev-null-{old,new}.jsonl``."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

NOT_NOISE = ("renewal_onoff", "two_sines")


def _load(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _sign_p(losses: int, gains: int) -> float:
    m = losses + gains
    return sum(math.comb(m, i) for i in range(losses, m + 1)) / 2**m if m else 1.0


def target(old: list[dict], new: list[dict]) -> tuple[bool, str]:
    def score(rows):
        exact = far = 0
        for r in rows:
            res = r["period"] / r["cycles"]  # T^2 / n
            exact += sum(a == r["period"] for a in r["ours"])
            far += sum(a is not None and abs(a - r["period"]) > res for a in r["ours"])
        return exact, far

    (eo, fo), (en, fn) = score(old), score(new)
    total = sum(len(r["ours"]) for r in old)
    ok = en >= eo + 12 and fn <= fo
    return ok, f"(a) target: exact {eo} -> {en} of {total}, far {fo} -> {fn}"


def table(old: list[dict], new: list[dict]) -> tuple[bool, str]:
    eo = sum(r["hits"]["ours"] for r in old)
    en = sum(r["hits"]["ours"] for r in new)
    worst, lost_cells, changed = 1.0, [], 0
    for a, b in zip(old, new, strict=True):
        t = a["period"]
        losses = sum(x == t and y != t for x, y in zip(a["answers"], b["answers"], strict=True))
        gains = sum(y == t and x != t for x, y in zip(a["answers"], b["answers"], strict=True))
        changed += sum(x != y for x, y in zip(a["answers"], b["answers"], strict=True))
        p = _sign_p(losses, gains)
        worst = min(worst, p)
        if p < 0.05:
            lost_cells.append((a["source"], t, a["n"], a["eps0"], losses, gains))
    ok = en >= eo and not lost_cells
    return ok, (
        f"(b) table: exact {eo} -> {en} of {sum(r['trials'] for r in old)}, answers changed "
        f"{changed}, cells lost (p < 0.05) {lost_cells}, smallest loss p {worst:.3g}"
    )


def heldout(old: list[dict], new: list[dict]) -> tuple[bool, str]:
    def score(rows):
        exact = sum(r["hits"]["ours"] for r in rows)
        below = sum(min(r["below_p"].values()) < 0.05 for r in rows)
        return exact, below

    (eo, bo), (en, bn) = score(old), score(new)
    ok = en >= eo and bn <= bo
    return ok, f"(c) held-out: exact {eo} -> {en}, cells below a baseline {bo} -> {bn}"


def null(old: list[dict], new: list[dict]) -> tuple[bool, str]:
    co = sum(r["claims"] for r in old if r["kind"] not in NOT_NOISE)
    cn = sum(r["claims"] for r in new if r["kind"] not in NOT_NOISE)
    trials = sum(r["trials"] for r in old if r["kind"] not in NOT_NOISE)
    extra = {
        k: (
            sum(r["claims"] for r in old if r["kind"] == k),
            sum(r["claims"] for r in new if r["kind"] == k),
        )
        for k in NOT_NOISE
    }
    ok = cn <= co + 2
    return ok, f"(d) aperiodic: claims {co} -> {cn} of {trials}; {extra} (old, new)"


def speed(old: list[dict], new: list[dict]) -> tuple[bool, str]:
    mo = max(r["cpu_ms_max"] for r in old if r["n"] == 10000)
    mn = max(r["cpu_ms_max"] for r in new if r["n"] == 10000)
    med_o = sorted(r["cpu_ms_median"] for r in old if r["n"] == 10000)
    med_n = sorted(r["cpu_ms_median"] for r in new if r["n"] == 10000)
    ok = mn <= 1.2 * mo and mn < 50.0
    return ok, (
        f"(e) speed at 10,000 reports: max of cell maxima {mo:.1f} -> {mn:.1f} ms; median of "
        f"cell medians {med_o[len(med_o) // 2]:.1f} -> {med_n[len(med_n) // 2]:.1f} ms"
    )


def main(argv: list[str]) -> None:
    d = Path(argv[0])
    checks = [
        target(_load(d / "ev-target-old.jsonl"), _load(d / "ev-target-new.jsonl")),
        table(_load(d / "ev-table-old.jsonl"), _load(d / "ev-table-new.jsonl")),
        heldout(_load(d / "ev-heldout-old.jsonl"), _load(d / "ev-heldout-new.jsonl")),
        null(_load(d / "ev-null-old.jsonl"), _load(d / "ev-null-new.jsonl")),
        speed(_load(d / "ev-table-old.jsonl"), _load(d / "ev-table-new.jsonl")),
    ]
    for ok, line in checks:
        print("PASS" if ok else "FAIL", line)
    print("ALL PASS" if all(ok for ok, _ in checks) else "NOT PASSED")


if __name__ == "__main__":
    main(sys.argv[1:])
