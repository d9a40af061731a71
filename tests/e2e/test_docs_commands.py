"""The commands of the README's tour and of docs/tutorial.md run as written and exit as
documented (issue 22).

Every ``bash`` block of both pages is read; each command line must be listed in ``COMMANDS``
with how it is checked: run in the quick tier (it takes a second or two and needs no run
folder), in the ``slow`` tier (anything that runs a fleet, a bench or an audit: 10 to 30 s
for the small runs on this 2-core machine), in the ``long`` tier (the commands that take
minutes — ego-Facebook runs, the large benches, ``audit all``: marker ``docs_long``, left
out of the default suite so that CI stays within its time, run with ``python -m pytest -m
docs_long``), or not run with the reason why (set-up commands, the test suite itself). A
command added to a page without an entry here fails
``test_every_documented_command_is_classified``, so the pages and this test stay in step.
Commands run in one scratch folder (``runs/...`` outputs land there) that links the
repository's ``scenarios``, ``data`` and ``examples``; a command whose output folder is read
by later ones (``runs/qs``) is run first when needed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import ROOT, mosquitto_running, service_missing

PAGES = ("README.md", "docs/tutorial.md")
MQTT = "mqtt://127.0.0.1:1883"
# a command that hangs is stopped (a guard, not a speed target)
HANG_GUARD = 3600


@dataclass(frozen=True)
class Spec:
    """How a documented command is checked."""

    # quick (seconds) | slow (up to about a minute) | long (minutes: run with
    # `python -m pytest -m docs_long`, not part of the default suite) | skip
    tier: str = "quick"
    exit: int = 0
    mosquitto: bool = False
    why: str = ""  # for skip: why it is not run


SETUP = Spec("skip", why="a set-up command (installs the package; the README keeps it as is)")
SUITE = Spec("skip", why="the test suite itself")

COMMANDS: dict[str, Spec] = {
    # README: set up
    "python -m pip install -e . && ldpfleet run scenarios/quickstart.toml": SETUP,
    "python -m pip install -e '.[test]' && python -m pytest": SUITE,
    'python -m pytest -m "not slow"': Spec("skip", why="the quick tier of the suite itself"),
    # README: the tour
    "ldpfleet run scenarios/quickstart.toml --out runs/qs": Spec("slow"),
    f"ldpfleet run scenarios/quickstart.toml --broker {MQTT}": Spec("slow", mosquitto=True),
    "ldpfleet run scenarios/quickstart.toml --broker memory": Spec("slow"),
    "ldpfleet trace stats runs/qs": Spec("slow"),
    "ldpfleet trace show runs/qs --device d0007": Spec("slow"),
    "ldpfleet trace show runs/qs --kind reject": Spec("slow"),
    "ldpfleet trace export runs/qs --format jsonl -o qs.jsonl": Spec("slow"),
    "ldpfleet trace follow runs/qs d0007": Spec("slow"),
    # live until Ctrl-C: run for a second (--seconds 1), as if interrupted
    f"ldpfleet watch --broker {MQTT}": Spec(mosquitto=True),
    # the three processes of one run, started together (test_separate_processes_of_the_tour)
    f"ldpfleet collector quickstart --broker {MQTT} --run demo1": Spec("slow", mosquitto=True),
    f"ldpfleet fleet quickstart --broker {MQTT} --run demo1 --shard 0/2": Spec(
        "slow", mosquitto=True
    ),
    f"ldpfleet fleet quickstart --broker {MQTT} --run demo1 --shard 1/2": Spec(
        "slow", mosquitto=True
    ),
    "ldpfleet run scenarios/periodic-sensing.toml": Spec("slow"),
    "ldpfleet run scenarios/darwin-cpr.toml": Spec("slow"),
    "ldpfleet bench cpr --trials 100 --markdown": Spec("long"),
    "ldpfleet run scenarios/secure-sum.toml": Spec("slow"),
    "ldpfleet bench secagg --devices 200 --dim 10000 --neighbors 11 --dropout 0.1 --json": Spec(
        "long"
    ),
    f"ldpfleet run scenarios/facebook-degrees.toml -b {MQTT}": Spec("long", mosquitto=True),
    "ldpfleet bench cadr --graph facebook --method ll --theta 64 --non-private --runs 20": Spec(
        "long"
    ),
    "ldpfleet bench cadr --graph facebook --eps 3 --runs 1 --transport mqtt --json": Spec(
        "long", mosquitto=True
    ),
    "ldpfleet bench cadr --graph facebook --method ll --theta auto-dev --eps 3 --runs 1 "
    "--transport mqtt --processes 3 --fanout 7 --spacing geometric --json": Spec(
        "long", mosquitto=True
    ),
    "ldpfleet bench cadr-sweep --graph facebook --markdown": Spec("long"),
    "ldpfleet run scenarios/occupancy-release.toml": Spec("slow"),
    "ldpfleet bench gcdp --dataset occupancy --draws 10": Spec("long"),
    "ldpfleet bench gcdp-timing --repeats 20": Spec("long"),
    "ldpfleet bench gcdp-scaling": Spec("long"),
    "ldpfleet audit laplace --eps 1 --trials 8000 --gamma 0.05": Spec("slow"),
    "ldpfleet audit all --markdown": Spec("long"),
    "ldpfleet bench fleet --devices 1000 --steps 100": Spec("slow"),
    f"ldpfleet bench fleet --devices 1000 --steps 100 --broker {MQTT}": Spec(
        "slow", mosquitto=True
    ),
    f"ldpfleet bench fleet --devices 10000 --steps 100 --broker {MQTT} --shards 2 "
    "--connection gateway": Spec("long", mosquitto=True),
    "LDPFLEET_MQTT_CLIENT=aiomqtt ldpfleet bench fleet --devices 1000 --steps 100 --broker "
    f"{MQTT}": Spec("slow", mosquitto=True),
    # the devices that never come back lose their reports: documented exit status 1
    "ldpfleet run scenarios/faults.toml --out runs/faults": Spec("slow", exit=1),
    # docs/tutorial.md
    "python -m pip install -e . && ldpfleet run scenarios/quickstart.toml --out runs/qs": SETUP,
    "ldpfleet --version": Spec(),
    "ldpfleet scenarios": Spec(),
    "ldpfleet run quickstart --out runs/qs": Spec("slow"),
    "ldpfleet run occupancy-light --out runs/light": Spec("slow"),
    "ldpfleet scenarios --paths": Spec(),
    # /srv/ldp-data stands for any copy of data/: the repository's own copy is used
    "LDPFLEET_DATA=/srv/ldp-data ldpfleet run occupancy-light --out runs/light": Spec("slow"),
    "ldpfleet trace verify runs/qs": Spec("slow"),
    f"ldpfleet run scenarios/quickstart.toml --broker {MQTT} --out runs/qs-mq": Spec(
        "slow", mosquitto=True
    ),
    "ldpfleet run scenarios/occupancy-light.toml --out runs/light": Spec("slow"),
    "ldpfleet run scenarios/intel-temperature.toml --out runs/intel": Spec("slow"),
    "ldpfleet run scenarios/periodic-sensing.toml --out runs/cpr": Spec("slow"),
    "ldpfleet run scenarios/secure-sum.toml --out runs/ss": Spec("slow"),
    "ldpfleet trace follow runs/ss d0003": Spec("slow"),
    "ldpfleet bench secagg --devices 200 --dim 1000 --dropout 0.1": Spec("slow"),
    "ldpfleet run scenarios/facebook-degrees.toml --out runs/fb": Spec("long"),
    "ldpfleet run scenarios/occupancy-release.toml --out runs/gcdp": Spec("slow"),
    "ldpfleet audit laplace --eps 1 --trials 8000": Spec("slow"),
    f"ldpfleet bench fleet --devices 10000 --steps 100 --broker {MQTT} --shards 2": Spec(
        "long", mosquitto=True
    ),
    # the environment of the next commands (applied to them: PYTHONPATH=<repo>/examples)
    "export PYTHONPATH=$PWD/examples": Spec("skip", why="sets the environment of the next lines"),
    # my-scenario.toml: the quickstart with the page's [stream] block (made in the folder)
    "ldpfleet run my-scenario.toml --out runs/mine": Spec("slow"),
    "ldpfleet audit clipped_laplace:ClippedLaplace --eps 1": Spec("slow"),
    "ldpfleet bench mechanisms --mechanisms sw,laplace,clipped_laplace:ClippedLaplace "
    "--markdown": Spec("slow"),
    # docs/tutorial.md "Bring your own": its files and commands, run together as written
    **dict.fromkeys(
        (
            "python -m venv ~/ldp && . ~/ldp/bin/activate && python -m pip install "
            "ldpfleet-0.1.0-py3-none-any.whl",
            "mkdir -p krr-ldp/krr_ldp && touch krr-ldp/krr_ldp/__init__.py",
            "python -m pip install ./krr-ldp",
            "python make_data.py",
            "ldpfleet run greenhouse.toml --broker memory --out runs/greenhouse",
            "ldpfleet audit krr --eps 1",
            "ldpfleet audit krr-greedy --eps 1",
            "ldpfleet run contacts.toml --broker memory --out runs/contacts",
            "ldpfleet bench gcdp --train-file train.tsv --test-file test.tsv --draws 2 --eps 1",
        ),
        Spec("skip", why="tests/e2e/test_tutorial_bring_your_own.py runs the section"),
    ),
}

# an output folder that later commands read, and the documented command that makes it
PRODUCERS = {
    "runs/qs": "ldpfleet run scenarios/quickstart.toml --out runs/qs",
    "runs/ss": "ldpfleet run scenarios/secure-sum.toml --out runs/ss",
}
SEPARATE = [c for c in COMMANDS if c.startswith(("ldpfleet collector", "ldpfleet fleet"))]


def documented_commands() -> list[tuple[str, str]]:
    """(page, command) for every command line of the pages' ``bash`` blocks, comments
    and line continuations removed, in page order."""
    found = []
    for page in PAGES:
        text = (ROOT / page).read_text()
        for block in re.findall(r"```bash\n(.*?)```", text, re.S):
            for line in block.replace("\\\n", " ").splitlines():
                command = " ".join(re.sub(r"\s#.*$", "", line.strip()).split())
                if command and not command.startswith("#"):
                    found.append((page, command))
    return found


def test_every_documented_command_is_classified():
    documented = {command for _, command in documented_commands()}
    assert documented - set(COMMANDS) == set(), "add these to COMMANDS"
    assert set(COMMANDS) - documented == set(), "no longer documented: remove from COMMANDS"


@pytest.fixture(scope="session")
def folder(tmp_path_factory) -> Path:
    """A scratch working folder with the repository's scenarios, data and examples, and
    the tutorial's my-scenario.toml."""
    base = tmp_path_factory.mktemp("docs-commands")
    for name in ("scenarios", "data", "examples"):
        (base / name).symlink_to(ROOT / name)
    (base / "docs" / "img").mkdir(parents=True)  # bench gcdp-scaling's default plot path
    tutorial = (ROOT / "docs" / "tutorial.md").read_text()
    stream = re.search(r"```toml\n(\[stream\].*?)```", tutorial, re.S).group(1)
    quickstart = (ROOT / "scenarios" / "quickstart.toml").read_text()
    head, rest = quickstart.split("[stream]", 1)
    tail = rest[rest.index("\n[") :]
    (base / "my-scenario.toml").write_text(head + stream + tail)
    return base


