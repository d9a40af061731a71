"""``ldpfleet.run`` / ``ldpfleet.run_scenario`` as a researcher calls them from a script or a
notebook (held-out library-user QA, helper D, 2026-12-05).

Found (each test below fails on the code before the fix):

- ``ldpfleet.run(...)`` inside a running event loop (a Jupyter cell, an ``async def``) died
  in asyncio's "Cannot run the event loop while another loop is running" plus two
  "coroutine ... was never awaited" warnings, with no word of what to do instead;
- ``run_scenario("my.toml")`` (a path, which ``run`` takes) died in ``AttributeError: 'str'
  object has no attribute 'spec'``; ``run(TOML text)`` said "scenario file <the whole
  text> does not exist";
- ``broker=5`` died in ``AttributeError``; ``out_dir=None`` / ``3`` in pathlib's
  ``TypeError``; an ``out_dir`` that is a file in ``FileExistsError``; ``seed=np.int64(7)``
  (a loop over ``np.arange``) in ``TypeError: Object of type int64 is not JSON
  serializable`` after the whole run; ``seed=-1`` in a ``SourceError`` (not a
  ``ParameterError``), ``seed=2**70`` was accepted (the CLI and ``[scenario] seed`` stop at
  2^63 - 1); ``run_id=5`` was named ``run``, not ``run_id``;
- ``run(None)`` / ``run({...})`` died in pathlib's ``TypeError``.
"""

from __future__ import annotations

import _thread
import asyncio
import gc
import inspect
import signal
import threading
import warnings

import numpy as np
import pytest

import ldpfleet
from tests.tiny_scenarios import sine_stream_text

TEXT = sine_stream_text("library-user", devices=3, steps=12, period=6)


@pytest.fixture(scope="module")
def scenario():
    return ldpfleet.parse_scenario(TEXT)


def test_run_works_inside_a_running_event_loop(scenario, tmp_path):
    """A Jupyter cell runs inside the kernel's loop: ``run`` gets a loop of its own in a
    worker thread there (it raised asyncio's "Cannot run the event loop while another
    loop is running" and two "never awaited" warnings)."""

    async def notebook_cell():
        return ldpfleet.run(scenario, broker="memory", out_dir=tmp_path / "cell", seed=5)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        inside = asyncio.run(notebook_cell())
        gc.collect()  # an abandoned coroutine warns when it is collected
    outside = ldpfleet.run(scenario, broker="memory", out_dir=tmp_path / "script", seed=5)
    assert inside["per_device"] == outside["per_device"] and inside["reports_lost"] == 0
    never_awaited = [w for w in caught if "never awaited" in str(w.message)]
    assert never_awaited == [], [str(w.message) for w in never_awaited]
    assert not [t for t in threading.enumerate() if t.name == "ldpfleet-run" and t.is_alive()]


def test_errors_inside_a_running_event_loop_are_the_same(scenario, tmp_path):
    async def notebook_cell():
        return ldpfleet.run(scenario, broker="memory", out_dir=tmp_path, seed=-1)

    with pytest.raises(ldpfleet.ParameterError) as info:
        asyncio.run(notebook_cell())
    assert info.value.field == "seed"


class InterruptsOnce:
    """Laplace noise; its first ``perturb`` on a device interrupts the main thread, as
    Ctrl-C (a kernel interrupt) does: deterministic, whatever the machine's speed."""

    armed = False

    def __init__(self, eps):
        self.eps = eps

    def perturb(self, x, rng):
        if InterruptsOnce.armed:
            InterruptsOnce.armed = False
            _thread.interrupt_main()
        return np.asarray(x, float) + rng.laplace(0.0, 1.0 / self.eps, np.shape(x))

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, float))

    def estimate_mean(self, y):
        return float(np.mean(y))


def _jupyter_like(coroutine):
    """A loop that leaves SIGINT to Python (as ipykernel does): Ctrl-C raises
    ``KeyboardInterrupt`` wherever the main thread is."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coroutine)
    finally:
        loop.close()


@pytest.fixture
def python_handles_sigint():
    """Ctrl-C reaches Python as it does in a terminal or a notebook: a process started as a
    background job (``cmd &``, nohup) inherits SIGINT ignored, and then
    ``_thread.interrupt_main`` does nothing (helper T2 saw this test fail so); the test
    installs Python's own handler and restores what it found."""
    found = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, found)


