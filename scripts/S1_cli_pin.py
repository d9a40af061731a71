"""Record what the long command lines print, to pin a refactor that only moves their code.

Runs a fixed list of small invocations of ``ldpfleet bench fleet/cpr/secagg/cadr/cadr-sweep``,
``mosquitto-config``, ``run`` and ``audit`` through the console script next to this
interpreter (the venv's ``ldpfleet``), each in a fresh process in a fixed scratch folder,
and prints for each: the exit code, stdout and stderr, and the files it wrote. What varies
from run to run without any change of code is masked: JSON keys of timings, CPU and memory
(``seconds``, ``cpu_*``, ``peak_rss_mb``, ``latency_ms``, ``speed``, a trace's ``timeline``
...), durations in text (``0.24 s``), 64-hex keys (a run's trace key), ``bench fleet``'s
random run id; generated passwords and keys are not printed (only the files' names and
modes). Two
records taken before and after a change that only moves code must be byte-identical:

    python scripts/S1_cli_pin.py > /tmp/S1-pin-before.txt
    ... change ...
    python scripts/S1_cli_pin.py > /tmp/S1-pin-after.txt
    cmp /tmp/S1-pin-before.txt /tmp/S1-pin-after.txt

``python scripts/S1_cli_pin.py NAME ...`` runs only the cases whose name starts with one of
the NAMEs (e.g. ``cpr``, ``fleet``, ``secagg``, ``cadr``, ``sweep``, ``mosq``, ``run``, ``audit``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

WORK = Path("/tmp/S1-pin-work")
ROOT = Path(__file__).resolve().parents[1]
GRAPH = "barabasi_albert:n=60,m=2"
CPR_SMALL = [
    "--dataset",
    "synthetic",
    "--eps",
    "1",
    "--w",
    "5",
    "--cosine-eps",
    "1",
    "--cosine-w",
    "5",
    "--trials",
    "1",
    "--n",
    "144",
    "--fleet-streams",
    "0",
]
GRID_SMALL = [
    "--grid",
    "--grid-trials",
    "1",
    "--aperiodic-trials",
    "1",
    "--grid-shape",
    "12,3",
    "--grid-eps0",
    "1",
]
FLEET_SMALL = ["--devices", "3", "--steps", "5", "--broker", "memory", "--shards", "1"]
AUDIT_SMALL = ["--trials", "200"]
CADR_SCENARIO = """\
[scenario]
name = "pin-cadr"
seed = 0
description = "a small CADR-LDP run for scripts/S1_cli_pin.py"

[graph]
source = "barabasi_albert:n=30,m=2"

