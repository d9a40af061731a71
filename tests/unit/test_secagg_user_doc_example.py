"""docs/secagg.md's Python example runs as written (held-out user QA, helper F,
2026-12-05: the page showed only the collector's call, not how devices take part)."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "secagg.md"


def test_every_python_example_of_the_secagg_page_runs() -> None:
    blocks = re.findall(r"^```python\n(.*?)^```", DOC.read_text(), flags=re.S | re.M)
    assert blocks, "docs/secagg.md has a Python example"
    for number, block in enumerate(blocks, 1):
        exec(compile(block, f"docs/secagg.md block {number}", "exec"), {})
