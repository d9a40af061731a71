"""Pin of helper G's pure refactor (split long functions in app/report.py, app/cli_summary.py,
scenarios/runner.py, scenarios/sides.py, collector/service.py).

    python scripts/G_pin.py record OUT.json [--only report,summary,runs] [--fresh]
    python scripts/G_pin.py check OUT.json  [--only ...]

Sections:

- ``report``: ``app.report.build_report`` of run directories recorded ONCE under
  ``/tmp/G-runs/NAME/out`` (``record`` makes them when absent or with ``--fresh``; ``check``
  reuses them), so the page is a function of the same results.json / ledger.json / trace /
  npz files before and after. Runs (``ldpfleet run``, memory broker, fixed ``--run`` id):
  quickstart, periodic-sensing (CPR), a small CADR-LDP fleet (BA graph, 120 nodes),
  occupancy-release (GC-DP), secure-sum, faults. Outcome: the whole HTML text (nothing
  masked: the page holds no clock reading of its own) — its SHA-256 and length; ``record``
  also keeps the pages under ``OUT.pages/`` for a diff.
- ``summary``: ``app.cli._summary_table(results)`` rendered by rich at width 110 (no colour)
  for the same results.json files (the error's type and message when it refuses one).
- ``runs``: fresh runs, each time: the quickstart (memory), a small stream on the embedded
  broker with two fleet shards (``ldpfleet run`` starts the collector side as a process and
  merges the sides: ``scenarios.sides.merge_stream_outputs``), a small GC-DP release and a
  small secure sum on the embedded broker; results.json without the fields that measure the
  machine (``_VARYING``: times, memory, CPU, latencies, ports, pids, hosts, the collector's
  peak queue) and, on a real broker, the trace's message and ack counts (acks follow arrival
  timing); ledger.json likewise; the SHA-256 of every ``.npz`` array.
- ``rerun``: the report runs above made again (``check``) against the outputs the code before
  the refactor wrote (``record`` reads ``/tmp/G-runs``), compared as in ``runs``: the
  one-process runner (``scenarios.runner.stream_results``) on CPR, GC-DP, secure sum, faults.
- ``odd``: the branches the runs above do not reach, old against new in one go (``BEFORE``'s
  ``app/report.py`` and ``app/cli_summary.py`` loaded beside the worktree's): reports of
  copies of the recorded runs under ``/tmp/G-odd`` with worst spends that differ, all
  equal below the budget, one over it, totals that differ, CPR series shorter than the
  window, no truth sample, a CADR θ configured or from the rule; summaries with
  reconnects, faults without a hostile client, an aborted secure sum, a bare CPR entry.
  Outcome: ``same`` (old page/text == new) and the new one's SHA-256 / text.

JSON with sorted keys. Helper G, 2026-12-06.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BEFORE = "e5fcede"  # main when helper G branched: the code before the refactor
RUNS_DIR = Path("/tmp/G-runs")
FRESH_DIR = Path("/tmp/G-pin-runs")
CLI = str(Path(sys.executable).parent / "ldpfleet")

CADR = """
[scenario]
name = "cadr-small"
seed = 3
[graph]
source = "barabasi_albert:n=120,m=3,seed=2"
[cadr]
method = "clip"
eps = 3.0
alpha = 0.1
theta = "auto-dev"
pipeline = "dp"
"""

QUICK = (ROOT / "scenarios" / "quickstart.toml").read_text()
STREAM = QUICK.replace("devices = 50", "devices = 8").replace("steps = 200", "steps = 40")
STREAM_2 = STREAM.replace("[fleet]\n", "[fleet]\nshards = 2\n", 1)
GCDP = (
    (ROOT / "scenarios" / "occupancy-release.toml")
    .read_text()
    .replace("devices = 20", "devices = 10")
    .replace("steps = 1800", "steps = 120")
)
SECURE = (
    STREAM
    + """
