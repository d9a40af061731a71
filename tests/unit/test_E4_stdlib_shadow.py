"""A plugin file named like one of Python's own modules (``secrets.py`` on PYTHONPATH)
hides it from numpy: ``ldpfleet run`` printed a traceback ending in ``ImportError: cannot
import name randbits`` and exited 1. Now one sentence names the file and the fix, exit 2
(helper E's user trial, round 4; app/cli_common.stdlib_shadow)."""

from __future__ import annotations

import os
import subprocess
import sys

SCENARIO = """
[scenario]
name = "shadow"
[fleet]
devices = 2
[stream]
steps = 4
eps = 1.0
w = 2
mechanism = "secrets:Mine"
[source]
kind = "synthetic"
bounds = [0.0, 1.0]
"""


def test_a_plugin_named_like_a_python_module_is_named_not_a_traceback(tmp_path):
    (tmp_path / "secrets.py").write_text("class Mine:\n    pass\n")
    (tmp_path / "s.toml").write_text(SCENARIO)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "COLUMNS": "200"}
    done = subprocess.run(
        [sys.executable, "-m", "ldpfleet.app.cli", "run", "s.toml", "-b", "memory"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "╭" not in done.stderr, done.stderr
    assert f"{tmp_path / 'secrets.py'} (on PYTHONPATH) has the name of Python's own module" in (
        done.stderr.replace("\n", "")
    ), done.stderr
    assert "my_secrets" in done.stderr and not (tmp_path / "runs").exists()


def test_a_python_module_name_nobody_imported_is_not_blamed(tmp_path, monkeypatch):
    from ldpfleet.app.cli_common import stdlib_shadow

    (tmp_path / "turtle.py").write_text("")
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    assert "turtle" not in sys.modules or not getattr(sys.modules["turtle"], "__file__", "")
    assert stdlib_shadow() is None