def environment(folder: Path, command: str) -> tuple[dict, list[str]]:
    """The environment and argv of a documented command line."""
    env = {**os.environ, "COLUMNS": "120"}
    words = command.split()
    while "=" in words[0]:
        name, value = words.pop(0).split("=", 1)
        env[name] = str(ROOT / "data") if name == "LDPFLEET_DATA" else value
    if command.startswith(("ldpfleet run my-scenario", "ldpfleet audit clipped", "ldpfleet bench "
                           "mechanisms")):  # fmt: skip
        env["PYTHONPATH"] = os.pathsep.join([str(folder / "examples"), env.get("PYTHONPATH", "")])
    if words[:2] == ["ldpfleet", "watch"]:
        words += ["--seconds", "1"]
    assert words[0] == "ldpfleet", command
    if words[1:3] == ["run", "scenarios/secure-sum.toml"]:
        # SecAgg+ with 10 of 100 devices dropping: with the server's os.urandom labelling
        # the session aborts (exit 1) with probability <= 2.65e-4 per run
        # (abort_probability_bound); the test draws the labelling from a fixed seed
        # (tests/seeded_secagg.py, checked to unmask by tests/unit/test_F_seeded_secagg.py)
        return env, [sys.executable, str(ROOT / "tests" / "seeded_secagg.py"), *words[1:]]
    return env, [sys.executable, "-m", "ldpfleet.app.cli", *words[1:]]


