"""``in_domain`` of text: a ``ParameterError`` naming ``y`` (numpy's "could not convert
string to float" reached a library user calling ``mech.in_domain("a")``, helper D); numbers
keep their boolean mask."""

import numpy as np
import pytest
from ldpfleet.protocol.errors import ParameterError

from ldpfleet import get_mechanism, mechanism_names

BUILT_IN = sorted(set(mechanism_names()) & {"sw", "laplace", "duchi", "piecewise", "hybrid"})


@pytest.mark.parametrize("name", BUILT_IN)
@pytest.mark.parametrize("bad", ["a", ["0.5", "x"], [object()]])
def test_text_is_refused_naming_y(name, bad):
    mechanism = get_mechanism(name, 1.0)
    with pytest.raises(ParameterError) as caught:
        mechanism.in_domain(bad)
    assert caught.value.field == "y"
    assert "real numbers" in str(caught.value)


@pytest.mark.parametrize("name", BUILT_IN)
def test_numbers_still_get_their_mask(name):
    mechanism = get_mechanism(name, 1.0)
    mask = mechanism.in_domain(np.array([np.nan, np.inf, 1e9]))
    assert mask.dtype == bool and not mask.any()
