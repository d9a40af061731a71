"""A scenario built in code as a dict (held-out library-user QA, helper D, 2026-12-05).

Found (fails on the code before the fix): ``parse_scenario`` took TOML text only, and
Python writes no TOML (``tomllib`` reads it; ``tomli_w`` is not a dependency), so a
researcher sweeping ``eps`` edited the text with ``str.replace`` (a silent no-op when the
spacing differs) or wrote a TOML emitter of their own. ``parse_scenario`` now takes a dict
of sections too (``LoadedScenario.to_dict()`` round-trips), numpy numbers and arrays
included, and names a key whose value TOML cannot hold.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ldpfleet
from ldpfleet.scenario_dict import scenario_toml

BASE = {
    "scenario": {"name": "from-a-dict", "seed": 4},
    "fleet": {"devices": 3},
    "stream": {"steps": 12, "eps": 2.0, "w": 4},
    "source": {"kind": "synthetic", "shape": "sine", "period": 6, "bounds": [-1.0, 1.0]},
}


def test_a_dict_is_a_scenario_and_runs(tmp_path):
    loaded = ldpfleet.parse_scenario(BASE)
    assert loaded.name == "from-a-dict" and loaded.spec.stream.eps == 2.0
    results = ldpfleet.run(loaded, broker="memory", out_dir=tmp_path)
    assert results["devices_complete"] == 3 and results["reports_lost"] == 0


def test_numpy_values_are_values():
    data = {
        **BASE,
        "stream": {"steps": np.int64(12), "eps": np.float32(0.5), "w": np.int8(4)},
        "source": {**BASE["source"], "bounds": np.array([-2.0, 2.0])},
    }
    spec = ldpfleet.parse_scenario(data).spec
    assert (spec.stream.steps, spec.stream.eps, spec.stream.w) == (12, 0.5, 4)
    assert tuple(spec.source.bounds) == (-2.0, 2.0)


@pytest.mark.parametrize("name", ["quickstart", "faults", "periodic-sensing", "secure-sum"])
def test_to_dict_round_trips(name):
    loaded = ldpfleet.load_scenario(name)
    again = ldpfleet.parse_scenario(loaded.to_dict(), path=loaded.path)
    assert again.spec == loaded.spec


def test_a_sweep_over_eps_builds_each_scenario():
    for eps in np.linspace(0.5, 2.0, 4):
        data = {**BASE, "stream": {**BASE["stream"], "eps": eps}}
        assert math.isclose(ldpfleet.parse_scenario(data).spec.stream.eps, eps)


@pytest.mark.parametrize(
    ("section", "value", "key"),
    [
        ("stream", {"steps": 12, "eps": 1 + 2j, "w": 4}, "stream.eps"),
        ("stream", {"steps": 12, "eps": 2.0, "w": {1, 2}}, "stream.w"),
        ("source", {**BASE["source"], "bounds": [-1.0, object()]}, "source.bounds[1]"),
    ],
)
def test_a_value_toml_cannot_hold_is_named(section, value, key):
    with pytest.raises(ldpfleet.ScenarioError) as info:
        ldpfleet.parse_scenario({**BASE, section: value})
    assert str(info.value).startswith(f"{key}: "), str(info.value)


def test_the_schema_still_names_a_bad_key():
    with pytest.raises(ldpfleet.ScenarioError) as info:
        ldpfleet.parse_scenario({**BASE, "stream": {**BASE["stream"], "eps": -1.0}})
    assert "stream.eps" in str(info.value)


def test_a_section_that_is_not_a_table_is_named():
    with pytest.raises(ldpfleet.ScenarioError) as info:
        ldpfleet.parse_scenario({**BASE, "fleet": 3})
    assert "fleet" in str(info.value)


def test_text_still_parses_and_other_types_are_still_refused():
    text = '[scenario]\nname = "t"\n[fleet]\ndevices = 2\n[stream]\nsteps = 8\neps = 1.0\nw = 4\n'
    text += '[source]\nkind = "synthetic"\nbounds = [-1.0, 1.0]\n'
    assert ldpfleet.parse_scenario(text).name == "t"
    with pytest.raises(ldpfleet.ScenarioError) as info:
        ldpfleet.parse_scenario(3)
    assert "load_scenario" in str(info.value) and "dict" in str(info.value)


class HalfLaplace:
    """A module-level mechanism class (inputs in [0, 1], Laplace noise of scale 1/eps)."""

    def __init__(self, eps):
        self.eps = eps

    def perturb(self, x, rng):
        return np.asarray(x, float) + rng.laplace(0.0, 1.0 / self.eps, np.shape(x))

    def in_domain(self, y):
        return np.isfinite(np.asarray(y, float))

    def estimate_mean(self, y):
        return float(np.mean(y))


def test_a_mechanism_class_is_a_value_of_stream_mechanism(tmp_path):
    data = {**BASE, "stream": {**BASE["stream"], "mechanism": HalfLaplace}}
    loaded = ldpfleet.parse_scenario(data)
    assert loaded.spec.stream.mechanism == f"{HalfLaplace.__module__}:HalfLaplace"
    results = ldpfleet.run(loaded, broker="memory", out_dir=tmp_path)
    assert results["reports_lost"] == 0 and results["reports_rejected"] == 0


def test_a_mechanism_instance_is_named_with_its_key():
    data = {**BASE, "stream": {**BASE["stream"], "mechanism": HalfLaplace(1.0)}}
    with pytest.raises(ldpfleet.ScenarioError) as info:
        ldpfleet.parse_scenario(data)
    assert str(info.value).startswith("stream.mechanism: ") and "the class" in str(info.value)


@pytest.mark.parametrize(
    ("value", "words"),
    [(None, "a path"), (3, "a path"), ("", "a path"), (BASE, "parse_scenario")],
    ids=["None", "int", "empty", "dict"],
)
def test_load_scenario_names_what_is_not_a_path(value, words):
    """``load_scenario(None)`` / ``(3)`` / ``({...})`` died in pathlib's ``TypeError``,
    ``load_scenario("")`` said ". is a directory". Fails on the code before the fix."""
    with pytest.raises(ldpfleet.ScenarioError) as info:
        ldpfleet.load_scenario(value)
    assert words in str(info.value), str(info.value)


def test_load_scenario_still_loads_paths_and_names(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(scenario_toml(BASE))
    assert ldpfleet.load_scenario(path).name == "from-a-dict"
    assert ldpfleet.load_scenario(str(path)).path == path
    assert ldpfleet.load_scenario("quickstart").name == "quickstart"
