"""Second "bring your own" pass (helper C): what a plugin or scenario author hits.

Each test failed on the code before its fix (the commit says which)."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint, EntryPoints

import pytest
from ldpfleet.protocol import mechanisms
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanisms import ENTRY_POINT_GROUP, stream_mechanism
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

BASE = """
[scenario]
name = "byo2"
seed = 1
[fleet]
devices = 4
[stream]
steps = 40
eps = 2.0
w = 4
[source]
kind = "synthetic"
bounds = [0.0, 1.0]
"""


def _bind(monkeypatch, tmp_path, modules: dict[str, str], *entries: tuple[str, str]) -> None:
    """Modules written to ``tmp_path`` (on sys.path) and entry points of a fake
    distribution 'byo2-plugins' in the group ``ldpfleet.mechanisms``."""
    for name, text in modules.items():
        (tmp_path / f"{name}.py").write_text(text)
    monkeypatch.syspath_prepend(str(tmp_path))

    class _Dist:
        name = "byo2-plugins"

    fake = EntryPoints(
        [EntryPoint(name, value, ENTRY_POINT_GROUP)._for(_Dist()) for name, value in entries]
    )
    monkeypatch.setattr(
        mechanisms, "entry_points", lambda group: fake if group == ENTRY_POINT_GROUP else None
    )
    mechanisms._plugin_class.cache_clear()
    monkeypatch.setattr(mechanisms, "_checked", set())


@pytest.fixture(autouse=True)
def _fresh_plugin_cache():
    mechanisms._plugin_class.cache_clear()
    yield
    mechanisms._plugin_class.cache_clear()
    for name in ("byo2_needs_dep", "byo2_mech"):
        sys.modules.pop(name, None)


def test_a_plugin_whose_own_dependency_is_missing_is_not_told_to_fix_its_entry_point(
    monkeypatch, tmp_path
):
    """The target module imports but its dependency is missing: the entry point is right,
    so "fix the target in that package's entry points" sent the author to the wrong file
    (fails on the old code: that advice was given)."""
    _bind(
        monkeypatch,
        tmp_path,
        {"byo2_needs_dep": "import byo2_absent_dependency\nclass Mech: pass\n"},
        ("needs-dep", "byo2_needs_dep:Mech"),
    )
    with pytest.raises(ParameterError) as caught:
        stream_mechanism("needs-dep", 1.0)
    text = str(caught.value)
    assert "'byo2_needs_dep' imports 'byo2_absent_dependency'" in text, text
    assert "install it" in text and "byo2-plugins" in text, text
    assert "fix the target" not in text, text


def test_a_missing_target_module_still_says_fix_the_target(monkeypatch, tmp_path):
    _bind(monkeypatch, tmp_path, {}, ("gone", "byo2_gone_module:Mech"))
    with pytest.raises(ParameterError, match="fix the target in that package's entry points"):
        stream_mechanism("gone", 1.0)


def test_an_entry_point_without_a_class_names_the_missing_colon(monkeypatch, tmp_path):
    """``mine = "pkg.mod"`` (no ``:Class``) said "module 'pkg.mod' has no attribute ''"
    (fails on the old code)."""
    _bind(monkeypatch, tmp_path, {"byo2_mech": "class Mech: pass\n"}, ("nocls", "byo2_mech"))
    with pytest.raises(ParameterError) as caught:
        stream_mechanism("nocls", 1.0)
    text = str(caught.value)
    assert "has no attribute ''" not in text, text
    assert "'byo2_mech' names a module, not a class" in text, text
    assert "'byo2_mech:Class'" in text, text


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ("crash_between = [0.6, 0.2]", "got [0.6, 0.2]"),
        ("crash_between = [0.2, 1.5]", "got [0.2, 1.5]"),
    ],
)
def test_a_bad_crash_between_names_the_value(change, expected):
    """Every bad value names the field, the limit and the value: crash_between named only
    the limit (fails on the old code)."""
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(BASE + f"[faults]\n{change}\n")
    text = str(caught.value)
    assert "faults.crash_between: need 0 <= low <= high <= 1" in text and expected in text


def test_crashes_on_an_unpaced_stream_name_the_values():
    """The refusal named neither the crash fraction nor the pacing given (fails on the old
    code)."""
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(BASE + "[faults]\ncrash_fraction = 0.5\n")
    text = str(caught.value)
    assert "faults.crash_fraction" in text
    assert "got crash_fraction = 0.5 (2 of 4 devices) with stream.step_seconds = 0" in text


@pytest.mark.parametrize(
    "extra",
    [
        ('mechanism = "sw"\nmechanism_params = {clip = 0.5}', "stream.mechanism_params"),
        ('mechanism = "sw"\nparams = {clip = 0.5}', "stream.params"),
        ('mechanism = "sw"\nmechanism_options = {clip = 0.5}', "stream.mechanism_options"),
    ],
)
def test_mechanism_parameters_in_the_scenario_say_how_to_set_them(extra):
    """A plugin author's first try at a parameter from the TOML got only "unknown key"
    (fails on the old code): the sentence now says a subclass per setting is the way."""
    line, key = extra
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(BASE.replace("w = 4\n", f"w = 4\n{line}\n"))
    text = str(caught.value)
    assert f"{key}: unknown key" in text, text
    assert "a subclass per setting" in text and "Cls(eps)" in text, text
    assert "did you mean" not in text and "\n" not in text, text


def test_a_mechanism_section_says_how_to_set_parameters():
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(BASE + "[mechanism]\nclip = 0.5\n")
    text = str(caught.value)
    assert "mechanism: unknown section `mechanism`" in text
    assert "a subclass per setting" in text, text


def test_window_is_pointed_to_w():
    """``window = 4`` found no near miss for ``w`` (fails on the old code)."""
    with pytest.raises(
        ScenarioError, match=r"unknown key `window` in \[stream\]; did you mean `w`"
    ):
        parse_scenario(BASE.replace("w = 4", "window = 4"))


def test_an_import_error_of_a_plugin_is_not_labelled_with_the_budget(monkeypatch, tmp_path):
    """A plugin that does not import has nothing to do with the budget: the sentence ended
    with "(checked at the budget of one report, ...)" all the same (fails on the old
    code)."""
    _bind(
        monkeypatch,
        tmp_path,
        {"byo2_needs_dep": "import byo2_absent_dependency\nclass Mech: pass\n"},
        ("needs-dep", "byo2_needs_dep:Mech"),
    )
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(BASE.replace("w = 4\n", 'w = 4\nmechanism = "needs-dep"\n'))
    assert "budget of one report" not in str(caught.value), str(caught.value)


SILENT_FAILURES = """
import math
import numpy as np

