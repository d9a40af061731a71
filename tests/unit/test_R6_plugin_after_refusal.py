"""A scenario refused before its mechanism is checked imports no plugin (review R6).

Before ``schema_collect`` (every refusal at once) the first refusal stopped the load, so a
scenario refused by a key's range, or by a check across keys that runs before the
mechanism's, never imported its plugin module: no user code ran for a file that was
refused anyway. Collecting the other refusals must not change that: the plugin's module
(and its contract sample check, up to ``LOAD_CHECK_SECONDS``) runs only when nothing was
refused before the mechanism check, as before. The control case shows the test sees an
import: the same scenario without the mistake imports the plugin."""

from __future__ import annotations

import re
import sys

import pytest
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

PLUGIN = """
from pathlib import Path

Path(__file__).with_suffix(".imported").write_text("imported")

from ldpfleet.protocol.mechanisms import DuchiMechanism


class Mine(DuchiMechanism):
    pass
"""


def _text(module: str, collector: str = "", bounds: str = "[0.0, 1.0]") -> str:
    return (
        f'[scenario]\nname = "r6"\n[fleet]\ndevices = 4\n'
        f'[stream]\nsteps = 20\neps = 2.0\nw = 4\nmechanism = "{module}:Mine"\n'
        f'[source]\nkind = "synthetic"\nbounds = {bounds}\n'
        f"[collector]\n{collector}\n"
    )


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A plugin module of its own name (no other test imported it), and the file its
    import writes."""
    name = "r6_plugin_" + re.sub(r"\W", "_", tmp_path.name)
    (tmp_path / f"{name}.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name, tmp_path / f"{name}.imported"
    sys.modules.pop(name, None)


def test_control_a_valid_scenario_imports_its_plugin(plugin):
    name, marker = plugin
    parse_scenario(_text(name))
    assert marker.exists() and name in sys.modules


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"collector": "partitions = 0"}, "collector.partitions"),  # a key's range
        ({"bounds": "[1.0, 0.0]"}, "source.bounds"),  # a check across keys, run before
    ],
    ids=["range", "bounds-check"],
)
def test_a_scenario_refused_before_its_mechanism_check_imports_no_plugin(plugin, changes, field):
    name, marker = plugin
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(_text(name, **changes))
    assert caught.value.field == field
    assert not marker.exists(), "the plugin's module ran for a refused scenario"
    assert name not in sys.modules
