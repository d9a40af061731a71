"""``ldpfleet.get_mechanism("krr", np.float32(1))`` was refused as "eps: must be a finite
real number, got np.float32(1.0)" — a finite real number (helper Q: a budget read from a
numpy array or a float32 config). numpy's real scalars are budgets; bools, text and
complex numbers are still refused."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanism_contract import check_budget


@pytest.mark.parametrize("eps", [np.float32(1.0), np.float16(2.0), np.int64(3), np.uint8(1)])
def test_numpy_real_scalars_are_budgets(eps):
    value = check_budget(eps)
    assert type(value) is float and value == float(eps)


@pytest.mark.parametrize(
    "eps", [np.bool_(True), True, "1", 1 + 0j, np.complex64(1), np.float32("nan"), None]
)
def test_other_things_are_still_refused(eps):
    with pytest.raises(ParameterError) as info:
        check_budget(eps)
    assert info.value.field == "eps"


def test_get_mechanism_takes_a_float32_budget():
    import ldpfleet

    for name in ("piecewise", "duchi", "sw", "laplace"):
        mechanism = ldpfleet.get_mechanism(name, np.float32(0.5))
        assert mechanism.eps == 0.5


def test_the_laplace_mechanism_built_directly_takes_a_numpy_budget():
    """``LaplaceMechanism(np.float32(1))`` was refused ("must be a finite real number")
    though ``get_mechanism("laplace", np.float32(1))`` was taken: it checks with
    ``check_budget`` now, as the registry does."""
    from ldpfleet.protocol.laplace import LaplaceMechanism

    assert LaplaceMechanism(np.float32(1.0)).eps == 1.0
    assert type(LaplaceMechanism(np.int64(2)).eps) is float
    with pytest.raises(ParameterError, match=r"must be in \(0, 50\], got"):
        LaplaceMechanism(np.float64(51.0))
