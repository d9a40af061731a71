"""The third evaluation's criteria for clip at small ε (scripts/L_small_eps.py ``excess``;
helper L2, docs/preregistration/L2-clip-small-eps-weak-third.md): the promise's violation
is measured as the summed excess above the constant median, Σ max(0, MAE − median), plus
the count of cells above it by more than ``ABOVE_MARGIN`` (0.01), so a cell sitting at the
median that moves by hundredths does not decide the outcome, while a real crossing does."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "L_small_eps.py"


@pytest.fixture(scope="module")
def small_eps():
    spec = importlib.util.spec_from_file_location("L_small_eps", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("L_small_eps", module)
    spec.loader.exec_module(sys.modules["L_small_eps"])
    return sys.modules["L_small_eps"]


def _row(graph, eps, seed, median, zero, main_mae, rule_mae, changed=True, emd=(1.0, 1.0)):
    def figures(mae, e):
        return {"mae": mae, "emd": e, "median": median, "zero": zero}

    return {
        "graph": graph, "n": 40, "eps": eps, "seed": seed,
        "split main": [0.4, 0.1], "split rule": [0.45, 0.05] if changed else [0.4, 0.1],
        "main": figures(main_mae, emd[0]), "rule": figures(rule_mae, emd[1]),
    }  # fmt: skip


def _verdict(small_eps, rows):
    cells = small_eps.cell_means(rows, "rule")
    return small_eps.third_criteria(small_eps.third_sums(cells, "rule"), "rule")


def test_a_median_cell_moving_by_hundredths_does_not_decide_but_the_excess_falls(small_eps):
    """Cell a sits at the median and moves +0.005; cell b falls from 1.0 above the median
    onto it. Plain count 1 -> 1 (the old criterion 2 would fail); excess 1.0 -> 0.005."""
    rows = [_row("a", 0.5, s, 1.0, 9.0, 1.0, 1.005) for s in (1, 2, 3)]
    rows += [_row("b", 0.75, s, 2.0, 9.0, 3.0, 2.0) for s in (1, 2, 3)]
    s = small_eps.third_sums(small_eps.cell_means(rows, "rule"), "rule")
    assert s["main excess"] == pytest.approx(1.0) and s["rule excess"] == pytest.approx(0.005)
    assert (s["main>med"], s["rule>med"]) == (1, 1)
    assert (s["main>med+0.01"], s["rule>med+0.01"]) == (1, 0)
    assert all(_verdict(small_eps, rows).values())


def test_a_real_crossing_above_the_margin_fails_criterion_2(small_eps):
    rows = [_row("a", 0.5, s, 1.0, 9.0, 1.0, 1.02) for s in (1, 2, 3)]
    rows += [_row("b", 0.75, s, 2.0, 9.0, 1.9, 1.5) for s in (1, 2, 3)]
    verdict = _verdict(small_eps, rows)
    assert verdict["1 summed MAE lower"]
    assert not verdict["2 summed excess above the constant median lower, none more above it"]


def test_newly_above_all_zeros_and_a_changed_high_eps_cell_fail(small_eps):
    rows = [_row("a", 0.5, 1, 5.0, 2.0, 1.9, 2.1)]
    rows += [_row("b", 2.0, 1, 5.0, 9.0, 3.0, 1.0)]
    verdict = _verdict(small_eps, rows)
    assert not verdict["3 none newly above all zeros"]
    assert not verdict["5 no ε >= 2 cell changed"]


def test_emd_more_than_two_percent_higher_fails_criterion_4(small_eps):
    rows = [_row("a", 0.5, 1, 5.0, 9.0, 3.0, 2.0, emd=(1.0, 1.03))]
    verdict = _verdict(small_eps, rows)
    assert not verdict["4 summed EMD not higher by > 2 %"]
    assert verdict["1 summed MAE lower"]


def test_unchanged_cells_are_left_out(small_eps):
    rows = [_row("a", 0.5, 1, 1.0, 9.0, 3.0, 3.0, changed=False)]
    rows += [_row("b", 0.5, 1, 1.0, 9.0, 3.0, 2.0)]
    assert [c["graph"] for c in small_eps.cell_means(rows, "rule")] == ["b"]
