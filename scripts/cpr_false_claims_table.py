"""Markdown table of ``cpr_false_claims_family.py`` outputs (JSON lines), one column group
per file: claims per cell and the one-sided 95 % upper bound of the cell's rate.

Run: ``python scripts/cpr_false_claims_table.py LABEL=FILE.jsonl ...``.
"""

from __future__ import annotations

import json
import sys

from ldpfleet.app.bench_cpr import claims_upper95


def load(path: str) -> dict[tuple, dict]:
    with open(path) as handle:
        rows = [json.loads(line) for line in handle if line.strip()]
    return {(r["kind"], r["n"], r["eps0"]): r for r in rows}


def cell(r: dict | None) -> str:
    if r is None:
        return "–"
    return f"{r['claims']} ({100 * r['upper95']:.2f})"


def main() -> None:
    runs = [(arg.split("=", 1)[0], load(arg.split("=", 1)[1])) for arg in sys.argv[1:]]
    keys = sorted({k for _, d in runs for k in d}, key=lambda k: (k[0], k[1], k[2]))
    kinds = list(dict.fromkeys(k[0] for k in keys))
    lengths = sorted({k[1] for k in keys})
    eps0s = sorted({k[2] for k in keys})
    head = " | ".join(f"{label} ε0 = {e:g}" for e in eps0s for label, _ in runs)
    print(f"| kind | n | {head} |")
    print("|---|---|" + "---|" * (len(eps0s) * len(runs)))
    for kind in kinds:
        for n in lengths:
            cells = " | ".join(cell(d.get((kind, n, e))) for e in eps0s for _, d in runs)
            print(f"| {kind} | {n:,} | {cells} |")
    for label, d in runs:
        claims = sum(r["claims"] for r in d.values())
        trials = sum(r["trials"] for r in d.values())
        worst = max(d.values(), key=lambda r: r["claims"])
        upper = claims_upper95(claims, trials)
        print(
            f"\n{label}: {claims} claims of {trials:,} streams ({100 * claims / trials:.3f} %, "
            f"95 % upper {100 * upper:.3f} %); worst cell {worst['kind']}/{worst['n']}/"
            f"{worst['eps0']:g}: {worst['claims']} of {worst['trials']}"
        )
        per_kind: dict[str, list[int]] = {}
        for r in d.values():
            acc = per_kind.setdefault(r["kind"], [0, 0])
            acc[0] += r["claims"]
            acc[1] += r["trials"]
        print(
            "per kind: " + ", ".join(f"{k} {100 * c / t:.2f} %" for k, (c, t) in per_kind.items())
        )


if __name__ == "__main__":
    main()
