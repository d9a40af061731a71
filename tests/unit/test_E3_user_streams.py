"""Helper E, round 3 (issue 19): a table read with ``np.genfromtxt(..., names=True)`` is a
structured array; ``detect_period``, ``cpr`` and the bench's baselines refused it as "must
be a 1-D array of real numbers" without saying why. Now the refusal names the fields and
what to pass; a one-field structured array is still read as its field."""

from __future__ import annotations

import io

import numpy as np
import pytest
from ldpfleet.app.cpr_period_baselines import autocorrelation_period, folded_variance_period
from ldpfleet.collector.cpr import cpr
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.sw import SquareWave


def _reports() -> np.ndarray:
    rng = np.random.default_rng(606113)
    return SquareWave(2.0).perturb(np.tile(np.linspace(0.0, 1.0, 24), 30), rng)


def _csv_table(values: np.ndarray) -> np.ndarray:
    text = "t,v\n" + "\n".join(f"{i},{v:.17g}" for i, v in enumerate(values))
    return np.genfromtxt(io.StringIO(text), delimiter=",", names=True)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (detect_period, "reports"),
        (lambda x: cpr(x, SquareWave(2.0)), "y"),
        (folded_variance_period, "x"),
        (autocorrelation_period, "x"),
    ],
)
def test_a_table_read_with_names_is_refused_naming_its_fields(call, name):
    table = _csv_table(_reports())
    with pytest.raises(ParameterError) as err:
        call(table)
    assert err.value.field == name
    message = str(err.value)
    assert "structured array with fields 't', 'v'" in message
    assert f"{name}['v']" in message
    assert err.value.value == "array of [('t', '<f8'), ('v', '<f8')]"


def test_one_field_of_the_table_gives_the_answer_of_the_plain_stream():
    reports = _reports()
    table = _csv_table(reports)
    assert detect_period(table["v"]).period == detect_period(reports).period == 24
    one_field = np.zeros(reports.size, dtype=[("v", float)])
    one_field["v"] = reports
    assert detect_period(one_field).period == 24  # numpy reads one field as the values


def test_many_fields_are_shortened_in_the_message():
    table = np.zeros(50, dtype=[(f"c{i}", float) for i in range(9)])
    with pytest.raises(ParameterError, match=r"'c5', \.\.\.\): pass one field, e.g. "):
        detect_period(table)
