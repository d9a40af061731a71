"""The load-time check runs perturb on a batch of readings all 0 and all 1 (helper M).

`mbad:DropsLastOnHigh` returns one report fewer when its batch's mean is above 0.95: the
sample of 256 inputs (mean 0.5), the batches of 1 and 300 (a grid) and the audit's batches
(x, 0, x, 0, ...) never reach that, so it loaded, audited inconclusive (0.859) and failed
on every device of a fleet whose readings sat above the bounds (exit 1, 6 device errors,
0 reports). Now refused at load with one sentence naming the batch. Deterministic: no
statistics.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanisms import stream_mechanism

PLUGINS = Path(__file__).resolve().parents[2] / "scripts" / "M_plugins"


@pytest.fixture(autouse=True)
def plugin_path(monkeypatch):
    monkeypatch.syspath_prepend(str(PLUGINS))


def test_a_report_dropped_for_a_batch_at_the_upper_bound_is_refused_at_load():
    with pytest.raises(ParameterError) as caught:
        stream_mechanism("mbad:DropsLastOnHigh", 1.0)
    assert caught.value.field == "mechanism"
    assert str(caught.value).endswith(
        "perturb returned shape (299,) for inputs of shape (300,) (on a batch of 300 inputs "
        "all 1: a device whose readings sit at a bound passes such batches; the sample of "
        "256 passed)"
    )


@pytest.mark.parametrize("cls", ["BucketKRR", "UnaryFloat", "ThreeLevel", "CountingDuchi"])
def test_honest_plugins_still_load(cls):
    assert stream_mechanism(f"mgood:{cls}", 1.0).eps == 1.0
