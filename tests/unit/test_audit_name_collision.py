"""A plugin registered under the name of an audit battery entry (``rr``, ``stream``,
``gcdp``, ...): a scenario's ``mechanism = "rr"`` runs the plugin, but ``ldpfleet audit
rr`` audited the battery's Warner RR and said "inconclusive" — for a plugin that leaked
twice its budget (helper Q). Now the audit refuses the ambiguous name, naming the entry
point and the import path that audits the plugin."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

MODULE = '''
import math
import numpy as np

class Greedy:
    """Warner RR on a bit drawn with probability x, keeping it as if eps were 2 eps."""

    def __init__(self, eps):
        self.eps = float(eps)
        self.p = 1 / (1 + math.exp(-2 * self.eps))

    def perturb(self, x, rng):
        bit = rng.random(np.shape(x)) < x
        keep = rng.random(np.shape(x)) < self.p
        return np.where(keep, bit, ~bit).astype(float)

    def in_domain(self, y):
        y = np.asarray(y)
        return (y == 0.0) | (y == 1.0)

    def estimate_mean(self, y):
        return float((np.mean(y) - (1 - self.p)) / (2 * self.p - 1))
'''


def _installed(tmp_path, name: str):
    (tmp_path / "collide_mech.py").write_text(MODULE)
    info = tmp_path / "collide_mech-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: collide-mech\nVersion: 0.1.0\n")
    (info / "entry_points.txt").write_text(f"[ldpfleet.mechanisms]\n{name} = collide_mech:Greedy\n")
    return {**os.environ, "PYTHONPATH": str(tmp_path)}


def _cli(env, *args):
    return subprocess.run(
        [sys.executable, "-m", "ldpfleet.app.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


@pytest.mark.slow  # two audits in subprocesses, ~3 s
def test_a_plugin_named_like_a_battery_entry_is_not_audited_as_the_entry(tmp_path):
    env = _installed(tmp_path, "rr")
    done = _cli(env, "audit", "rr", "--eps", "1")
    assert done.returncode == 2, (done.returncode, done.stdout[:300])
    said = " ".join(done.stderr.split())
    assert "'collide-mech'" in said and "collide_mech:Greedy" in said, said
    assert "ldpfleet audit collide_mech:Greedy" in said and "--only rr" in said, said
    plugin = _cli(env, "audit", "collide_mech:Greedy", "--eps", "1")
    assert plugin.returncode == 1 and json.loads(plugin.stdout)["verdict"] == "violation"


def test_the_battery_entry_is_still_audited_without_such_a_plugin():
    done = _cli(dict(os.environ), "audit", "rr", "--eps", "1", "--trials", "2000")
    assert done.returncode == 0 and json.loads(done.stdout)["mechanism"] == "rr", done.stderr


@pytest.mark.slow
def test_a_builtin_stream_mechanism_name_keeps_the_builtin(tmp_path):
    """``duchi`` is both a battery entry and a built-in mechanism: the built-in wins in a
    scenario too (with the shadowing warning), so auditing it is not ambiguous."""
    env = _installed(tmp_path, "duchi")
    done = _cli(env, "audit", "duchi", "--eps", "1", "--trials", "2000")
    assert done.returncode == 0 and json.loads(done.stdout)["mechanism"] == "duchi", done.stderr


@pytest.mark.slow  # an audit refused in a subprocess, ~2 s
def test_the_python_api_refuses_the_ambiguous_name_too(tmp_path):
    """``ldpfleet.run_audit("rr", 1)`` went to the battery entry (Warner RR) while a
    scenario's ``mechanism = "rr"`` runs the plugin: the same refusal as the command."""
    env = _installed(tmp_path, "rr")
    code = (
        "import ldpfleet\n"
        "try:\n"
        "    ldpfleet.run_audit('rr', 1.0, trials=2000)\n"
        "except ldpfleet.ParameterError as error:\n"
        "    print('refused', error.field, error)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120
    )
    said = " ".join(done.stdout.split())
    assert said.startswith("refused mechanism"), (said, done.stderr[-500:])
    assert "collide_mech:Greedy" in said, said