def run_documented(folder: Path, command: str) -> subprocess.CompletedProcess:
    env, argv = environment(folder, command)
    return subprocess.run(
        argv, cwd=folder, env=env, capture_output=True, text=True, timeout=HANG_GUARD
    )


def prepare(folder: Path, command: str) -> None:
    """Make the output folders the command reads (``runs/qs``) with their documented
    command, if an earlier test has not."""
    for path, producer in PRODUCERS.items():
        needed = re.search(rf"{path}(\s|$)", command) and producer != command
        if needed and not (folder / path / "results.json").exists():
            done = run_documented(folder, producer)
            assert done.returncode == 0, done.stderr[-2000:]


def params():
    for command, spec in COMMANDS.items():
        if spec.tier == "skip" or command in SEPARATE:
            continue
        marks = []
        if spec.tier in ("slow", "long"):
            marks.append(pytest.mark.slow)
        if spec.tier == "long":
            marks.append(pytest.mark.docs_long)
        if spec.mosquitto:
            marks.append(pytest.mark.mosquitto)
        yield pytest.param(command, spec, marks=marks, id=command[:90])


@pytest.mark.parametrize(("command", "spec"), list(params()))
def test_documented_command_exits_as_documented(folder, command, spec):
    if spec.mosquitto and not mosquitto_running():
        service_missing("Mosquitto is not running on 127.0.0.1:1883")
    prepare(folder, command)
    done = run_documented(folder, command)
    assert done.returncode == spec.exit, (
        f"{command}: exit {done.returncode}, documented {spec.exit}\nstderr: {done.stderr[-3000:]}"
    )
    if spec.exit and "bench" not in command:
        # a documented failure says why in one sentence at the end, never a traceback
        assert "Traceback" not in done.stderr


@pytest.mark.slow
@pytest.mark.mosquitto
def test_separate_processes_of_the_tour(folder):
    """The collector and both fleet shards of the README, started together (any order
    works: the fleets wait for the collector's announcement)."""
    if not mosquitto_running():
        service_missing("Mosquitto is not running on 127.0.0.1:1883")
    run_id = f"demo1-{os.getpid()}"  # the documented id, unique per test session
    processes = []
    for command in SEPARATE:
        env, argv = environment(folder, command.replace("--run demo1", f"--run {run_id}"))
        processes.append(
            subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        )  # fmt: skip
    outcomes = [(p.args, *p.communicate(timeout=HANG_GUARD), p.returncode) for p in processes]
    for argv, _, stderr, code in outcomes:
        assert code == 0, f"{argv}: exit {code}\n{stderr[-2000:]}"
    shutil.rmtree(folder / "runs" / run_id, ignore_errors=True)
