"""``from ldpfleet import ScenarioError`` (an ``except`` clause at the top of a script) does
not import scipy (helper U: it took ~0.5 s, importing scipy, cryptography and the whole
schema, for an exception class; now ~0.16 s, msgspec and numpy)."""

from __future__ import annotations

import subprocess
import sys

import ldpfleet

CODE = """
import sys
from ldpfleet import ScenarioError
print(sorted(m for m in ("scipy", "cryptography", "networkx", "matplotlib") if m in sys.modules))
"""


def test_the_scenario_error_class_comes_without_scipy():
    run = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "[]", run.stdout


def test_it_is_the_class_the_schema_raises():
    import ldpfleet.scenarios.schema as schema

    assert ldpfleet.ScenarioError is schema.ScenarioError
