"""A pytest plugin recording every ``parse_scenario`` call of a test run and its outcome
(``scripts/K3_pin.py``): ``PYTHONPATH=scripts K3_RECORD=out.jsonl pytest -p K3_record_plugin``.
It wraps ``ldpfleet.scenarios.schema.parse_scenario`` when the plugin is imported, before
any test module imports the name."""

from __future__ import annotations

import json
import os

import K3_pin
from ldpfleet.scenarios import schema

_real_parse = schema.parse_scenario
_record = os.environ.get("K3_RECORD")


def _recording_parse(text, path=None):
    """``parse_scenario``, its call and outcome appended to ``$K3_RECORD``."""
    if _record and isinstance(text, str):
        result = K3_pin.outcome(lambda: _real_parse(text, path))
        with open(_record, "a", encoding="utf-8") as out:
            line = {"text": text, "path": str(path) if path else None, "outcome": result}
            out.write(json.dumps(line, default=repr) + "\n")
    return _real_parse(text, path)


schema.parse_scenario = _recording_parse