[cadr]
eps = 3.0
alpha = 0.1
"""
MUTANT = "rr eps off by 2x"

CASES: list[tuple[str, list[str]]] = [
    # bench cpr
    ("cpr json", ["bench", "cpr", *CPR_SMALL]),
    ("cpr markdown", ["bench", "cpr", "--markdown", *CPR_SMALL]),
    (
        "cpr two datasets",
        ["bench", "cpr", *CPR_SMALL[2:], "--dataset", "synthetic", "--dataset", "darwin"],
    ),
    ("cpr grid json", ["bench", "cpr", *GRID_SMALL, "--grid-source", "square"]),
    ("cpr grid markdown", ["bench", "cpr", "--markdown", *GRID_SMALL, "--grid-source", "square"]),
    ("cpr refuse grid with --eps", ["bench", "cpr", "--grid", "--eps", "1"]),
    ("cpr refuse grid with --dataset", ["bench", "cpr", "--grid", "--dataset", "synthetic"]),
    ("cpr refuse --grid-trials alone", ["bench", "cpr", "--grid-trials", "3"]),
    ("cpr refuse --grid-shape alone", ["bench", "cpr", "--grid-shape", "12,3"]),
    ("cpr refuse bad shape", ["bench", "cpr", "--grid", "--grid-shape", "abc"]),
    ("cpr refuse shape range", ["bench", "cpr", "--grid", "--grid-shape", "1,1"]),
    ("cpr refuse trials 0", ["bench", "cpr", "--trials", "0"]),
    ("cpr refuse n", ["bench", "cpr", "--n", "10"]),
    ("cpr refuse fleet-streams", ["bench", "cpr", "--fleet-streams", "-1"]),
    ("cpr refuse dataset", ["bench", "cpr", "--dataset", "nope"]),
    ("cpr refuse eps twice", ["bench", "cpr", "--eps", "1", "--eps", "1"]),
    ("cpr refuse grid eps0", ["bench", "cpr", "--grid", "--grid-eps0", "100"]),
    ("cpr refuse grid source", ["bench", "cpr", "--grid", "--grid-source", "nope"]),
    ("cpr refuse grid template", ["bench", "cpr", "--grid", "--grid-template", "/nonexistent"]),
    # bench fleet
    ("fleet json", ["bench", "fleet", *FLEET_SMALL]),
    (
        "fleet pretty",
        ["bench", "fleet", *FLEET_SMALL, "--pretty", "--w", "2", "--batch-steps", "1"],
    ),
    (
        "fleet steps below w",
        ["bench", "fleet", *FLEET_SMALL[:2], "--steps", "3", *FLEET_SMALL[4:]],
    ),
    ("fleet out", ["bench", "fleet", *FLEET_SMALL, "--out", "fleet-out"]),
    ("fleet refuse gateway-devices", ["bench", "fleet", *FLEET_SMALL, "--gateway-devices", "5"]),
    ("fleet refuse w", ["bench", "fleet", *FLEET_SMALL, "--w", "9"]),
    ("fleet refuse batch-steps", ["bench", "fleet", *FLEET_SMALL, "--batch-steps", "9"]),
    ("fleet refuse steps 0", ["bench", "fleet", "--steps", "0"]),
    ("fleet refuse devices 0", ["bench", "fleet", *FLEET_SMALL, "--devices", "0"]),
    ("fleet refuse eps", ["bench", "fleet", *FLEET_SMALL, "--eps", "-1"]),
    ("fleet refuse connection", ["bench", "fleet", *FLEET_SMALL, "--connection", "nope"]),
    ("fleet refuse trace", ["bench", "fleet", *FLEET_SMALL, "--trace", "none"]),
    ("fleet refuse broker", ["bench", "fleet", *FLEET_SMALL, "--broker", "nope"]),
    # bench secagg
    ("secagg small", ["bench", "secagg", "--devices", "10", "--dim", "5"]),
    (
        "secagg dropout",
        [
            "bench",
            "secagg",
            "--devices",
            "12",
            "--dim",
            "3",
            "--dropout",
            "0.2",
            "--dropout-stage",
            "after_keys",
            "--neighbors",
            "6",
            "--seed",
            "2",
        ],
    ),
    (
        "secagg full active",
        ["bench", "secagg", "--devices", "8", "--dim", "3", "--neighbors", "full", "--active"],
    ),
    ("secagg refuse stage", ["bench", "secagg", "--dropout-stage", "after_key"]),
    ("secagg refuse dropout", ["bench", "secagg", "--dropout", "1"]),
    ("secagg refuse neighbors", ["bench", "secagg", "--neighbors", "x"]),
    ("secagg refuse devices", ["bench", "secagg", "--devices", "1"]),
    ("secagg refuse stage-timeout", ["bench", "secagg", "--stage-timeout", "0"]),
    ("secagg refuse survivors", ["bench", "secagg", "--devices", "10", "--dropout", "0.9"]),
    # bench cadr
    ("cadr reference", ["bench", "cadr", "--graph", GRAPH, "--runs", "2"]),
    (
        "cadr reference ll paper",
        ["bench", "cadr", "--graph", GRAPH, "--runs", "1", "--method", "ll", "--pipeline", "paper"],
    ),
    (
        "cadr reference theta int",
        ["bench", "cadr", "--graph", GRAPH, "--runs", "1", "--theta", "5", "--degree-bound", "30"],
    ),
    ("cadr memory", ["bench", "cadr", "--graph", GRAPH, "--runs", "2", "--transport", "memory"]),
    (
        "cadr memory ll",
        [
            "bench",
            "cadr",
            "--graph",
            GRAPH,
            "--runs",
            "1",
            "--transport",
            "memory",
            "--method",
            "ll",
        ],
    ),
    (
        "cadr memory paper",
        [
            "bench",
            "cadr",
            "--graph",
            GRAPH,
            "--runs",
            "1",
            "--transport",
            "memory",
            "--pipeline",
            "paper",
            "--fanout",
            "3",
        ],
    ),
    (
        "cadr non-private",
        ["bench", "cadr", "--graph", GRAPH, "--runs", "2", "--non-private", "--theta", "5"],
    ),
    ("cadr refuse method", ["bench", "cadr", "--graph", GRAPH, "--method", "nope"]),
    ("cadr refuse pipeline", ["bench", "cadr", "--graph", GRAPH, "--pipeline", "nope"]),
    ("cadr refuse runs", ["bench", "cadr", "--graph", GRAPH, "--runs", "0"]),
    ("cadr refuse eps", ["bench", "cadr", "--graph", GRAPH, "--eps", "0.0001"]),
    ("cadr refuse alpha", ["bench", "cadr", "--graph", GRAPH, "--alpha", "1"]),
    ("cadr refuse theta", ["bench", "cadr", "--graph", GRAPH, "--theta", "x"]),
    ("cadr refuse degree-bound", ["bench", "cadr", "--graph", GRAPH, "--degree-bound", "x"]),
    ("cadr refuse graph", ["bench", "cadr", "--graph", "facebok"]),
    (
        "cadr refuse fleet non-private",
        ["bench", "cadr", "--graph", GRAPH, "--transport", "memory", "--non-private"],
    ),
    (
        "cadr refuse fleet er",
        ["bench", "cadr", "--graph", GRAPH, "--transport", "memory", "--method", "er"],
    ),
    (
        "cadr refuse non-private clip",
        ["bench", "cadr", "--graph", GRAPH, "--non-private", "--method", "clip", "--theta", "5"],
    ),
    ("cadr refuse non-private theta", ["bench", "cadr", "--graph", GRAPH, "--non-private"]),
    # bench cadr-sweep (sweep_theta)
    (
        "sweep json",
        [
            "bench",
            "cadr-sweep",
            "--graph",
            GRAPH,
            "--runs",
            "2",
            "--thetas",
            "1,3,5,50",
            "--eps-list",
            "2,3",
            "--workers",
            "1",
            "--pipelines",
        ],
    ),
    (
        "sweep markdown",
        [
            "bench",
            "cadr-sweep",
            "--graph",
            GRAPH,
            "--runs",
            "2",
            "--thetas",
            "1,3,5,50",
            "--eps-list",
            "2,3",
            "--workers",
            "1",
            "--pipelines",
            "--markdown",
        ],
    ),
    (
        "sweep two workers",
        [
            "bench",
            "cadr-sweep",
            "--graph",
            GRAPH,
            "--runs",
            "1",
            "--thetas",
            "1..8",
            "--eps-list",
            "",
            "--methods",
            "ll,lh,clip",
        ],
    ),
    (
        "sweep refuse thetas above bound",
        [
            "bench",
            "cadr-sweep",
            "--graph",
            GRAPH,
            "--runs",
            "1",
            "--thetas",
            "50,60",
            "--eps-list",
            "",
        ],
    ),
    ("sweep refuse runs", ["bench", "cadr-sweep", "--graph", GRAPH, "--runs", "0"]),
    # mosquitto-config
    (
        "mosq plain",
        ["mosquitto-config", "{ROOT}/scenarios/quickstart.toml", "--out", "m1", "--run", "pin-run"],
    ),
    (
        "mosq run-as bulk",
        [
            "mosquitto-config",
            "{ROOT}/scenarios/quickstart.toml",
            "--out",
            "m2",
            "--run",
            "pin-run",
            "--run-as",
            "nobody",
            "--bulk-gateways",
            "2",
            "--host",
            "0.0.0.0",
            "--port",
            "1999",
        ],
    ),
    ("mosq cadr", ["mosquitto-config", "cadr.toml", "--out", "m3", "--run", "pin-cadr"]),
    (
        "mosq tls",
        [
            "mosquitto-config",
            "{ROOT}/scenarios/quickstart.toml",
            "--out",
            "m4",
            "--run",
            "pin-run",
            "--tls-port",
            "8883",
            "--tls-cert",
            "certs/server.pem",
            "--tls-key",
            "certs/server.key",
            "--tls-ca",
            "certs/ca.pem",
            "--require-certificate",
        ],
    ),
    (
        "mosq tls only",
        [
            "mosquitto-config",
            "{ROOT}/scenarios/quickstart.toml",
            "--out",
            "m5",
            "--run",
            "pin-run",
            "--tls-port",
            "1884",
            "--tls-cert",
            "certs/server.pem",
            "--tls-key",
            "certs/server.key",
            "--tls-ca",
            "certs/ca.pem",
            "--tls-only",
            "--tls-host",
            "127.0.0.2",
        ],
    ),
    (
        "mosq refuse host",
        ["mosquitto-config", "{ROOT}/scenarios/quickstart.toml", "--out", "mx", "--host", "a b"],
    ),
    (
        "mosq refuse tls-host",
        ["mosquitto-config", "{ROOT}/scenarios/quickstart.toml", "--out", "mx", "--tls-host", "*x"],
    ),
    (
        "mosq refuse run-as",
        ["mosquitto-config", "{ROOT}/scenarios/quickstart.toml", "--out", "mx", "--run-as", "a b"],
    ),
    (
        "mosq refuse tls-port alone",
        [
            "mosquitto-config",
            "{ROOT}/scenarios/quickstart.toml",
            "--out",
            "mx",
            "--tls-port",
            "8883",
        ],
    ),
    (
        "mosq refuse same port",
        [
            "mosquitto-config",
            "{ROOT}/scenarios/quickstart.toml",
            "--out",
            "mx",
            "--tls-port",
            "1884",
            "--tls-cert",
            "certs/server.pem",
            "--tls-key",
            "certs/server.key",
            "--tls-ca",
            "certs/ca.pem",
        ],
    ),
    (
        "mosq refuse tls options",
        [
            "mosquitto-config",
            "{ROOT}/scenarios/quickstart.toml",
            "--out",
            "mx",
            "--tls-only",
            "--tls-cert",
            "certs/server.pem",
            "--require-certificate",
        ],
    ),
    ("mosq refuse scenario", ["mosquitto-config", "nope.toml", "--out", "mx"]),
    (
        "mosq refuse run id",
        ["mosquitto-config", "{ROOT}/scenarios/quickstart.toml", "--out", "mx", "--run", "a/b"],
    ),
    # run
    (
        "run quickstart",
        [
            "run",
            "{ROOT}/scenarios/quickstart.toml",
            "--broker",
            "memory",
            "--out",
            "r1",
            "--run",
            "pin-run",
            "--seed",
            "1",
        ],
    ),
    (
        "run builtin name",
        ["run", "quickstart", "--broker", "memory", "--out", "r2/deep", "--run", "pin-run"],
    ),
    (
        "run cadr",
        ["run", "cadr.toml", "--broker", "memory", "--out", "r3", "--run", "pin-cadr"],
    ),
    ("run refuse scenario", ["run", "nope.toml", "--broker", "memory", "--out", "r4/deep"]),
    (
        "run refuse run id",
        ["run", "quickstart", "--broker", "memory", "--out", "r5", "--run", "a/b"],
    ),
    (
        "run refuse credentials",
        ["run", "quickstart", "--broker", "memory", "--out", "r6", "--credentials", "nope.json"],
    ),
    (
        "run refuse shard broker",
        [
            "run",
            "quickstart",
            "--broker",
            "memory",
            "--out",
            "r7",
            "--shard-broker",
            "mqtt://127.0.0.1:1",
        ],
    ),
    # audit
    ("audit rr", ["audit", "rr", "--eps", "1", *AUDIT_SMALL]),
    (
        "audit laplace seed",
        ["audit", "laplace", "--eps", "2", *AUDIT_SMALL, "--seed", "3", "--gamma", "0.1"],
    ),
    ("audit rr progress", ["audit", "rr", "--eps", "1", *AUDIT_SMALL, "--progress"]),
    ("audit rr markdown", ["audit", "rr", "--eps", "1", *AUDIT_SMALL, "--markdown"]),
    (
        "audit all only",
        [
            "audit",
            "all",
            "--only",
            "rr",
            "--only",
            "laplace",
            "--eps",
            "1,2",
            *AUDIT_SMALL,
            "--jobs",
            "1",
        ],
    ),
    (
        "audit all only markdown",
        [
            "audit",
            "all",
            "--only",
            "rr",
            "--eps",
            "1",
            *AUDIT_SMALL,
            "--jobs",
            "1",
            "--markdown",
            "--quiet",
        ],
    ),
    ("audit underpowered", ["audit", "rr", "--eps", "1", "--trials", "20"]),
    ("audit mutants", ["audit", "mutants", "--no-tests", "--only", MUTANT]),
    (
        "audit mutants markdown",
        ["audit", "mutants", "--no-tests", "--only", MUTANT, "--markdown"],
    ),
    ("audit refuse mutants eps", ["audit", "mutants", "--eps", "1"]),
    ("audit refuse mutants jobs", ["audit", "mutants", "--jobs", "2"]),
    ("audit refuse mutants only", ["audit", "mutants", "--no-tests", "--only", "rr eps of"]),
    ("audit refuse jobs", ["audit", "rr", "--jobs", "2"]),
    ("audit refuse jobs range", ["audit", "all", "--jobs", "0"]),
    ("audit refuse tests", ["audit", "rr", "--tests"]),
    ("audit refuse no-tests", ["audit", "all", "--no-tests"]),
    ("audit refuse only", ["audit", "rr", "--only", "rr"]),
    ("audit refuse all only", ["audit", "all", "--only", "laplce"]),
    ("audit refuse name", ["audit", "laplce"]),
    ("audit refuse plugin", ["audit", "nope.module:Thing", "--eps", "1"]),
    ("audit refuse eps list", ["audit", "rr", "--eps", "1,2"]),
    ("audit refuse eps twice", ["audit", "all", "--eps", "1,1"]),
    ("audit refuse eps empty", ["audit", "all", "--eps", "1,,2"]),
    ("audit refuse eps text", ["audit", "rr", "--eps", "x"]),
    ("audit refuse seed", ["audit", "rr", "--seed", "-1"]),
    ("audit refuse gamma", ["audit", "rr", "--gamma", "2", *AUDIT_SMALL]),
    ("audit refuse delta", ["audit", "rr", "--delta", "-1", *AUDIT_SMALL]),
]

# JSON keys whose values are timings, CPU or memory figures (or hold them)
VARYING_KEY = re.compile(
    r"(^|_)(seconds|cpu|rss|speed|latency|wall|elapsed)($|_)|_per_s$|(^|_)ms($|_)|^cpu"
    r"|^timeline$|^public_key$"
)
RANDOM_RUN = re.compile(r"^bench-fleet-[0-9a-f]{6}$")  # bench fleet's run id
DURATION = re.compile(r"\b\d[\d,]*(\.\d+)? ?(s|ms|µs)\b")
HEX_KEY = re.compile(r"\b[0-9a-f]{64}\b")


def mask_json(value: object) -> object:
    """``value`` without the keys that vary from run to run (``VARYING_KEY``)."""
    if isinstance(value, dict):
        return {
            k: ("<varies>" if VARYING_KEY.search(str(k)) else mask_json(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [mask_json(v) for v in value]
    if isinstance(value, str):
        return HEX_KEY.sub("<hex>", RANDOM_RUN.sub("<run id>", value))
    return value


def mask_text(text: str) -> str:
    """A text output line by line: a JSON line masked as JSON, else durations and 64-hex
    keys masked."""
    out = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped[:1] in "{[":
            try:
                out.append(json.dumps(mask_json(json.loads(stripped)), sort_keys=True))
                continue
            except ValueError:
                pass
        if "stages (s)" in line:  # a CADR run's seconds per stage
            line = re.sub(r"\d+\.\d+", "<t>", line)
        out.append(HEX_KEY.sub("<hex>", DURATION.sub("<duration>", line)))
    return "\n".join(out)


def mask_stdout(text: str) -> str:
    """Indented JSON (``--pretty``) parses as a whole; other outputs line by line."""
    try:
        return json.dumps(mask_json(json.loads(text)), sort_keys=True, indent=1)
    except ValueError:
        return mask_text(text)


def files_written(before: set[Path]) -> list[str]:
    """The files the case wrote, with the text of those whose contents are stable."""
    lines = []
    for path in sorted(p for p in WORK.rglob("*") if p.is_file() and p not in before):
        rel = path.relative_to(WORK)
        mode = oct(path.stat().st_mode & 0o777)
        lines.append(f"  file {rel} {mode}")
        if path.suffix in (".conf", ".acl") or path.name == "acl":
            lines.extend("    " + line for line in path.read_text().splitlines())
        elif path.name == "results.json":
            lines.append("    " + mask_stdout(path.read_text()).replace("\n", "\n    "))
        elif path.suffix == ".json" and "credentials" in path.name:
            data = json.loads(path.read_text())
            lines.append(f"    keys {sorted(data)}")
    return lines


def prepare() -> None:
    """A fresh scratch folder: the CADR scenario and a test deployment's certificates."""
    shutil.rmtree(WORK, ignore_errors=True)
    WORK.mkdir(parents=True)
    (WORK / "cadr.toml").write_text(CADR_SCENARIO)
    subprocess.run(
        [str(ldpfleet()), "certs", "--out", "certs"],
        cwd=WORK,
        check=True,
        capture_output=True,
        env=environment(),
    )