@pytest.mark.usefixtures("python_handles_sigint")
@pytest.mark.parametrize("outer", [_jupyter_like, asyncio.run])  # asyncio.run: its handler
def test_ctrl_c_inside_a_running_event_loop_stops_the_run(outer, tmp_path):
    # paced: 2,000 steps of 0.05 s, 100 s of wall clock whatever the machine, against the
    # interrupt's 0.1 s; a run that was not stopped fails the results.json check below
    mechanism = f'mechanism = "{__name__}:InterruptsOnce"'
    long_run = TEXT.replace("steps = 12", f"steps = 2000\nstep_seconds = 0.05\n{mechanism}")
    loaded = ldpfleet.parse_scenario(long_run)
    InterruptsOnce.armed = True

    async def notebook_cell():
        return ldpfleet.run(loaded, broker="memory", out_dir=tmp_path / "stopped")

    with pytest.raises(KeyboardInterrupt):
        outer(notebook_cell())
    assert not [t for t in threading.enumerate() if t.name == "ldpfleet-run" and t.is_alive()]
    assert not (tmp_path / "stopped" / "results.json").exists()  # stopped, not finished
    again = ldpfleet.run(ldpfleet.parse_scenario(TEXT), broker="memory", out_dir=tmp_path / "b")
    assert again["reports_lost"] == 0


def test_the_coroutine_runs_inside_a_running_event_loop(scenario, tmp_path):
    async def notebook_cell():
        return await ldpfleet.run_scenario(scenario, broker="memory", out_dir=tmp_path)

    results = asyncio.run(notebook_cell())
    assert results["devices_complete"] == 3 and results["reports_lost"] == 0


