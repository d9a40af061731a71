"""The held-out user-input battery (scripts/F2_user_inputs.py) passes: every odd input
works with a checked result or is refused with a typed error naming its field, and none
is a traceback or silently wrong. Before helper F's fixes, 12 of its cases failed (a
weighted line beside a lone id read as two edges; ``prepare("mnist")`` ran WISDM; NaN
Intel Lab readings released; KeyError / ValueError / UnicodeDecodeError from the WISDM
and Intel Lab loaders)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "F2_user_inputs.py"


def _battery():
    spec = importlib.util.spec_from_file_location("F2_user_inputs", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("F2_user_inputs", module)  # its dataclasses look themselves up
    spec.loader.exec_module(sys.modules["F2_user_inputs"])
    return sys.modules["F2_user_inputs"]


def _failures(tmp_path: Path, groups: tuple[str, ...]) -> list[str]:
    battery = _battery()
    failed = []
    for group in groups:
        folder = tmp_path / group
        folder.mkdir()
        for case in battery.GROUPS[group](folder):
            outcome = battery.run_case(case)
            if outcome.verdict != "pass":
                failed.append(f"{group} {case.name}: {outcome.detail}")
    return failed


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # a refused input may warn first
def test_files_arrays_and_streams(tmp_path):
    assert _failures(tmp_path, ("graph", "occupancy", "datasets", "period")) == []


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_scenario_sources_plugins_and_commands(tmp_path):
    assert _failures(tmp_path, ("sources", "plugin", "cli")) == []


def test_the_battery_judges_an_untyped_error_and_a_wrong_result_as_failures():
    battery = _battery()

    def untyped():
        raise KeyError("user")

    outcomes = [
        battery.run_case(battery.Case("t", "untyped", untyped, "refused")),
        battery.run_case(battery.Case("t", "wrong", lambda: 3, "ok", lambda r: r == 4)),
        battery.run_case(battery.Case("t", "accepted", lambda: 3, "refused")),
    ]
    assert [o.verdict for o in outcomes] == ["FAIL"] * 3
