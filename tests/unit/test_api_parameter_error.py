"""docs/api.md promises ``ParameterError`` from ``run_audit``, ``get_mechanism``,
``detect_period``, ``CprConfig`` and ``read_trace``, but ``ldpfleet`` did not export it: a
user had to import it from ``ldpfleet.protocol.errors``, a module the page does not
promise (helper Q). It is public now, the same class the functions raise."""

from __future__ import annotations

import numpy as np
import pytest

import ldpfleet


def test_parameter_error_is_public_and_is_what_the_api_raises():
    assert "ParameterError" in ldpfleet.__all__
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.detect_period(np.zeros((3, 3)))
    assert info.value.field == "reports"
    with pytest.raises(ldpfleet.ParameterError):
        ldpfleet.get_mechanism("piecewise", -1.0)
    assert issubclass(ldpfleet.ParameterError, ValueError)
