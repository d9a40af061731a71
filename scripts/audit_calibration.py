"""Calibration of the privacy audit on fresh seeds (docs/audit.md, "Calibration on fresh seeds").

The audit states a confidence: on a CORRECT mechanism, one audit at level gamma reports
"violation" with probability <= gamma. This script checks that statement per battery entry:
every entry at each budget of ``--eps``, on the seeds ``--first-seed .. --first-seed + K - 1``
(K = ``--seeds``, or ``--heavy-seeds`` for the whole-path entries), one audit per (entry,
eps, seed) at ``--gamma`` (not family-wise: each audit is the single ``ldpfleet audit ENTRY
--eps E --seed S`` a user would run), the entry's default trials.

    nice -n 5 python scripts/audit_calibration.py run --out /tmp/cal.jsonl --jobs 2
    python scripts/audit_calibration.py table /tmp/cal.jsonl

``run`` appends one JSON line per audit to ``--out`` and skips the (entry, eps, seed) already
there, so an interrupted run resumes. The order is by cost, cheapest first: seed k of an
entry costing c CPU seconds per audit runs at "time" (k + 1) c, so a run stopped at any time
has the most seeds of the cheap entries. ``table``
prints the markdown table: entry, eps, seeds, violations and the binomial tail
P(X >= violations) for X ~ Bin(seeds, gamma) — an upper bound on the chance of that many
false alarms from a correct mechanism (each audit's false-alarm rate is <= gamma).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import defaultdict
from pathlib import Path

GAU_DELTA = 1e-5  # as ``ldpfleet audit all`` (Gau-DP is (eps, delta)-DP)
# whole paths and the 40,000-run dropout canary: fewer seeds (--heavy-seeds)
HEAVY = ("fleet-stream", "degree-", "secagg", "cadr-theta-count-dropout")
# claims that do not depend on --eps: audited at the first budget only
EPS_FREE = ("secagg",)
UNKNOWN_COST, UNKNOWN_HEAVY_COST = 5.0, 60.0  # CPU seconds per audit before one is measured


def _entries() -> list[str]:
    from ldpfleet.app.audit_cli import _battery

    return list(_battery().BATTERY)


def _one(task: tuple[str, float, int, float]) -> dict:
    """One audit's row: verdict, bound, witness and the counts it certified."""
    entry, eps, seed, gamma = task
    from ldpfleet.audits import run_audit

    delta = GAU_DELTA if entry == "gau-dp" else 0.0
    started, cpu = time.perf_counter(), time.process_time()
    r = run_audit(entry, eps, delta=delta, gamma=gamma, seed=seed)
    return {
        "entry": entry,
        "eps": eps,
        "seed": seed,
        "gamma": gamma,
        "eps_claimed": r.eps_claimed,
        "eps_lb": r.eps_lb if math.isfinite(r.eps_lb) else None,
        "verdict": r.verdict,
        "canary": r.canary,
        "witness": r.witness,
        "threshold": r.threshold if math.isfinite(r.threshold) else str(r.threshold),
        "tail": r.tail,
        "direction": r.privacy_direction,
        "hits": [r.hits_numerator, r.n_numerator, r.hits_denominator, r.n_denominator],
        "cpu_seconds": round(time.process_time() - cpu, 2),
        "wall_seconds": round(time.perf_counter() - started, 2),
    }


def _rows(out: Path) -> list[dict]:
    if not out.exists():
        return []
    return [json.loads(line) for line in out.read_text().splitlines() if line.strip()]


def _costs(rows: list[dict], entries: list[str]) -> dict[str, float]:
    """CPU seconds per audit of each entry: the mean of its rows so far, else a guess
    (``UNKNOWN_COST``, ``UNKNOWN_HEAVY_COST``)."""
    spent: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        spent[r["entry"]].append(r["cpu_seconds"])
    guess = {e: UNKNOWN_HEAVY_COST if e.startswith(HEAVY) else UNKNOWN_COST for e in entries}
    return {e: max(0.05, sum(spent[e]) / len(spent[e])) if spent[e] else guess[e] for e in entries}