[secure_sum]
dim = 4
clip = [5.0, 35.0]
dropout = 0.25
dropout_stage = "after_shares"
stage_timeout = 60.0
"""
)

# name: (scenario text or a shipped file, broker)
REPORT_RUNS = {
    "quickstart": ("quickstart.toml", "memory"),
    "periodic-sensing": ("periodic-sensing.toml", "memory"),
    "cadr-small": (CADR, "memory"),
    "occupancy-release": ("occupancy-release.toml", "memory"),
    "secure-sum": ("secure-sum.toml", "memory"),
    "faults": ("faults.toml", "memory"),
}
FRESH_RUNS = {
    "quickstart-memory": ("quickstart.toml", "memory"),
    "stream-embedded-2shards": (STREAM_2, "embedded"),
    "gcdp-embedded": (GCDP, "embedded"),
    "secure-embedded": (SECURE, "embedded"),
}
_VARYING = (
    "seconds", "peak_rss", "cpu", "rate", "per_second", "started", "finished", "_at",
    "timeline", "latency", "_ms", "public_key", "port", "pid", "host", "url", "elapsed",
    "memory", "rss", "wall", "peak_pending",
)  # fmt: skip
# on a real broker the collector acknowledges what has arrived when its queue empties, so how
# many acks it sends (the trace's count of them and of all messages) depends on arrival timing
# (two runs of the same code on the embedded broker: 38 and 33 acks): dropped there
_ARRIVAL_COUNTS = (("trace", "messages"), ("trace", "by_kind", "ack"))


def _run(
    name: str, source: str, broker: str, base: Path, run_id: str = "", toml_dir: Path | None = None
) -> Path:
    """``ldpfleet run`` of ``source`` (a shipped scenario file name or TOML text, written to
    ``toml_dir`` or the run's folder) into ``base/name/out`` as run ``run_id`` (default
    ``g-NAME``); returns that folder."""
    folder = base / name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    if source.endswith(".toml"):
        path = ROOT / "scenarios" / source
        cwd = ROOT
    else:
        path = (toml_dir or folder) / "s.toml"
        path.write_text(source)
        cwd = ROOT  # data/... paths in the scenario read the shipped data sets
    done = subprocess.run(
        [CLI, "run", str(path), "--broker", broker, "--out", str(folder / "out"),
         "--run", run_id or f"g-{name}"],
        cwd=cwd, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    (folder / "rc").write_text(f"{done.returncode}\n{done.stdout}\n{done.stderr}")
    return folder / "out"


def _stable(value: object) -> object:
    """results.json without the fields that measure the machine (times, memory, CPU)."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if not any(t in k for t in _VARYING)}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def _drop(doc: dict, path: tuple[str, ...]) -> None:
    """Remove ``doc[path[0]][path[1]]...`` when present."""
    for key in path[:-1]:
        doc = doc.get(key) if isinstance(doc, dict) else None
    if isinstance(doc, dict):
        doc.pop(path[-1], None)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def ensure_report_runs(fresh: bool) -> None:
    for name, (source, broker) in REPORT_RUNS.items():
        if fresh or not (RUNS_DIR / name / "out" / "results.json").exists():
            print(f"running {name} ...", flush=True)
            _run(name, source, broker, RUNS_DIR)


def pin_report(pages: Path | None) -> dict:
    from ldpfleet.app.report import build_report

    out = {}
    for name in REPORT_RUNS:
        folder = RUNS_DIR / name / "out"
        try:
            page = build_report(folder)
        except Exception as exc:  # the refusal is the outcome
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        out[name] = {"sha256": _sha(page), "length": len(page)}
        if pages is not None:
            pages.mkdir(parents=True, exist_ok=True)
            (pages / f"{name}.html").write_text(page)
    return out


def pin_summary() -> dict:
    from ldpfleet.app.cli import _summary_table
    from rich.console import Console

    out = {}
    for name in REPORT_RUNS:
        results = json.loads((RUNS_DIR / name / "out" / "results.json").read_text())
        console = Console(width=110, file=io.StringIO(), record=True, color_system=None)
        try:
            console.print(_summary_table(results))
        except Exception as exc:  # the refusal is the outcome
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        out[name] = {"text": console.export_text()}
    return out


def pin_runs() -> dict:
    out = {}
    for name, (source, broker) in FRESH_RUNS.items():
        print(f"running {name} ...", flush=True)
        folder = _run(name, source, broker, FRESH_DIR)
        rc = (folder.parent / "rc").read_text().split("\n", 1)[0]
        entry: dict = {"rc": rc}
        results = folder / "results.json"
        if results.exists():
            entry["results"] = _stable(json.loads(results.read_text()))
            if broker != "memory":
                for path in _ARRIVAL_COUNTS:
                    _drop(entry["results"], path)
        ledger = folder / "ledger.json"
        if ledger.exists():
            entry["ledger"] = _stable(json.loads(ledger.read_text()))
        for npz in sorted(folder.glob("*.npz")):
            with np.load(npz) as data:
                entry[npz.name] = {
                    k: hashlib.sha256(np.ascontiguousarray(data[k]).tobytes()).hexdigest()
                    for k in sorted(data.files)
                }
        out[name] = entry
    return out


