"""Boundary sweep of docs/scenario-reference.md: for every numeric limit of every key,
a scenario file with the value at the limit, just inside and just outside.

Written from the reference alone: each row's limits (``>= L``, ``> L``, ``<= U``, ``< U``
in the key's own range, before any ``on load:`` rule) give the values; each value goes
into a small valid file of its section (below). A file the reference says is valid must
load and, when small enough, run (``ldpfleet run FILE -b memory``, exit 0); a file
outside must be refused on load with a message naming the key, the limit and the value.

    python scripts/scenario_boundary_sweep.py [--run] [--only SECTION] > sweep.tsv

Prints one tab-separated line per file: verdict (ok; on-load: in the key's range but
refused by the ``on load:`` rule its row states, read those by hand; PROBLEM), section,
key, value, expected (accept / refuse), what happened; the counts on stderr. Exit 1 when
any line is a PROBLEM. The files are small, so a value in range can be refused by an
on-load rule against the base file (secure_sum.dim = 100,000 > stream.steps = 60).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "docs" / "scenario-reference.md"

STREAM = """\
[scenario]
name = "sweep"
seed = 1
[fleet]
devices = 4
[stream]
steps = 60
eps = 2.0
w = 5
[source]
kind = "synthetic"
bounds = [-2.0, 2.0]
period = 6
"""
CSV_SOURCE = f"""\
[source]
kind = "csv"
path = "{ROOT}/data/uci-occupancy/datatest.txt"
column = "Temperature"
bounds = [18.0, 26.0]
"""
PERIODIC_SOURCE = """\
[source]
kind = "periodic"
dataset = "darwin"
"""
GCDP = f"""\
[scenario]
name = "sweep"
seed = 1
[fleet]
devices = 5
[stream]
steps = 60
mechanism = "raw"
[source]
kind = "csv"
path = "{ROOT}/data/uci-occupancy/datatest.txt"
columns = ["Temperature", "Humidity", "Light", "CO2", "HumidityRatio"]
column_bounds = [[18.0, 26.0], [15.0, 40.0], [0.0, 1000.0], [400.0, 1600.0], [0.002, 0.007]]
[gcdp]
eps_rel = 1.0
window = 30
calibration_path = "{ROOT}/data/uci-occupancy/datatraining.txt"
"""
CADR = """\
[scenario]
name = "sweep"
seed = 1
[graph]
source = "barabasi_albert:n=30,m=2,seed=1"
[cadr]
processes = 1
"""


def _with_line(text: str, section: str, line: str) -> str:
    """``text`` with ``line`` (``key = value``) in ``[section]``: the base's own setting of
    that key replaced, the section added when missing (``[cpr]`` with reconstruct "cpr")."""
    key = line.split(" = ")[0]
    header = f"[{section}]\n"
    if header in text:
        start = text.index(header) + len(header)
        end = text.find("\n[", start)
        end = len(text) if end < 0 else end + 1
        body = re.sub(rf"(?m)^{key} = .*\n", "", text[start:end])
        return text[:start] + line + "\n" + body + text[end:]
    if section == "cpr":
        text = text.replace("w = 5\n", 'w = 5\nreconstruct = "cpr"\n')
    return text + header + line + "\n"


def scenario_text(title: str, key: str, value: str) -> str:
    """A small valid file of the section ``title`` (the reference's heading) with
    ``key = value``."""
    line = f"{key} = {value}"
    if title.startswith("[source]"):
        kind = title.split('"')[1]
        source = {"synthetic": None, "csv": CSV_SOURCE, "periodic": PERIODIC_SOURCE}[kind]
        text = STREAM if source is None else STREAM.split("[source]")[0] + source
        return _with_line(text, "source", line)
    section = title.strip("[]")
    base = {"graph": CADR, "cadr": CADR, "gcdp": GCDP}.get(section, STREAM)
    return _with_line(base, section, line)


LIMIT = re.compile(r"(>=|<=|>|<) (-?[\d,]+(?:\.\d+)?(?:e-?\d+)?)")


def reference_limits() -> list[tuple[str, str, str, list[tuple[str, float]], str]]:
    """(section heading, key, type column, [(sign, number)], on-load rule) for every row
    with limits of its own (the part before ``on load:``, first option of a union)."""
    rows, title = [], None
    for line in REFERENCE.read_text().splitlines():
        heading = re.fullmatch(r"## `(.*)`", line)
        if heading:
            title = heading.group(1)
            continue
        cells = [cell.strip() for cell in line.split("|")[1:-1]]
        if len(cells) != 4 or not cells[0].startswith("`") or title is None:
            continue
        key, kind, _default, limits = cells
        own, _, rule = limits.partition("on load:")
        own = own.split(";")[0]
        if "item" in own or "length" in own or "matches" in own:
            continue  # lengths of strings and lists: not numbers of the key
        found = [(sign, _parse(number)) for sign, number in LIMIT.findall(own)]
        if found and ("integer" in kind or "number" in kind):
            rows.append((title, key.strip("`"), kind, found, rule.strip()))
    return rows


def _parse(number: str) -> int | float:
    """A limit as written (``9,223,372,036,854,775,807`` exactly, ``0.001``)."""
    text = number.replace(",", "")
    return int(text) if re.fullmatch(r"-?\d+", text) else float(text)


def _step(kind: str, number: float) -> float:
    """The smallest move from ``number`` the type can make (1 for integers)."""
    if kind.startswith("integer"):
        return 1
    return max(abs(number), 1.0) * 1e-6


def probe_values(kind: str, limits: list[tuple[str, float]]) -> list[tuple[float, bool]]:
    """(value, accepted according to the reference) at, just inside, just outside each
    limit; for integers the values are whole."""
    integer = kind.startswith("integer")
    values = []
    for sign, number in limits:
        step = _step(kind, number)
        inward = step if sign in (">=", ">") else -step
        for value in (number, number + inward, number - inward):
            if integer and value != int(value):
                continue
            values.append(value)
    ok = [
        all({">=": v >= n, ">": v > n, "<=": v <= n, "<": v < n}[sign] for sign, n in limits)
        for v in values
    ]
    unique = {}
    for value, accepted in zip(values, ok, strict=True):
        unique.setdefault(value, accepted)
    return list(unique.items())


def toml_number(kind: str, value: float) -> str:
    if kind.startswith("integer"):
        return str(int(value))
    text = repr(float(value))
    return text if ("." in text or "e" in text) else text + ".0"


def names_everything(message: str, key: str, limits, value_text: str) -> list[str]:
    """What a refusal's message leaves out of: the key, a limit, the value."""
    missing = []
    if key not in message:
        missing.append("key")
    forms = {value_text, value_text.rstrip("0").rstrip("."), f"{float(value_text):g}"}
    if not any(form in message for form in forms):
        missing.append("value")
    limit_forms = set()
    for _sign, number in limits:
        limit_forms |= {f"{number:g}", repr(number)}
        if number == int(number):
            limit_forms |= {f"{int(number):,}", str(int(number))}
    if not any(form in message for form in limit_forms):
        missing.append("limit")
    return missing


RUN_LIMITS = {  # accepted values too large for a small run: loaded only
    ("fleet", "devices"): 200, ("stream", "steps"): 5_000, ("stream", "w"): 5_000,
    ("stream", "step_seconds"): 0.2, ("faults", "hostile_messages"): 2_000,
    ("faults", "collector_delay"): 0.05, ("faults", "down_seconds"): 5,
    ("fleet", "gateway_devices"): 10**9, ("secure_sum", "dim"): 60,
    ("cadr", "peer_deadline_seconds"): 5, ("cadr", "max_rounds"): 10**9,
    ("gcdp", "window"): 60, ("gcdp", "calibration_steps"): 100_000,
    ("fleet", "connect_concurrency"): 10**9, ("cadr", "processes"): 2,
    ("collector", "partitions"): 4, ("fleet", "shards"): 4,
}  # fmt: skip


def _runnable(section: str, key: str, value: float) -> bool:
    limit = RUN_LIMITS.get((section, key))
    return limit is None or value <= limit


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run", action="store_true", help="run the accepted small files")
    parser.add_argument("--only", help="one section heading, e.g. [cadr]")
    args = parser.parse_args()

    from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

    problems = 0
    work = Path(tempfile.mkdtemp(prefix="sweep-"))
    counts: dict[str, int] = {}
    for title, key, kind, limits, rule in reference_limits():
        if args.only and title != args.only:
            continue
        section = "source" if title.startswith("[source]") else title.strip("[]")
        for value, accepted in probe_values(kind, limits):
            value_text = toml_number(kind, value)
            text = scenario_text(title, key, value_text)
            verdict, what = _check(text, section, key, value, value_text, limits, accepted,
                                   parse_scenario, ScenarioError, args.run, work)  # fmt: skip
            if verdict == "PROBLEM" and what.startswith("refused: ") and accepted and rule:
                verdict = "on-load"  # in range, refused by the rule the row states
            counts[verdict] = counts.get(verdict, 0) + 1
            problems += verdict == "PROBLEM"
            expected = "accept" if accepted else "refuse"
            print(f"{verdict}\t{title}\t{key}\t{value_text}\t{expected}\t{what}", flush=True)
    print("files: " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())), file=sys.stderr)
    return 1 if problems else 0


