"""Ctrl-C on ``ldpfleet run`` over a real broker (the run as separate processes).

The terminal's SIGINT reaches the whole foreground process group: the runner, its
collector process, its fleet shards. A child that ended on it first left the runner to
report "the collector process ... ended (exit code 130) without writing its results"
(seen on a CADR-LDP run); now every child ignores SIGINT and the runner stops them itself
(SIGTERM: each writes what it did), prints "interrupted" once and exits 130."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from ldpfleet.scenarios.shards import child_of_the_run
from ldpfleet.scenarios.split_run import _spawn

from tests.conftest import sigint_as_in_a_terminal

HANG_GUARD = 120.0  # seconds: never the thing tested, only a bound on a hung run

_SIGINT_IGNORED = "import signal; print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)"


_OWN_SESSION = "import os; print(os.getsid(0))"


def _side_session(tmp_path: Path, loop_factory) -> int:
    """The session id of a side process ``_spawn`` starts on a loop of ``loop_factory``."""

    async def spawn() -> int:
        process = await _spawn([sys.executable, "-c", _OWN_SESSION], tmp_path / "log", pipe=True)
        out, _ = await process.communicate()
        return int(out)

    with asyncio.Runner(loop_factory=loop_factory) as runner:
        return runner.run(spawn())


@pytest.mark.parametrize("loop", ["asyncio", "uvloop"])
def test_a_side_process_is_out_of_reach_of_the_terminals_ctrl_c(tmp_path, loop):
    """A side process runs in a session of its own, so the terminal's SIGINT (sent to the
    runner's process group) does not reach it. Ignoring SIGINT before exec was not enough:
    under uvloop (the CLI's loop when installed) libuv resets every signal in the child
    (helper M). Fails on the code before (the side shared the runner's session)."""
    factory = None if loop == "asyncio" else pytest.importorskip("uvloop").new_event_loop
    assert _side_session(tmp_path, factory) != os.getsid(0)


def test_a_fleet_shard_process_ignores_sigint():
    out = subprocess.run(
        [sys.executable, "-c", _SIGINT_IGNORED],
        preexec_fn=child_of_the_run,
        capture_output=True,
        check=True,
    ).stdout
    assert out.strip() == b"True"


def test_the_runner_the_test_starts_gets_sigint_even_if_pytest_ignores_it():
    """The Ctrl-C tests start the runner with ``sigint_as_in_a_terminal``: from a pytest
    that ignores SIGINT (started as ``cmd &`` by a non-interactive shell), the runner's
    Python still installs its KeyboardInterrupt handler. Without it the runner inherited
    the ignored SIGINT, never saw the test's Ctrl-C and the test failed at its hang guard."""
    check = "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)"
    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        inherited = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True)
        restored = subprocess.run(
            [sys.executable, "-c", check], capture_output=True, text=True,
            preexec_fn=sigint_as_in_a_terminal,
        )  # fmt: skip
    finally:
        signal.signal(signal.SIGINT, before)
    assert inherited.stdout.strip() == "False"  # the trap the tests avoid
    assert restored.stdout.strip() == "True"


def _slow_scenario(tmp_path: Path) -> Path:
    """The quickstart, paced so that the run is still streaming when Ctrl-C comes."""
    text = (Path(__file__).parents[2] / "scenarios" / "quickstart.toml").read_text()
    text = text.replace("steps = 200", "steps = 100000\nstep_seconds = 0.05")
    path = tmp_path / "slow.toml"
    path.write_text(text)
    return path


def _wait_for(path: Path, process: subprocess.Popen) -> None:
    """Until ``path`` exists (the collector process opened its store): an event, polled."""
    guard = time.monotonic() + HANG_GUARD
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < guard, "hang guard: the collector never opened its store"
        time.sleep(0.1)


@pytest.mark.slow
def test_ctrl_c_on_a_split_run_says_interrupted_and_leaves_no_process(tmp_path):
    out = tmp_path / "out"
    process = subprocess.Popen(
        [sys.executable, "-m", "ldpfleet.app.cli", "run", str(_slow_scenario(tmp_path)),
         "-o", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,  # its own process group, as a terminal's foreground job
        preexec_fn=sigint_as_in_a_terminal,  # SIGINT not inherited ignored
        env={**os.environ, "COLUMNS": "200"},
    )  # fmt: skip
    try:
        _wait_for(out / "collector" / "collector.sqlite", process)
        time.sleep(1.0)  # not a wait for anything: let the fleet stream a little
        os.killpg(process.pid, signal.SIGINT)
        output, _ = process.communicate(timeout=HANG_GUARD)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    text = output.decode()
    assert process.returncode == 130, text
    assert text.count("interrupted") == 1, text
    assert "without writing its results" not in text, text
    assert "Traceback" not in text, text
    with pytest.raises(ProcessLookupError):  # the runner's group is gone
        os.killpg(process.pid, 0)
    # and so is every child (each in a session of its own): none names this run's folder
    left = subprocess.run(["pgrep", "-f", str(out)], capture_output=True, text=True).stdout
    assert left.strip() == "", left
