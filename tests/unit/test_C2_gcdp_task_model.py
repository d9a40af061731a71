"""The ``task_model`` reading of bench gcdp (helper C2, docs/preregistration/C2-temporal-task.md):
the temporal classifier is the per-window model on time-smoothed windows, and the reading
changes no release and no attacker."""

import numpy as np
import pytest
from ldpfleet.app.gcdp_datasets import ATTACK_LAG, Readings, parse_readings, prepare
from ldpfleet.collector.gcdp.evaluation import TemporalModel, fit_logistic, temporal_smooth
from ldpfleet.protocol.errors import ParameterError


def test_temporal_model_is_the_base_model_on_smoothed_windows():
    rng = np.random.default_rng(3)
    x = rng.random((40, 5))
    y = (x[:, 2] > 0.5).astype(int)
    base = fit_logistic(x, y)
    model = TemporalModel(base, 2)
    np.testing.assert_array_equal(model.predict(x), base.predict(temporal_smooth(x, 2)))
    np.testing.assert_allclose(model.decision(x), base.decision(temporal_smooth(x, 2)))
    # lag 0 is the per-window model
    np.testing.assert_array_equal(TemporalModel(base, 0).predict(x), base.predict(x))


def test_task_model_reading_choices():
    assert Readings().task_model == "window"
    assert parse_readings("task_model=temporal").task_model == "temporal"
    with pytest.raises(ParameterError) as err:
        parse_readings("task_model=hmm")
    assert err.value.field == "readings.task_model"


def test_temporal_task_model_on_occupancy():
    window = prepare("occupancy")
    temporal = prepare("occupancy", readings=parse_readings("task_model=temporal"))
    assert isinstance(temporal.model, TemporalModel) and temporal.model.lag == ATTACK_LAG
    # the same windows, attacker and attribute: only the classifier differs
    np.testing.assert_array_equal(window.test_f, temporal.test_f)
    np.testing.assert_array_equal(window.protected, temporal.protected)
    x = window.test_f
    np.testing.assert_allclose(
        window.temporal_attacker.decision(x[:, window.attack_inputs]),
        temporal.temporal_attacker.decision(x[:, temporal.attack_inputs]),
    )
    assert "neighbours" in temporal.protocol_tail["classifier"]
    assert "neighbours" not in window.protocol_tail["classifier"]