def _check(text, section, key, value, value_text, limits, accepted, parse, error_type,
           run: bool, work: Path) -> tuple[str, str]:  # fmt: skip
    try:
        parse(text)
    except error_type as error:
        message = str(error)
        if accepted:
            return "PROBLEM", f"refused: {message}"
        missing = names_everything(message, f"{section}.{key}", limits, value_text)
        if missing:
            return "PROBLEM", f"refused without the {', '.join(missing)}: {message}"
        return "ok", f"refused: {message}"
    if not accepted:
        return "PROBLEM", "loaded"
    if not run or not _runnable(section, key, value) or not math.isfinite(value):
        return "ok", "loaded"
    return _run(text, work)


def _run(text: str, work: Path) -> tuple[str, str]:
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    index = len(list(work.glob("*.toml")))
    scenario = work / f"s{index}.toml"
    scenario.write_text(text)
    out = work / f"out{index}"
    result = CliRunner().invoke(app, ["run", str(scenario), "-b", "memory", "-o", str(out)])
    if result.exit_code != 0:
        tail = " | ".join(result.output.strip().splitlines()[-3:])
        return "PROBLEM", f"ran: exit {result.exit_code}: {tail}"
    return "ok", "ran"


if __name__ == "__main__":
    sys.exit(main())
