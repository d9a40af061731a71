"""Compare two renderings of the period-detection grid (``ldpfleet bench cpr --grid
--markdown``) cell by cell: the changed cells, the cells below a baseline, the exact totals
and the aperiodic false-claim rows.

    python scripts/D_grid_diff.py OLD.md NEW.md

OLD / NEW: any markdown file holding the grid's tables (docs/cpr-grid.md itself works: the
tables are found by their header rows). Counts are recovered from the printed percentages
(40 trials a cell: one trial is 2.5 %, printed to 1 %, so ``round(pct * trials / 100)`` is
exact; 200 aperiodic trials printed to 0.1 %); pass ``--trials`` / ``--aperiodic-trials``
for other sizes. Stdlib only; prints markdown.
"""

from __future__ import annotations

import argparse
import re
import sys

CELL_HEADER = "| source | T | cycles | ε0 | jitter | drift | ours | FV | ACF |"
NULL_HEADER = "| input | n | ε0 | detect_period | folded variance | autocorrelation |"
MARKS = ("✖", "◂◂", "◂")  # clearly below, below (p < 0.05), lower raw count only


def _table(lines: list[str], header: str) -> list[list[str]]:
    """The rows (cells split on '|') of the first table whose header starts with ``header``."""
    for i, line in enumerate(lines):
        if line.startswith(header):
            rows = []
            for row in lines[i + 2 :]:
                if not row.startswith("|"):
                    break
                rows.append([c.strip() for c in row.strip().strip("|").split("|")])
            return rows
    raise SystemExit(f"no table with header {header!r}")


def _mark(cell: str) -> tuple[int, str]:
    """'30 ✖' -> (30, '✖'); '45' -> (45, '')."""
    m = re.fullmatch(r"(\d+)\s*(✖|◂◂|◂)?", cell)
    if not m:
        raise SystemExit(f"unreadable accuracy cell {cell!r}")
    return int(m.group(1)), m.group(2) or ""


def parse(path: str, trials: int, aperiodic_trials: int) -> tuple[dict, dict]:
    """({cell key: (ours, fv, acf counts, mark)}, {aperiodic key: claims of ours})."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    cells = {}
    for c in _table(lines, CELL_HEADER):
        key = tuple(c[:6])
        if key in cells:
            raise SystemExit(f"{path}: duplicate cell {key}")
        ours, mark = _mark(c[6])
        counts = [round(p * trials / 100) for p in (ours, int(c[7]), int(c[8]))]
        cells[key] = (*counts, mark)
    null = {}
    for c in _table(lines, NULL_HEADER):
        key = tuple(c[:3])
        null[key] = round(float(c[3]) * aperiodic_trials / 100)
    return cells, null


def _name(key: tuple) -> str:
    source, period, cycles, eps0, jitter, drift = key
    extra = "" if (jitter, drift) == ("0.02", "0") else f" jitter {jitter} drift {drift}"
    return f"{source} ({period}, {cycles}) ε0 {eps0}{extra}"


def _fmt(v: tuple) -> str:
    ours, fv, acf, mark = v
    return f"{ours} / {fv} / {acf}{' ' + mark if mark else ''}"


def _summary(cells: dict) -> dict:
    marks = [v[3] for v in cells.values()]
    return {
        "cells": len(cells),
        "at least both (no ◂◂/✖)": sum(m not in ("◂◂", "✖") for m in marks),
        "below (◂◂ or ✖)": sum(m in ("◂◂", "✖") for m in marks),
        "clearly below (✖)": marks.count("✖"),
        "lower raw count (any mark)": sum(bool(m) for m in marks),
        "exact ours": sum(v[0] for v in cells.values()),
        "exact folded variance": sum(v[1] for v in cells.values()),
        "exact autocorrelation": sum(v[2] for v in cells.values()),
    }


def diff(old_path: str, new_path: str, trials: int, aperiodic_trials: int) -> str:
    old, old_null = parse(old_path, trials, aperiodic_trials)
    new, new_null = parse(new_path, trials, aperiodic_trials)
    if old.keys() != new.keys() or old_null.keys() != new_null.keys():
        missing = sorted(set(old) ^ set(new)) + sorted(set(old_null) ^ set(new_null))
        raise SystemExit(f"the two grids have different cells: {missing[:10]}")
    out = [f"Old: `{old_path}`; new: `{new_path}` (counts of {trials} trials).", ""]
    so, sn = _summary(old), _summary(new)
    out += ["| figure | old | new |", "|---|---|---|"]
    out += [f"| {k} | {so[k]} | {sn[k]} |" for k in so]
    below = lambda c: {k for k, v in c.items() if v[3] in ("◂◂", "✖")}  # noqa: E731
    for title, keys in (
        ("Below a baseline in both", sorted(below(old) & below(new))),
        ("Newly below", sorted(below(new) - below(old))),
        ("No longer below", sorted(below(old) - below(new))),
    ):
        out += ["", f"**{title}** ({len(keys)}; ours / FV / ACF, old → new)", ""]
        out += [f"- {_name(k)}: {_fmt(old[k])} → {_fmt(new[k])}" for k in keys]
    changed = [k for k in old if old[k] != new[k]]
    same = len(old) - len(changed)
    moved = [k for k in changed if old[k][:3] != new[k][:3]]
    out += [
        "",
        f"**Changed cells**: {len(changed)} of {len(old)} ({same} identical; "
        f"{len(moved)} with a different count, {len(changed) - len(moved)} only a mark)",
        "",
        "| cell | old ours / FV / ACF | new ours / FV / ACF | Δ ours |",
        "|---|---|---|---|",
    ]
    for k in changed:
        out.append(f"| {_name(k)} | {_fmt(old[k])} | {_fmt(new[k])} | {new[k][0] - old[k][0]:+d} |")
    up = sum(new[k][0] > old[k][0] for k in moved)
    down = sum(new[k][0] < old[k][0] for k in moved)
    out += ["", f"Ours higher in {up} cells, lower in {down}."]
    total_old, total_new = sum(old_null.values()), sum(new_null.values())
    n_null = len(old_null) * aperiodic_trials
    out += [
        "",
        f"**Aperiodic rows** (claims of {aperiodic_trials} by detect_period): total "
        f"{total_old} → {total_new} of {n_null} "
        f"({100 * total_old / n_null:.3f} → {100 * total_new / n_null:.3f} %); worst cell "
        f"{max(old_null.values())} → {max(new_null.values())} of {aperiodic_trials}",
        "",
        "| input | n | ε0 | old | new |",
        "|---|---|---|---|---|",
    ]
    for k in old_null:
        if old_null[k] != new_null[k]:
            out.append(f"| {' | '.join(k)} | {old_null[k]} | {new_null[k]} |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--aperiodic-trials", type=int, default=200)
    a = ap.parse_args(argv)
    print(diff(a.old, a.new, a.trials, a.aperiodic_trials))
    return 0


if __name__ == "__main__":
    sys.exit(main())
