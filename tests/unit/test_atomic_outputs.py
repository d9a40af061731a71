"""results.json and ledger.json are written whole or not at all (``scenarios.jsonout``).

Before, ``(out / "results.json").write_text(...)`` in 14 places: a run stopped while
writing (Ctrl-C, a full disk) left a truncated results.json that a reader took for the
run's (helper R). Now each is written beside its path and renamed over it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from ldpfleet.scenarios import jsonout

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _interrupted_write(self, data):
    with open(self, "wb") as handle:
        handle.write(data[: len(data) // 2])
    raise KeyboardInterrupt


@pytest.mark.parametrize("writer", ["results", "json"])
def test_an_interrupted_write_leaves_the_previous_file_and_no_partial(
    tmp_path, monkeypatch, writer
):
    path = tmp_path / "results.json"
    path.write_text(json.dumps({"run": "previous"}))
    monkeypatch.setattr(Path, "write_bytes", _interrupted_write)
    with pytest.raises(KeyboardInterrupt):
        if writer == "results":
            jsonout.write_results(path, {"run": "new", "values": list(range(1000))})
        else:
            jsonout.write_json(path, {"run": "new", "values": list(range(1000))}, indent=2)
    assert json.loads(path.read_text()) == {"run": "previous"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_a_complete_write_replaces_the_file(tmp_path):
    path = tmp_path / "results.json"
    path.write_text("{}")
    jsonout.write_results(path, {"a": float("nan"), "b": [1, 2]})
    assert path.read_text() == json.dumps({"a": float("nan"), "b": [1, 2]}, indent=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_no_scenario_module_writes_results_json_in_place():
    found = [
        f"{path.name}:{number}"
        for path in sorted(SCENARIOS.glob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r'"results\.json"\)\.write_(text|bytes)', line)
    ]
    assert found == []
