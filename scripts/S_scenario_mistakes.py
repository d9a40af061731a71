"""Feed `ldpfleet run` scenario files with the mistakes a user makes, one per section of
docs/scenario-reference.md, and check each is refused with exit status 2 and one sentence
(no traceback) that names the key.

Usage: python scripts/S_scenario_mistakes.py LDPFLEET WORKDIR [FILTER]
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def sub(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


BASE = """[scenario]
name = "quickstart"
seed = 7

[fleet]
devices = 6

[stream]
steps = 20
eps = 2.0
w = 5
mechanism = "sw"

[source]
kind = "synthetic"
bounds = [5.0, 35.0]
"""
CSV = BASE.replace(
    'kind = "synthetic"',
    'kind = "csv"\npath = "data/uci-occupancy/datatraining.txt"\ncolumn = "Light"',
).replace("[5.0, 35.0]", "[0.0, 1700.0]")
RAW = sub(sub(sub(BASE, "eps = 2.0\n", ""), "w = 5\n", ""), '"sw"', '"raw"')
RAWCSV = sub(sub(sub(CSV, "eps = 2.0\n", ""), "w = 5\n", ""), '"sw"', '"raw"')
SS = BASE + "\n[secure_sum]\ndim = 4\n"
GRAPH = """[scenario]
name = "g"

[graph]
source = "edges.txt"

