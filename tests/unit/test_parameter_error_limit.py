"""``ParameterError`` from the shared checks carries the rule and the refused value as data
(``.limit``, ``.value``), beside ``.field``, as ``ScenarioError`` and the CLI's
``OptionError`` do: a library caller can act on a refusal without parsing its sentence. The
messages are unchanged."""

from __future__ import annotations

import math

import pytest
from ldpfleet.collector.gcdp.validate import real_in_range
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.validate import integer_at_least, positive_real


@pytest.mark.parametrize(
    ("call", "field", "limit", "value", "message"),
    [
        (lambda: positive_real(0.0, "eps"), "eps", "a finite real number > 0", 0.0,
         "eps: must be finite and > 0, got 0.0"),
        (lambda: positive_real("1", "eps"), "eps", "a finite real number > 0", "1",
         "eps: must be a real number, got '1'"),
        (lambda: positive_real(math.inf, "eps"), "eps", "a finite real number > 0", math.inf,
         "eps: must be finite and > 0, got inf"),
        (lambda: integer_at_least(True, "w", 1), "w", "an integer >= 1", True,
         "w: must be an integer >= 1, got True"),
        (lambda: integer_at_least(-2, "theta", 0), "theta", "an integer >= 0", -2,
         "theta: must be an integer >= 0, got -2"),
        (lambda: real_in_range(1.5, "tau", 0.0, 1.0), "tau", "a finite real number in [0, 1]",
         1.5, "tau: must be finite and in [0, 1], got 1.5"),
        (lambda: real_in_range(0.0, "p", 0.0, 1.0, low_open=True), "p",
         "a finite real number in (0, 1]", 0.0, "p: must be finite and in (0, 1], got 0.0"),
    ],
)  # fmt: skip
def test_the_shared_checks_set_field_limit_and_value(call, field, limit, value, message):
    with pytest.raises(ParameterError) as info:
        call()
    error = info.value
    assert (error.field, error.limit, error.value, str(error)) == (field, limit, value, message)


def test_a_raise_that_names_no_limit_leaves_it_none():
    error = RemoteProtocolError("bad", field="payload")
    assert (error.limit, error.value, error.field, str(error)) == (
        None,
        None,
        "payload",
        "payload: bad",
    )
