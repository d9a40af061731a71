"""Compare two ``ldpfleet audit all`` JSON outputs (before / after a speed change).

Usage: ``python scripts/A_same_rows.py BEFORE.json AFTER.json [--markdown-out PREFIX]``

Checks that every row is identical but for ``cpu_seconds`` (mechanism, eps, eps_lb, counts,
thresholds, witness, verdict, ...: every key the JSON prints), renders both with the
command's own ``markdown_table`` (what ``audit all --markdown`` prints) and compares the two
tables byte for byte, then prints the CPU per entry before and after (sum of the entry's
audits' ``cpu_seconds``), largest first. Exit status 0 when the rows are the same, 1 if not.
"""

from __future__ import annotations

import argparse
import collections
import json
import sys

from ldpfleet.app.audit_cli import markdown_table


def _without_cpu(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "cpu_seconds"}


def _cpu_by_entry(rows: list[dict]) -> dict[str, float]:
    out: dict[str, float] = collections.defaultdict(float)
    for row in rows:
        out[row["mechanism"]] += row["cpu_seconds"]
    return out


def main(argv: list[str] | None = None) -> int:
    """Compare the two files; returns the exit status (0: the same rows)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--markdown-out", help="write PREFIX-before.md and PREFIX-after.md")
    args = parser.parse_args(argv)
    with open(args.before, encoding="utf-8") as f:
        before = json.load(f)
    with open(args.after, encoding="utf-8") as f:
        after = json.load(f)
    same = [_without_cpu(r) for r in before] == [_without_cpu(r) for r in after]
    table_before, table_after = markdown_table(before), markdown_table(after)
    if args.markdown_out:
        for name, text in (("before", table_before), ("after", table_after)):
            with open(f"{args.markdown_out}-{name}.md", "w", encoding="utf-8") as f:
                f.write(text + "\n")
    print(f"rows: {len(before)} before, {len(after)} after; every field but cpu_seconds "
          f"identical: {same}; markdown identical: {table_before == table_after}")  # fmt: skip
    cpu_before, cpu_after = _cpu_by_entry(before), _cpu_by_entry(after)
    print(f"{'entry':28s} {'before s':>9s} {'after s':>9s} {'after/before':>12s}")
    for entry in sorted(cpu_before, key=lambda e: -cpu_before[e]):
        b, a = cpu_before[entry], cpu_after.get(entry, float("nan"))
        ratio = a / b if b else float("nan")
        print(f"{entry:28s} {b:9.2f} {a:9.2f} {ratio:12.2f}")
    total_b, total_a = sum(cpu_before.values()), sum(cpu_after.values())
    print(f"{'total':28s} {total_b:9.2f} {total_a:9.2f} {total_a / total_b:12.2f}")
    return 0 if same and table_before == table_after else 1


if __name__ == "__main__":
    sys.exit(main())