[cadr]
eps = 3.0
"""


# (label, scenario text, key the message must name)
CASES = [
    ("scenario: typo key", sub(BASE, "seed = 7", "sed = 7"), "sed"),
    ("scenario: unknown section", BASE + "\n[strem]\nsteps = 3\n", "strem"),
    ("scenario: seed string", sub(BASE, "seed = 7", 'seed = "7"'), "seed"),
    ("scenario: seed negative", sub(BASE, "seed = 7", "seed = -1"), "seed"),
    ("scenario: seed huge", sub(BASE, "seed = 7", "seed = 9223372036854775808"), "seed"),
    ("scenario: unicode name", sub(BASE, '"quickstart"', '"quïckstart"'), "name"),
    ("scenario: name with space", sub(BASE, '"quickstart"', '"quick start"'), "name"),
    ("scenario: run_timeout 0", sub(BASE, "seed = 7", "seed = 7\nrun_timeout = 0"), "run_timeout"),
    (
        "scenario: run_timeout nan",
        sub(BASE, "seed = 7", "seed = 7\nrun_timeout = nan"),
        "run_timeout",
    ),
    ("toml syntax error", sub(BASE, "seed = 7", "seed = "), ""),
    ("toml duplicate key", sub(BASE, "seed = 7", "seed = 7\nseed = 8"), "seed"),
    ("not utf-8", None, ""),
    ("missing section fleet", sub(BASE, "[fleet]\ndevices = 6\n", ""), "fleet"),
    ("fleet: devices 0", sub(BASE, "devices = 6", "devices = 0"), "devices"),
    ("fleet: devices float", sub(BASE, "devices = 6", "devices = 6.5"), "devices"),
    ("fleet: devices bool", sub(BASE, "devices = 6", "devices = true"), "devices"),
    ("fleet: devices huge", sub(BASE, "devices = 6", "devices = 10000000"), "devices"),
    (
        "fleet: id_prefix unicode",
        sub(BASE, "devices = 6", 'devices = 6\nid_prefix = "é"'),
        "id_prefix",
    ),
    (
        "fleet: connection typo",
        sub(BASE, "devices = 6", 'devices = 6\nconnection = "gatway"'),
        "connection",
    ),
    ("fleet: shards 0", sub(BASE, "devices = 6", "devices = 6\nshards = 0"), "shards"),
    ("fleet: state_dir ''", sub(BASE, "devices = 6", 'devices = 6\nstate_dir = ""'), "state_dir"),
    ("stream: steps missing", sub(BASE, "steps = 20\n", ""), "steps"),
    ("stream: eps string", sub(BASE, "eps = 2.0", 'eps = "2"'), "eps"),
    ("stream: eps 0", sub(BASE, "eps = 2.0", "eps = 0"), "eps"),
    ("stream: eps inf", sub(BASE, "eps = 2.0", "eps = inf"), "eps"),
    ("stream: eps 51", sub(BASE, "eps = 2.0", "eps = 51"), "eps"),
    ("stream: w > steps", sub(BASE, "w = 5", "w = 50"), "w"),
    ("stream: mechanism unknown", sub(BASE, 'mechanism = "sw"', 'mechanism = "sq"'), "mechanism"),
    (
        "stream: mechanism bad plugin",
        sub(BASE, 'mechanism = "sw"', 'mechanism = "nomod:Cls"'),
        "mechanism",
    ),
    (
        "stream: reconstruct typo",
        sub(BASE, 'mechanism = "sw"', 'mechanism = "sw"\nreconstruct = "cprr"'),
        "reconstruct",
    ),
    (
        "stream: batch_steps > steps",
        sub(BASE, 'mechanism = "sw"', 'mechanism = "sw"\nbatch_steps = 30'),
        "batch_steps",
    ),
    (
        "stream: step_seconds neg",
        sub(BASE, 'mechanism = "sw"', 'mechanism = "sw"\nstep_seconds = -1'),
        "step_seconds",
    ),
    ("source: kind typo", sub(BASE, 'kind = "synthetic"', 'kind = "synthetc"'), "kind"),
    ("source: bounds reversed", sub(BASE, "[5.0, 35.0]", "[35.0, 5.0]"), "bounds"),
    ("source: bounds 3 items", sub(BASE, "[5.0, 35.0]", "[5.0, 35.0, 1.0]"), "bounds"),
    ("source: bounds strings", sub(BASE, "[5.0, 35.0]", '["5", "35"]'), "bounds"),
    ("source: period 1", BASE + "period = 1\n", "period"),
    ("source: period range reversed", BASE + "period = [30, 10]\n", "period"),
    ("source: phase 1", BASE + "phase = 1.0\n", "phase"),
    ("source: shape typo", BASE + 'shape = "sin"\n', "shape"),
    ("source: csv key on synthetic", BASE + 'column = "Light"\n', "column"),
    ("csv: missing file", sub(CSV, "datatraining.txt", "nosuch.txt"), "path"),
    (
        "csv: path is a folder",
        sub(CSV, "data/uci-occupancy/datatraining.txt", "data/uci-occupancy"),
        "path",
    ),
    ("csv: column unknown", sub(CSV, '"Light"', '"Lihgt"'), "column"),
    ("csv: column index out", sub(CSV, '"Light"', "99"), "column"),
    ("csv: layout typo", CSV + 'layout = "row"\n', "layout"),
    ("csv: missing typo", CSV + 'missing = "skip"\n', "missing"),
    ("csv: columns empty", CSV + "columns = []\n", "columns"),
    (
        "csv: unicode missing path",
        sub(CSV, "data/uci-occupancy/datatraining.txt", "données/é.csv"),
        "path",
    ),
    (
        "periodic: dataset typo",
        sub(BASE, 'kind = "synthetic"', 'kind = "periodic"\ndataset = "darwn"').replace(
            "bounds = [5.0, 35.0]\n", ""
        ),
        "dataset",
    ),
    (
        "periodic: jitter 2",
        sub(
            BASE, 'kind = "synthetic"', 'kind = "periodic"\ndataset = "darwin"\njitter = 2'
        ).replace("bounds = [5.0, 35.0]\n", ""),
        "jitter",
    ),
    (
        "collector: credit > in flight",
        BASE + "\n[collector]\nmax_in_flight = 2\ncredit_window = 8\n",
        "credit_window",
    ),
    ("collector: trace typo", BASE + '\n[collector]\ntrace = "al"\n', "trace"),
    ("collector: idle_timeout 0", BASE + "\n[collector]\nidle_timeout = 0\n", "idle_timeout"),
    ("collector: partitions 0", BASE + "\n[collector]\npartitions = 0\n", "partitions"),
    ("cpr: min_period 1", BASE + "\n[cpr]\nmin_period = 1\n", "min_period"),
    (
        "cpr: max < min",
        sub(BASE, 'mechanism = "sw"', 'mechanism = "sw"\nreconstruct = "cpr"')
        + "\n[cpr]\nmin_period = 5\nmax_period = 3\n",
        "max_period",
    ),
    ("secure_sum: dim > steps", sub(SS, "dim = 4", "dim = 40"), "dim"),
    ("secure_sum: bits 16", SS + "bits = 16\n", "bits"),
    ("secure_sum: dropout 1", SS + "dropout = 1.0\n", "dropout"),
    ("secure_sum: graph typo", SS + 'graph = "ful"\n', "graph"),
    ("secure_sum: neighbors 9", SS + "neighbors = 9\n", "neighbors"),
    ("graph: missing file", GRAPH, "source"),
    ("graph: unknown name", sub(GRAPH, '"edges.txt"', '"facebok"'), "source"),
    ("cadr: method typo", GRAPH.replace("edges.txt", "facebook") + 'method = "l"\n', "method"),
    ("cadr: alpha 1", GRAPH.replace("edges.txt", "facebook") + "alpha = 1\n", "alpha"),
    (
        "gcdp: missing calibration",
        RAWCSV + '\n[gcdp]\neps_rel = 1\nwindow = 5\ncalibration_path = "nosuch.csv"\n',
        "calibration_path",
    ),
    ("gcdp: eps_rel 0", BASE + '\n[gcdp]\neps_rel = 0\ncalibration_path = "x.csv"\n', "eps_rel"),
    ("faults: crash_fraction 2", BASE + "\n[faults]\ncrash_fraction = 2\n", "crash_fraction"),
    ("faults: crash without pacing", BASE + "\n[faults]\ncrash_fraction = 0.5\n", "crash_fraction"),
    (
        "faults: crash_between reversed",
        BASE + "\n[faults]\ncrash_between = [0.6, 0.2]\n",
        "crash_between",
    ),
    ("broker: auth string", BASE + '\n[broker]\nauth = "yes"\n', "auth"),
    ("broker: bad url", BASE + '\n[broker]\nurl = "htp://x"\n', "url"),
    ("broker: url port out of range", BASE + '\n[broker]\nurl = "mqtt://127.0.0.1:99999"\n', "url"),
]


def main(argv: list[str]) -> int:
    ldpfleet, work = argv[0], Path(argv[1])
    only = argv[2] if len(argv) > 2 else ""
    work.mkdir(parents=True, exist_ok=True)
    bad = 0
    for i, (label, text, key) in enumerate(CASES):
        if only and only not in label:
            continue
        f = work / f"case{i:02d}.toml"
        if text is None:
            f.write_bytes(BASE.replace("7", "\xff").encode("latin-1"))
        else:
            f.write_text(text)
        try:
            p = subprocess.run(
                [
                    "nice",
                    "-n",
                    "5",
                    ldpfleet,
                    "run",
                    str(f),
                    "--broker",
                    "memory",
                    "--out",
                    str(work / f"out{i:02d}"),
                ],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=60,
            )
            rc, err = p.returncode, (p.stderr + p.stdout).strip()
        except subprocess.TimeoutExpired:
            rc, err = "timeout", ""
        lines = err.splitlines()
        ok = rc == 2 and "Traceback" not in err and (key.lower() in err.lower())
        if not ok:
            bad += 1
        mark = "ok " if ok else "BAD"
        print(f"{mark} rc={rc} [{label}] {' / '.join(lines[-3:])[:400]}", flush=True)
    print(f"{bad} of {len(CASES)} not as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
