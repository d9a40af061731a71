"""A pytest plugin recording the inputs of every ``devices.sources._parse_table`` call of a
test run, for ``scripts/S2_pin.py``'s table corpus:
``PYTHONPATH=scripts S2_RECORD=out.jsonl pytest -p S2_record_plugin tests/...``.
Per call it appends the file's raw bytes (base64; a file under the repository's ``data/``
by its relative path instead), its base name and ``has_header``. Helper S2, 2026-12-06."""

from __future__ import annotations

import base64
import json
import os

from ldpfleet.devices import sources

_real = sources._parse_table
_record = os.environ.get("S2_RECORD")
_DATA = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "data")) + os.sep


def _recording(path, key, has_header=None):
    """``_parse_table``, its inputs appended to ``$S2_RECORD``."""
    if _record:
        real = os.path.realpath(path)
        line = {"name": os.path.basename(path), "header": has_header}
        if real.startswith(_DATA):
            line["data"] = real[len(_DATA) :]
        else:
            try:
                with open(path, "rb") as fh:
                    line["bytes"] = base64.b64encode(fh.read()).decode("ascii")
            except OSError:
                line = None
        if line is not None:
            with open(_record, "a", encoding="utf-8") as out:
                out.write(json.dumps(line) + "\n")
    return _real(path, key, has_header)


_recording.cache_clear = _real.cache_clear
sources._parse_table = _recording