class AssertsBudget:
    def __init__(self, eps):
        assert 0 < eps <= 0.1
        self.eps = eps

    def perturb(self, x, rng):
        return rng.random(np.shape(x))

    def in_domain(self, y):
        return np.ones(np.shape(y), dtype=bool)

    def estimate_mean(self, y):
        return 0.5


class LooksUpAKey(AssertsBudget):
    def __init__(self, eps):
        self.eps = eps
        self.settings = {}

    def perturb(self, x, rng):
        return rng.random(np.shape(x)) * self.settings["clip"]
"""


@pytest.mark.parametrize(
    ("cls", "expected"),
    [
        (
            "AssertsBudget",
            "refused eps = 1: AssertionError (raised at byo2_silent.py:7: assert 0 < eps <= 0.1)",
        ),
        (
            "LooksUpAKey",
            "perturb failed on inputs in [0, 1]: KeyError: 'clip' (raised at byo2_silent.py:26:",
        ),
    ],
)
def test_a_plugin_exception_without_a_message_is_named_with_its_type_and_line(
    monkeypatch, tmp_path, cls, expected
):
    """A bare ``assert`` in a plugin's constructor said "refused eps = 1: " and nothing
    more, a missing dict key only "'clip'" (fails on the old code)."""
    _bind(monkeypatch, tmp_path, {"byo2_silent": SILENT_FAILURES})
    sys.modules.pop("byo2_silent", None)
    with pytest.raises(ParameterError) as caught:
        stream_mechanism(f"byo2_silent:{cls}", 1.0)
    assert expected in str(caught.value), str(caught.value)


def test_a_misspelt_plugin_name_in_audit_gets_the_registered_near_miss(monkeypatch, tmp_path):
    """``ldpfleet audit c-p`` listed 28 battery entries and the registered names, with no
    "did you mean" for the plugin ``c-pm`` (fails on the old code)."""
    from ldpfleet.app.audit_cli import option_error

    _bind(monkeypatch, tmp_path, {}, ("c-pm", "byo2_mech:Mech"), ("krr-greedy", "m:K"))
    error = ParameterError("must be one of ...", field="mechanism")
    assert option_error(error, "krr-gredy", None).endswith("(did you mean 'krr-greedy'?)")


def test_a_plugin_in_audit_all_only_is_pointed_to_its_own_audit(monkeypatch, tmp_path):
    """``ldpfleet audit all --only c-pm`` said only that c-pm is not a battery entry
    (fails on the old code): a plugin is audited by its own name."""
    from ldpfleet.app.audit_cli import option_error

    _bind(monkeypatch, tmp_path, {}, ("c-pm", "byo2_mech:Mech"))
    error = ParameterError("must be battery entries (rr, ...), got 'c-pm'", field="only")
    line = option_error(error, "all", ["c-pm"])
    assert "'c-pm' is a mechanism, not a battery entry: audit it with ldpfleet audit c-pm" in line
    line = option_error(error, "all", ["pkg.mod:Cls"])
    assert "audit it with ldpfleet audit pkg.mod:Cls" in line


def test_a_misspelt_plugin_name_in_a_scenario_gets_the_registered_near_miss(monkeypatch, tmp_path):
    """``mechanism = "krr-gredy"`` listed the registered names but guessed only among the
    built-ins (fails on the old code)."""
    _bind(monkeypatch, tmp_path, {}, ("krr-greedy", "m:K"), ("c-pm", "m:P"))
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(BASE.replace("w = 4\n", 'w = 4\nmechanism = "krr-gredy"\n'))
    assert str(caught.value).endswith('(did you mean "krr-greedy"?)'), str(caught.value)


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (BASE.replace('kind = "synthetic"', 'kind = "csv"\npath = ""'), "source.path"),
        (
            '[scenario]\nname = "g"\n[graph]\nsource = ""\n[cadr]\neps = 2.0\n',
            "graph.source",
        ),
    ],
)
def test_an_empty_path_is_refused_as_empty(text, key):
    """``path = ""`` resolved to the scenario's folder: "source.path: /tmp is not a regular
    file" named neither the value nor the limit (fails on the old code)."""
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text)
    assert f"{key}: Expected `str` of length >= 1, got ''" in str(caught.value), str(caught.value)


def test_a_key_above_every_section_is_named_as_a_key_with_its_section():
    """``seed = 3`` above ``[scenario]`` was called an "unknown section `seed`" (fails on
    the old code): TOML puts it at the top level, and the sentence now says which section
    has that key."""
    with pytest.raises(ScenarioError) as caught:
        parse_scenario("seed = 3\n" + BASE)
    text = str(caught.value)
    assert "seed: `seed = 3` is a key outside any section" in text, text
    assert "it belongs under [scenario]" in text, text
    assert "unknown section" not in text, text