def ldpfleet() -> Path:
    return Path(sys.executable).with_name("ldpfleet")


def environment() -> dict:
    return {**os.environ, "COLUMNS": "100", "TERMINAL_WIDTH": "100", "NO_COLOR": "1"}


def run_case(name: str, argv: list[str]) -> str:
    """One case's record."""
    argv = [a.replace("{ROOT}", str(ROOT)) for a in argv]
    before = {p for p in WORK.rglob("*") if p.is_file()}
    folders = {p for p in WORK.iterdir() if p.is_dir()}
    shown = subprocess.run(
        [str(ldpfleet()), *argv],
        cwd=WORK,
        capture_output=True,
        text=True,
        env=environment(),
        timeout=600,
    )
    lines = [f"===== {name}: ldpfleet {' '.join(argv)}", f"exit {shown.returncode}"]
    lines.append("--- stdout")
    lines.append(mask_stdout(shown.stdout).replace(str(ROOT), "{ROOT}"))
    lines.append("--- stderr")
    lines.append(mask_text(shown.stderr).replace(str(ROOT), "{ROOT}"))
    lines.append("--- files")
    lines.extend(files_written(before))
    made = sorted(
        str(p.relative_to(WORK)) for p in WORK.iterdir() if p.is_dir() and p not in folders
    )
    lines.append(f"--- new folders {made}")
    return "\n".join(lines) + "\n"


def main() -> None:
    wanted = sys.argv[1:]
    prepare()
    for name, argv in CASES:
        if wanted and not any(name.startswith(w) for w in wanted):
            continue
        sys.stdout.write(run_case(name, argv))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
