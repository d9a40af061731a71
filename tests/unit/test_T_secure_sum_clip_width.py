"""``[secure_sum] clip`` with finite bounds whose width overflows is named as the clip.

Held-out QA (helper T, 2026-12-06): ``clip = [-1e308, 1e308]`` was refused as
"secure_sum.scale: (clip_high - clip_low) * scale must round to an integer in [1, 2^53],
got inf", naming a setting the user had not written.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ldpfleet.scenarios.schema import load_scenario
from ldpfleet.scenarios.schema_errors import ScenarioError

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios" / "secure-sum.toml"


def _load(tmp_path: Path, clip: str):
    text = SHIPPED.read_text().replace("clip = [5.0, 35.0]", f"clip = {clip}")
    path = tmp_path / "s.toml"
    path.write_text(text)
    return load_scenario(path)


def test_an_infinite_width_names_the_clip(tmp_path: Path) -> None:
    with pytest.raises(ScenarioError) as error:
        _load(tmp_path, "[-1e308, 1e308]")
    message = str(error.value)
    assert "secure_sum.clip: clip_high - clip_low must be finite" in message
    assert "[-1e+308, 1e+308]" in message and "secure_sum.scale" not in message


def test_a_wide_finite_clip_still_loads(tmp_path: Path) -> None:
    assert _load(tmp_path, "[-1e6, 1e6]").fixed_point().clip_high == 1e6
