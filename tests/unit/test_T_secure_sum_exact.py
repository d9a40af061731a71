"""results.json ``secure_sum.exact`` is docs/secagg.md's: the unmasked integer total equals
the survivors' encodings summed, not "the decoded total is within n / (2 scale)".

Held-out QA (helper T, 2026-12-06): with ``scale = 0.04`` (clip [5, 35]: one unit is 25)
the bound n / (2 scale) = 562 exceeds any device's input, so a total missing a survivor's
input still said ``exact: true``; one unit off at the default scale did too.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from ldpfleet.scenarios.runner import score_secure_sum
from ldpfleet.scenarios.schema import load_scenario

SHIPPED = Path(__file__).resolve().parents[2] / "scenarios" / "secure-sum.toml"


def _scenario(tmp_path: Path, scale: float):
    text = SHIPPED.read_text().replace("scale = 65536.0", f"scale = {scale}")
    path = tmp_path / "s.toml"
    path.write_text(text)
    return load_scenario(path)


def _inputs(scenario, n: int = 50):
    rng = np.random.default_rng(0)
    fixed_point = scenario.fixed_point()
    names = [f"d{i:04d}" for i in range(n)]
    vectors = {
        d: np.clip(rng.uniform(0.0, 40.0, 16), fixed_point.clip_low, fixed_point.clip_high)
        for d in names
    }
    return fixed_point, names[:45], vectors


def test_a_missing_survivor_is_not_exact_even_at_a_coarse_scale(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, 0.04)
    fixed_point, survivors, vectors = _inputs(scenario)
    complete = sum(fixed_point.encode(vectors[d]) for d in survivors)
    total = fixed_point.decode_sum(complete, len(survivors))
    assert score_secure_sum(scenario, {}, total, survivors, vectors)["exact"] is True
    missing = sum(fixed_point.encode(vectors[d]) for d in survivors[:-1])
    total = fixed_point.decode_sum(missing, len(survivors))
    assert score_secure_sum(scenario, {}, total, survivors, vectors)["exact"] is False


def test_one_unit_off_is_not_exact(tmp_path: Path) -> None:
    scenario = _scenario(tmp_path, 65536.0)
    fixed_point, survivors, vectors = _inputs(scenario)
    encoded = sum(fixed_point.encode(vectors[d]) for d in survivors)
    total = fixed_point.decode_sum(encoded, len(survivors))
    assert score_secure_sum(scenario, {}, total, survivors, vectors)["exact"] is True
    encoded[3] += 1
    total = fixed_point.decode_sum(encoded, len(survivors))
    assert score_secure_sum(scenario, {}, total, survivors, vectors)["exact"] is False
