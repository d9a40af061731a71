"""The suite's outcome does not depend on the machine's speed (tests/conftest.py)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


def test_hypothesis_sets_no_wall_clock_limit_by_default():
    assert settings.default.deadline is None
    assert HealthCheck.too_slow in settings.default.suppress_health_check


@given(st.integers())
def test_a_property_test_without_settings_inherits_no_deadline(value):
    assert settings().deadline is None