def _stable_outputs(folder: Path, arrival_counts: bool) -> dict:
    """A run directory's results.json and ledger.json without what measures the machine."""
    entry: dict = {}
    results = folder / "results.json"
    if results.exists():
        entry["results"] = _stable(json.loads(results.read_text()))
        if not arrival_counts:
            for path in _ARRIVAL_COUNTS:
                _drop(entry["results"], path)
    ledger = folder / "ledger.json"
    if ledger.exists():
        entry["ledger"] = _stable(json.loads(ledger.read_text()))
    return entry


def pin_rerun(record: bool) -> dict:
    """``record``: the outputs of the report runs as the code before the refactor wrote them
    (``/tmp/G-runs``); ``check``: the same runs made again now (``/tmp/G-pin-runs/again-*``)."""
    out = {}
    for name, (source, broker) in REPORT_RUNS.items():
        if record:
            folder = RUNS_DIR / name / "out"
        else:
            print(f"running {name} again ...", flush=True)
            again = f"again-{name}"  # the same run id and scenario path as the recorded run
            folder = _run(again, source, broker, FRESH_DIR, f"g-{name}", RUNS_DIR / name)
        # faults: crashed devices come back and resend on their own timers, so the acks
        # race their resends even on the memory broker (measured: 1996 then 1997 acks)
        out[name] = _stable_outputs(folder, broker == "memory" and name != "faults")
    return out


def _before_module(path: str, name: str):
    """``git show BEFORE:PATH`` imported as module ``name`` (the code before the refactor)."""
    import importlib.util

    source = subprocess.run(
        ["git", "show", f"{BEFORE}:{path}"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    file = Path(f"/tmp/{name}.py")
    file.write_text(source)
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _variant(base: str, name: str) -> Path:
    """A copy of the recorded run ``base`` (``/tmp/G-runs``) as ``/tmp/G-odd/NAME/out``."""
    folder = Path("/tmp/G-odd") / name / "out"
    if folder.parent.exists():
        shutil.rmtree(folder.parent)
    shutil.copytree(RUNS_DIR / base / "out", folder)
    return folder


def _edit_json(path: Path, edit) -> None:
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc))


def _spend(ledger: dict, worst, total=None) -> None:
    """Set each device's stream account: ``worst(i)`` its worst window, ``total(i)``."""
    for i, entry in enumerate(ledger["devices"].values()):
        for account in entry["accounts"].values():
            account["max_window_spent"] = worst(i)
            if total is not None:
                account["total_spent"] = total(i)


def _odd_report_dirs() -> dict[str, Path]:
    """Run directories for the branches the recorded runs do not reach: worst spends that
    differ (a histogram), all equal below the budget, one over it; total spends that
    differ; a CPR run whose series fit the window (no overview), one without its truth
    sample; a CADR run whose θ was configured, one whose θ came from the rule."""
    out = {}
    led = _variant("quickstart", "worst-varied") / "ledger.json"
    _edit_json(led, lambda d: _spend(d, lambda i: 0.5 + i / 40, lambda i: 40.0 + i))
    out["worst-varied"] = led.parent
    led = _variant("quickstart", "worst-same-below") / "ledger.json"
    _edit_json(led, lambda d: _spend(d, lambda i: 1.5))
    out["worst-same-below"] = led.parent
    led = _variant("quickstart", "overspend") / "ledger.json"
    _edit_json(led, lambda d: _spend(d, lambda i: 2.5 if i == 3 else 2.0 + 1e-15 * i))
    out["overspend"] = led.parent
    short = _variant("periodic-sensing", "cpr-short")
    with np.load(short / "reconstructions.npz") as data:
        arrays = {k: data[k][:100] if "." not in k else data[k] for k in data.files}
    np.savez_compressed(short / "reconstructions.npz", **arrays)
    out["cpr-short"] = short
    no_truth = _variant("periodic-sensing", "cpr-no-truth")
    (no_truth / "truth_sample.npz").unlink(missing_ok=True)
    out["cpr-no-truth"] = no_truth
    for how in ("configured", "rule"):
        folder = _variant("cadr-small", f"cadr-{how}")
        _edit_json(folder / "results.json", lambda d, how=how: d.update(theta_chosen_by=how))
        out[f"cadr-{how}"] = folder
    return out


