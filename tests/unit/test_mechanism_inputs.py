"""Every built-in stream mechanism refuses what is not an input in [0, 1] the same way
(``protocol.mechanism_contract.unit_inputs``): a ``ParameterError`` naming the field, the
first bad index and the value — never a silent reading of text, dates, masked or complex
values, never numpy's own exception."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanisms import stream_mechanism

NAMES = ("sw", "laplace", "duchi", "piecewise", "hybrid")

NOT_INPUTS = {
    # masked values would be privatised all the same (a masked NaN passed as 0.5 before)
    "masked": (np.ma.masked_array([0.5, 0.2], mask=[0, 1]), "v", "masked array"),
    "complex": (np.array([0.5 + 0.0j]), "v", "complex128"),
    "text": (np.array(["0.5"]), "v", "<U3"),  # numpy reads "0.5" as 0.5
    "dates": (np.array(["2020-01-01"], dtype="datetime64[D]"), "v", "datetime64"),
    "ragged": ([0.1, [0.2]], "v", "real numbers"),
    "none": ([0.1, None], "v[1]", "nan"),
    "nan at 2": ([0.1, 0.2, float("nan")], "v[2]", "nan"),
    "above 1 at 1": (np.array([0.0, 1.5]), "v[1]", "1.5"),
    "below 0, scalar": (-0.25, "v", "-0.25"),
}


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("case", NOT_INPUTS, ids=list(NOT_INPUTS))
def test_a_non_input_is_refused_naming_the_field_index_and_value(name, case):
    value, field, said = NOT_INPUTS[case]
    mechanism = stream_mechanism(name, 1.0)
    with pytest.raises(ParameterError) as refused:
        mechanism.perturb(value, np.random.default_rng(0))
    assert refused.value.field == field
    assert said in str(refused.value)


@pytest.mark.parametrize("name", NAMES)
def test_real_inputs_of_any_real_dtype_are_taken(name):
    mechanism = stream_mechanism(name, 1.0)
    for value in ([True, False], np.array([0, 1], dtype=np.uint8), np.array([0.5], np.float32)):
        out = np.asarray(mechanism.perturb(value, np.random.default_rng(0)))
        assert out.shape == np.shape(value) and np.all(np.isfinite(out))
