"""The held-out periodic check (app/cpr_held_out_periodic.py): its shapes and one cell."""

import numpy as np
import pytest
from ldpfleet.app.cpr_held_out_periodic import SHAPES, cells, held_out_shape, markdown, run_cell


@pytest.mark.parametrize("kind", SHAPES)
def test_every_shape_is_one_cycle_in_the_unit_interval(kind):
    cycle = held_out_shape(kind, 37, np.random.default_rng(1))
    assert cycle.shape == (37,)
    assert cycle.min() == 0.0 and cycle.max() == 1.0


def test_unknown_shape_is_refused_by_name():
    with pytest.raises(ValueError, match="'saw'"):
        held_out_shape("saw", 10, np.random.default_rng(0))


def test_a_clear_cell_is_found_exactly_and_reported():
    # triangle, T = 17, 40 cycles, eps0 = 5: every detector is exact on nearly every stream
    index = cells().index(("triangle", 17, 40, 5.0))
    row = run_cell(index, "triangle", 17, 40, 5.0, trials=4)
    assert row["hits"]["detect_period"] == 4
    assert row["wrong_near"] == row["wrong_far"] == 0
    text = markdown([row], "cmd")
    assert "below a baseline (p < 0.05): 0" in text and "detect_period 4" in text