def _odd_summaries() -> dict[str, dict]:
    """results.json variants for the summary's rows the recorded runs do not reach."""
    quick = json.loads((RUNS_DIR / "quickstart" / "out" / "results.json").read_text())
    faults = json.loads((RUNS_DIR / "faults" / "out" / "results.json").read_text())
    secure = json.loads((RUNS_DIR / "secure-sum" / "out" / "results.json").read_text())
    cpr = json.loads((RUNS_DIR / "periodic-sensing" / "out" / "results.json").read_text())
    reconnects = json.loads(json.dumps(quick))
    reconnects["delivery"].update(
        device_reconnects=3, collector_reconnects=1, recorder_reconnects=2, republished=7
    )
    no_hostile = json.loads(json.dumps(faults))
    no_hostile["faults"]["injected"]["hostile"] = None
    aborted = json.loads(json.dumps(secure))
    aborted["secure_sum"]["aborted"] = "only 3 of 100 devices advertised keys"
    bare_cpr = json.loads(json.dumps(cpr))
    bare_cpr["reconstruction"].pop("period_accuracy", None)
    bare_cpr["reconstruction"].pop("mean_cosine_distance", None)
    return {
        "reconnects": reconnects,
        "faults-no-hostile": no_hostile,
        "secure-aborted": aborted,
        "cpr-bare": bare_cpr,
    }


def pin_odd() -> dict:
    """Old (``BEFORE``'s module) against new on the odd inputs, both computed now."""
    from ldpfleet.app import cli_summary, report
    from rich.console import Console

    old_report = _before_module("app/report.py", "G_old_report")
    old_summary = _before_module("app/cli_summary.py", "G_old_cli_summary")
    out = {}
    for name, folder in _odd_report_dirs().items():
        pages = [m.build_report(folder) for m in (old_report, report)]
        out[f"report/{name}"] = {"same": pages[0] == pages[1], "sha256": _sha(pages[1])}
    for name, results in _odd_summaries().items():
        texts = []
        for module in (old_summary, cli_summary):
            console = Console(width=110, file=io.StringIO(), record=True, color_system=None)
            console.print(module._summary_table(results))
            texts.append(console.export_text())
        out[f"summary/{name}"] = {"same": texts[0] == texts[1], "text": texts[1]}
    return out


def _leaves(a: object, b: object, path: str = "") -> list[tuple[str, object, object]]:
    """The leaf paths where ``a`` and ``b`` differ, with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            d for k in sorted(set(a) | set(b)) for d in _leaves(a.get(k), b.get(k), f"{path}/{k}")
        ]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _leaves(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [(path, a, b)]


SECTIONS = ("report", "summary", "runs", "rerun", "odd")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/G_pin.py")
    parser.add_argument("action", choices=("record", "check"))
    parser.add_argument("out")
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--fresh", action="store_true", help="record: rerun /tmp/G-runs")
    args = parser.parse_args(argv)
    only = [s for s in args.only.split(",") if s]
    if args.action == "record":
        ensure_report_runs(args.fresh)
    pages = Path(args.out + (".pages" if args.action == "record" else ".new-pages"))
    compute = {
        "report": lambda: pin_report(pages),
        "summary": pin_summary,
        "runs": pin_runs,
        "rerun": lambda: pin_rerun(args.action == "record"),
        "odd": pin_odd,
    }
    now = json.loads(json.dumps({s: compute[s]() for s in only}, sort_keys=True))
    if args.action == "record":
        old = json.loads(Path(args.out).read_text()) if Path(args.out).exists() else {}
        old.update(now)
        Path(args.out).write_text(json.dumps(old, sort_keys=True, indent=0) + "\n")
        print({k: len(v) for k, v in now.items()})
        return 0
    before = json.loads(Path(args.out).read_text())
    bad = 0
    for section in only:
        old, new = before.get(section, {}), now[section]
        keys = sorted(set(old) | set(new))
        diff = [k for k in keys if old.get(k) != new.get(k)]
        print(f"{section}: {len(keys)} outcomes, {len(diff)} differ")
        for k in diff[:10]:
            print("  ", k)
            for path, was, now_ in _leaves(old.get(k), new.get(k))[:40]:
                print(f"      {path}: {str(was)[:120]} -> {str(now_)[:120]}")
        bad += len(diff)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