def _tasks(args) -> list[tuple[str, float, int, float]]:
    """The audits still to run, cheapest seeds first: seed k of an entry costing c CPU
    seconds per audit is run at "time" (k + 1) c, so a run stopped at any time has the
    most seeds of the cheap entries and at least one of each entry whose cost it reached."""
    entries = args.only or _entries()
    rows = _rows(args.out)
    done = {(r["entry"], r["eps"], r["seed"]) for r in rows}
    cost = _costs(rows, entries)
    keyed = []
    for entry in entries:
        cap = args.heavy_seeds if entry.startswith(HEAVY) else args.seeds
        budgets = args.eps[:1] if entry in EPS_FREE else args.eps
        for k in range(cap):
            seed = args.first_seed + k
            keyed += [
                ((k + 1) * cost[entry], entry, eps, seed)
                for eps in budgets
                if (entry, eps, seed) not in done
            ]
    keyed.sort(key=lambda t: t[0])
    return [(entry, eps, seed, args.gamma) for _, entry, eps, seed in keyed]


def run(args) -> None:
    """Run the missing audits, appending each row to ``args.out`` as it finishes."""
    from concurrent.futures import ProcessPoolExecutor, as_completed

    tasks = _tasks(args)
    print(f"{len(tasks)} audits to run", file=sys.stderr, flush=True)
    with args.out.open("a") as out, ProcessPoolExecutor(max_workers=args.jobs) as pool:
        futures = {pool.submit(_one, task): task for task in tasks}
        for index, future in enumerate(as_completed(futures), start=1):
            row = future.result()
            out.write(json.dumps(row) + "\n")
            out.flush()
            flag = "  VIOLATION" if row["verdict"] == "violation" else ""
            print(
                f"{index}/{len(tasks)} {row['entry']} eps {row['eps']:g} seed {row['seed']}: "
                f"eps_lb {row['eps_lb']} ({row['cpu_seconds']} s){flag}",
                file=sys.stderr,
                flush=True,
            )


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Bin(n, p)."""
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


FLAG_TAIL = 0.02  # 5 of 20 at gamma = 0.05: P = 0.016 (the brief's flag rule)


def verdict(violations: int, seeds: int, gamma: float) -> str:
    """``flag`` when so many violations are unlikely (< ``FLAG_TAIL``) at rate gamma."""
    if binomial_tail(violations, seeds, gamma) < FLAG_TAIL:
        return "flag: investigate"
    return "chance (within gamma)" if violations else "no violation"


def table(path: Path) -> str:
    """The calibration table of the rows in ``path`` (battery order, then eps)."""
    rows = _rows(path)
    groups: dict[tuple[str, float], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["entry"], r["eps"])].append(r)
    order = {name: i for i, name in enumerate(_entries())}
    lines = [
        "| entry | ε | claim | seeds | violations | P(≥ that many) at γ | median ε_LB "
        "| max ε_LB | CPU s per audit | verdict |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (entry, eps), group in sorted(groups.items(), key=lambda g: (order.get(g[0][0]), g[0][1])):
        bounds = sorted(r["eps_lb"] if r["eps_lb"] is not None else -math.inf for r in group)
        hits = sum(r["verdict"] == "violation" for r in group)
        gamma = group[0]["gamma"]
        cpu = sum(r["cpu_seconds"] for r in group) / len(group)
        lines.append(
            f"| {entry} | {eps:g} | {group[0]['eps_claimed']:g} | {len(group)} | {hits} | "
            f"{binomial_tail(hits, len(group), gamma):.3g} | {bounds[len(bounds) // 2]:.3f} | "
            f"{bounds[-1]:.3f} | {cpu:.1f} | {verdict(hits, len(group), gamma)} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    go = sub.add_parser("run", help="run the audits (appends to --out)")
    go.add_argument("--out", type=Path, required=True)
    go.add_argument("--eps", type=lambda s: [float(e) for e in s.split(",")], default=[1.0, 4.0])
    go.add_argument("--seeds", type=int, default=20, help="seeds per cheap entry")
    go.add_argument("--heavy-seeds", type=int, default=20, help="seeds per whole-path entry")
    go.add_argument("--first-seed", type=int, default=1000)
    go.add_argument("--gamma", type=float, default=0.05)
    go.add_argument("--jobs", type=int, default=2, choices=(1, 2))
    go.add_argument("--only", action="append", help="this entry only (repeat)")
    show = sub.add_parser("table", help="print the calibration table")
    show.add_argument("path", type=Path)
    args = parser.parse_args(argv)
    if args.command == "run":
        run(args)
    else:
        print(table(args.path))


if __name__ == "__main__":
    main()
