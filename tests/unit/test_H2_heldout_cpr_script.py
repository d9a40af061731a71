"""scripts/H_heldout_cpr.py (docs/heldout-cpr.md) runs on a tiny grid and summarises it; its
answer classes and generators are what the page says they are."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "H_heldout_cpr.py"


def _script():
    spec = importlib.util.spec_from_file_location("H_heldout_cpr", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("H_heldout_cpr", module)
    spec.loader.exec_module(sys.modules["H_heldout_cpr"])
    return sys.modules["H_heldout_cpr"]


def test_tiny_grid_runs_and_summarises(tmp_path, capsys):
    h = _script()
    out = tmp_path / "h.jsonl"
    common = ["run", "--out", str(out), "--eps", "1"]
    h.main([*common, "--part", "aperiodic", "--trials", "3", "--lengths", "60"])
    tiny = ["--templates", "triangle,heartbeat", "--shapes", "8,10;13,4"]
    h.main([*common, "--part", "periodic", "--periodic-trials", "2", "--rec-trials", "1", *tiny])
    h.main([*common, "--part", "speed", "--speed-streams", "1"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    ap = [r for r in rows if r["part"] == "aperiodic"]
    pe = [r for r in rows if r["part"] == "periodic"]
    sp = [r for r in rows if r["part"] == "speed"]
    assert {r["family"] for r in ap} == set(h.FAMILIES)
    assert all(r["n"] == 60 and r["trials"] == 3 and r["eps0"] == 1.0 for r in ap)
    assert len(pe) == 4 and all(sum(r["kinds"]["detect_period"].values()) == 2 for r in pe)
    assert all(len(r["reconstruction"]) == 1 for r in pe)
    assert len(sp) == len(h.FAMILIES) + len(h.TEMPLATES) * len(h.SPEED_PERIODS)
    capsys.readouterr()
    h.main(["summary", str(out)])
    text = capsys.readouterr().out
    for heading in ("## C3", "## C4", "## C5", "## C8"):
        assert heading in text


def test_answer_classes():
    c = _script().classify
    assert c(None, 100, 10) == "abstain"
    assert c(100, 100, 10) == "exact"
    assert c(99, 100, 10) == c(101, 100, 10) == "off1"
    assert c(110, 100, 10) == "near" and c(111, 100, 10) == "far"  # max(1, T^2 // n) = 10
    assert c(201, 100, 10) == "double" and c(49, 100, 10) == "half"
    assert c(300, 100, 10) == "multiple" and c(25, 100, 10) == "divisor"
    assert c(160, 100, 10) == "far"


@pytest.mark.parametrize("n", [60, 1000])
def test_generators_give_streams_in_the_unit_interval(n):
    h = _script()
    for name, gen in h.FAMILIES.items():
        x = gen(n, np.random.default_rng(1))
        assert x.shape == (n,) and np.all((x >= 0) & (x <= 1)), name
        assert np.ptp(x) > 0, name
    for name in h.TEMPLATES:
        cycle = h.template(name, 37, np.random.default_rng(2))
        assert cycle.shape == (37,) and cycle.min() == 0 and cycle.max() == 1, name


def test_follow_up_families_and_fresh_blocks():
    h = _script()
    x = h.family("level_0.1")(500, np.random.default_rng(3))
    assert abs(float(np.median(x)) - 0.1) < 0.01 and x.min() >= 0
    white = h.family("grid:white")(500, np.random.default_rng(3))
    assert white.std() > 0.2  # the grid's uniform white noise, not a level
    first = h.aperiodic_cell("level_0.1", 60, 5.0, 2)
    fresh = h.aperiodic_cell("level_0.1", 60, 5.0, 2, offset=10_000)
    assert fresh["trial_offset"] == 10_000 and first["trial_offset"] == 0
    assert h.rng_for("aperiodic", "t", 0).random() != h.rng_for("aperiodic", "t", 10_000).random()
