"""Boundary sweep of docs/scenario-reference.md (brief A, item 4): files written from the
reference alone with a value at a limit, just inside and just outside. What the sweep
found wrong, each fixed with its test here."""

from __future__ import annotations

import pytest
from ldpfleet.scenarios.schema import parse_scenario

STREAM = """\
[scenario]
name = "b"
[fleet]
devices = 4
[stream]
steps = {steps}
eps = 50.0
w = {w}
[source]
kind = "synthetic"
bounds = [0.0, 1.0]
"""


@pytest.mark.parametrize(("w", "steps"), [(4097, 5000), (5000, 10_000), (100_000, 200_000)])
def test_a_window_above_the_batch_limit_loads_without_batch_steps(w, steps):
    """Old: w = 5,000 (the reference allows w <= 100,000) without batch_steps was refused
    as "stream.batch_steps: must be an integer in [1, 4096]", a key the file did not set:
    the default batch was one window, min(w, steps), uncapped. Now min(w, steps, 4096)."""
    loaded = parse_scenario(STREAM.format(w=w, steps=steps))
    assert loaded.stream_config("r").batch_steps == 4096
    assert parse_scenario(STREAM.format(w=4096, steps=5000)).stream_config("r").batch_steps == 4096
    assert parse_scenario(STREAM.format(w=10, steps=5)).stream_config("r").batch_steps == 5