def test_run_scenario_takes_a_path_or_a_name_as_run_does(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(TEXT)
    results = asyncio.run(ldpfleet.run_scenario(path, broker="memory", out_dir=tmp_path / "a"))
    again = asyncio.run(ldpfleet.run_scenario(str(path), broker="memory", out_dir=tmp_path / "b"))
    assert results["accuracy"] == again["accuracy"] and results["reports_lost"] == 0


@pytest.mark.parametrize("call", ["run", "run_scenario"])
def test_toml_text_instead_of_a_scenario_points_to_parse_scenario(call, tmp_path):
    with pytest.raises(ldpfleet.ParameterError) as info:
        _call(call, TEXT, out_dir=tmp_path)
    assert info.value.field == "scenario"
    assert "parse_scenario" in str(info.value) and "does not exist" not in str(info.value)


@pytest.mark.parametrize("call", ["run", "run_scenario"])
@pytest.mark.parametrize("value", [None, {"scenario": {"name": "x"}}, 3, b"quickstart"])
def test_a_scenario_of_the_wrong_type_is_named(call, value, tmp_path):
    with pytest.raises(ldpfleet.ParameterError) as info:
        _call(call, value, out_dir=tmp_path)
    assert info.value.field == "scenario" and repr(value)[:20] in str(info.value)


def _call(call: str, scenario, **options):
    if call == "run":
        return ldpfleet.run(scenario, broker="memory", **options)
    return asyncio.run(ldpfleet.run_scenario(scenario, broker="memory", **options))


@pytest.mark.parametrize(
    ("options", "field", "words"),
    [
        ({"broker": 5}, "broker", "'memory'"),
        ({"broker": ""}, "broker", "'memory'"),
        ({"out_dir": None}, "out_dir", "a folder"),
        ({"out_dir": 3}, "out_dir", "a folder"),
        ({"seed": -1}, "seed", "2^63 - 1"),
        ({"seed": 2**70}, "seed", "2^63 - 1"),
        ({"seed": 1.5}, "seed", "an integer"),
        ({"seed": "7"}, "seed", "an integer"),
        ({"seed": True}, "seed", "an integer"),
        ({"run_id": 5}, "run_id", "identifier"),
        ({"run_id": "a/b"}, "run_id", "identifier"),
    ],
)
@pytest.mark.parametrize("call", ["run", "run_scenario"])
def test_bad_options_raise_parameter_error_naming_them(
    scenario, call, options, field, words, tmp_path
):
    options = {"out_dir": tmp_path / "out", **options}
    with pytest.raises(ldpfleet.ParameterError) as info:
        if call == "run":
            ldpfleet.run(scenario, **{"broker": "memory", **options})
        else:
            asyncio.run(ldpfleet.run_scenario(scenario, **{"broker": "memory", **options}))
    assert info.value.field == field and words in str(info.value), str(info.value)


def test_an_out_dir_that_is_a_file_is_named(scenario, tmp_path):
    taken = tmp_path / "results.txt"
    taken.write_text("mine")
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.run(scenario, broker="memory", out_dir=taken)
    assert info.value.field == "out_dir" and str(taken) in str(info.value)
    assert taken.read_text() == "mine"


def test_a_numpy_integer_seed_is_a_seed(scenario, tmp_path):
    """``for seed in np.arange(10)`` is how a researcher repeats a run."""
    numpy_seed = ldpfleet.run(scenario, broker="memory", out_dir=tmp_path / "a", seed=np.int64(7))
    int_seed = ldpfleet.run(scenario, broker="memory", out_dir=tmp_path / "b", seed=7)
    assert numpy_seed["accuracy"] == int_seed["accuracy"]
    assert ldpfleet.read_results(tmp_path / "a")["scenario"]["seed"] == 7


def test_the_same_seed_gives_the_same_run_twice_in_one_process(scenario, tmp_path):
    first = ldpfleet.run(scenario, broker="memory", out_dir=tmp_path / "a", seed=11)
    second = ldpfleet.run(scenario, broker="memory", out_dir=tmp_path / "b", seed=11)
    other = ldpfleet.run(scenario, broker="memory", out_dir=tmp_path / "c", seed=12)
    assert first["per_device"] == second["per_device"]
    assert first["per_device"] != other["per_device"]


def test_run_states_its_options_to_help_and_type_checkers():
    parameters = inspect.signature(ldpfleet.run).parameters
    assert list(parameters)[:5] == ["scenario", "broker", "out_dir", "seed", "run_id"]
    assert all(p.kind is p.KEYWORD_ONLY for name, p in parameters.items() if name != "scenario")
    for word in ("broker", "out_dir", "seed", "run_id", "Returns", "Raises", "ParameterError"):
        assert word in ldpfleet.run.__doc__ and word in ldpfleet.run_scenario.__doc__, word


def test_concurrent_runs_into_one_folder_refuse_the_second_and_finish_the_first(scenario, tmp_path):
    """Fails before the fix: both runs died ("disk I/O error", an ExceptionGroup)."""

    async def both():
        return await asyncio.gather(
            ldpfleet.run_scenario(scenario, broker="memory", out_dir=tmp_path),
            ldpfleet.run_scenario(scenario, broker="memory", out_dir=tmp_path / "."),
            return_exceptions=True,
        )

    first, second = asyncio.run(both())
    assert isinstance(first, dict) and first["reports_lost"] == 0, first
    assert isinstance(second, ldpfleet.ParameterError) and second.field == "out_dir"
    assert "another run" in str(second)
    assert ldpfleet.read_results(tmp_path)["run"] == first["run"]


def test_concurrent_runs_into_their_own_folders_all_finish(scenario, tmp_path):
    async def three():
        return await asyncio.gather(
            *(
                ldpfleet.run_scenario(scenario, broker="memory", out_dir=tmp_path / str(i))
                for i in range(3)
            )
        )

    runs = asyncio.run(three())
    assert [r["per_device"] for r in runs] == [runs[0]["per_device"]] * 3


def test_a_folder_is_free_again_after_a_run_that_failed(scenario, tmp_path):
    with pytest.raises(ConnectionError):  # refused inside the run, its folder claimed
        ldpfleet.run(scenario, broker="mqtt://127.0.0.1:1", out_dir=tmp_path)
    assert ldpfleet.run(scenario, broker="memory", out_dir=tmp_path)["reports_lost"] == 0


def test_a_tilde_is_the_home_folder(scenario, tmp_path, monkeypatch):
    """``out_dir="~/runs/x"`` made a folder named "~" in the current one (pathlib does not
    expand it; the shell does, for the CLI). Fails on the code before the fix."""
    home, here = tmp_path / "home", tmp_path / "here"
    here.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(here)
    (home / "scenarios").mkdir(parents=True)
    (home / "scenarios" / "mine.toml").write_text(TEXT)
    results = ldpfleet.run("~/scenarios/mine.toml", broker="memory", out_dir="~/runs/x")
    assert (home / "runs" / "x" / "results.json").is_file() and not (here / "~").exists()
    assert ldpfleet.read_results("~/runs/x")["run"] == results["run"]
    assert len(ldpfleet.read_reports("~/runs/x")) == 3
    assert list(ldpfleet.read_trace("~/runs/x", kind="sw_report"))
