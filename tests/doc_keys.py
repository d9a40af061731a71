"""Shared by the tests that keep a JSON output's keys documented (results.json, the bench
JSONs): the dotted keys of a document, and the keys a document's table names."""

from __future__ import annotations

import re
from collections.abc import Collection
from pathlib import Path


def json_keys(d: dict, prefix: str = "", opaque: Collection[str] = ()) -> list[str]:
    """Every key of ``d`` as a dotted path, nested dicts included except those whose path
    is in ``opaque`` (dictionaries keyed by data: device ids, reasons)."""
    out = []
    for key, value in d.items():
        name = prefix + key
        out.append(name)
        if isinstance(value, dict) and name not in opaque:
            out += json_keys(value, name + ".", opaque)
    return out


def documented_keys(doc: Path, heading: str | None = None) -> set[str]:
    """The backquoted keys of the first column of the document's table rows (``| `key` |``),
    within the section under ``heading`` when given (to the next heading)."""
    text = doc.read_text()
    if heading is not None:
        assert heading in text, f"{doc.name} has no section {heading!r}"
        text = text.split(heading, 1)[1].split("\n#", 1)[0]
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    return {k for row in rows for k in re.findall(r"`([a-z0-9_.]+)`", row.split("|")[1])}
