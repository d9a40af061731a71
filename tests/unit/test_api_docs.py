"""docs/api.md works as written, and ``import ldpfleet`` is the public API it describes."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import ldpfleet

DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.S | re.M)


def test_every_example_of_the_api_page_runs(tmp_path, monkeypatch):
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the page puts "." on it
    namespace: dict = {}
    for number, block in enumerate(blocks, 1):
        try:
            exec(compile(block, f"docs/api.md block {number}", "exec"), namespace)
        except Exception as error:  # name the failing block
            pytest.fail(f"docs/api.md block {number} failed: {error!r}")


def test_every_public_name_resolves_and_is_documented():
    text = DOC.read_text()
    for name in ldpfleet.__all__:
        assert getattr(ldpfleet, name) is not None
        assert f"`{name}" in text or name == "__version__", f"{name} is not on docs/api.md"
    assert ldpfleet.__version__
    with pytest.raises(AttributeError, match="no attribute 'nonesuch'"):
        _ = ldpfleet.nonesuch


def test_import_ldpfleet_imports_nothing_heavy():
    code = "import sys, ldpfleet; print(' '.join(sorted(sys.modules)))"
    loaded = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout.split()
    )
    heavy = {"numpy", "scipy", "msgspec", "amqtt", "matplotlib", "ldpfleet.scenarios"}
    assert not heavy & loaded, sorted(heavy & loaded)
