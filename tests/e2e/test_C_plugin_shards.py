"""A plugin mechanism importable only through the caller's ``sys.path.insert`` runs in the
device shard processes too (helper C, user trials): the shards are fresh interpreters, so
every shard failed to import it and the run ended with no device. The runner now names the
plugin's folder in ``LDPFLEET_PLUGIN_PATH`` (``plugin_load.export_plugin_folder``), which
the shards inherit and append to their ``sys.path`` (``use_plugin_path``); a plugin module
no ``sys.path`` folder explains is refused before any process starts."""

from __future__ import annotations

import json
import sys
import types

import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.plugin_load import (
    PLUGIN_PATH_VARIABLE,
    export_plugin_folder,
    plugin_folder,
    use_plugin_path,
)
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

PLUGIN = '''
import numpy as np
from ldpfleet.protocol.mechanisms import stream_mechanism


class Wrapped:
    """The built-in sw, behind a plugin's name."""

    def __init__(self, eps):
        self.inner = stream_mechanism("sw", eps)
        self.output_low, self.output_high = self.inner.output_low, self.inner.output_high

    def perturb(self, x, rng):
        return self.inner.perturb(x, rng)

    def in_domain(self, y):
        return self.inner.in_domain(y)

    def estimate_mean(self, y):
        return self.inner.estimate_mean(y)
'''

SCENARIO = """
[scenario]
name = "plugin-shards"
seed = 5
[fleet]
devices = 4
shards = 2
[stream]
steps = 10
eps = 2.0
w = 5
batch_steps = 5
mechanism = "{mechanism}"
[source]
kind = "synthetic"
bounds = [-1.5, 1.5]
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A plugin module in a folder only ``sys.path.insert`` makes importable (the name is
    this test's own: no other test imports a module of that name)."""
    folder = tmp_path / "my plugins"  # a space too: the variable holds a path, not a list
    folder.mkdir()
    (folder / "c_shard_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(folder))  # sys.path.insert(0, folder), undone after
    monkeypatch.delenv(PLUGIN_PATH_VARIABLE, raising=False)  # restored after the test
    monkeypatch.delenv("PYTHONPATH", raising=False)
    yield folder
    sys.modules.pop("c_shard_plugin", None)


async def test_a_sys_path_plugin_runs_in_the_device_shard_processes(plugin, tmp_path):
    scenario = parse_scenario(SCENARIO.format(mechanism="c_shard_plugin:Wrapped"))
    results = await run_scenario(scenario, broker="embedded", out_dir=tmp_path / "run")
    assert results["stages"]["fleet_build"]["shards"] == 2
    assert results["fleet"]["device_errors"] == {}
    assert results["reports_lost"] == 0 and results["devices_complete"] == 4
    for index in range(2):
        shard = tmp_path / "run" / "shards" / f"fleet-{index}-of-2"
        outcomes = json.loads((shard / "outcomes.json").read_text())
        assert [o["state"] for o in outcomes["devices"]] == ["done", "done"]
    # the same run in this process gives the same reports
    single = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "one")
    assert single["per_device"] == results["per_device"]


def test_the_plugin_folder_is_named_once_and_appended_in_a_shard(plugin, monkeypatch):
    __import__("c_shard_plugin")
    environ = {PLUGIN_PATH_VARIABLE: "/elsewhere"}
    export_plugin_folder("c_shard_plugin:Wrapped", environ)
    export_plugin_folder("c_shard_plugin:Wrapped", environ)  # a second run: not twice
    assert environ[PLUGIN_PATH_VARIABLE].split(":") == ["/elsewhere", str(plugin.resolve())]
    # built-ins, entry points and __main__ classes need no folder
    assert plugin_folder("sw") is None and plugin_folder("__main__:Mine") is None
    # the shard side appends (what the shard imports by itself keeps precedence)
    monkeypatch.setattr(sys, "path", ["/first"])
    assert use_plugin_path(environ) == ["/elsewhere", str(plugin.resolve())]
    assert sys.path == ["/first", "/elsewhere", str(plugin.resolve())]
    assert use_plugin_path(environ) == []


def test_a_module_from_no_folder_is_refused_before_any_process(tmp_path, monkeypatch):
    made = types.ModuleType("c_made_in_memory")
    exec(PLUGIN, made.__dict__)
    monkeypatch.setitem(sys.modules, "c_made_in_memory", made)
    with pytest.raises(ParameterError) as caught:
        plugin_folder("c_made_in_memory:Wrapped")
    assert caught.value.field == "mechanism" and "cannot import it" in str(caught.value)
    scenario = parse_scenario(SCENARIO.format(mechanism="c_made_in_memory:Wrapped"))
    with pytest.raises(ScenarioError) as refused:
        # refused before the broker, the folder or any shard process starts
        run_scenario_now(scenario, tmp_path / "run")
    assert refused.value.field == "stream.mechanism"
    assert "[fleet] shards = 1" in str(refused.value)
    assert not (tmp_path / "run").exists()


def run_scenario_now(scenario, out):
    """``run_scenario``'s checks run before its first await: the coroutine's first step."""
    coroutine = run_scenario(scenario, broker="embedded", out_dir=out)
    try:
        coroutine.send(None)
    finally:
        coroutine.close()
