"""``cpr`` and ``cpr_many`` refuse what ``detect_period`` refuses, naming it (helper P's
user trial, 2026-12-06). Before: a masked array's masked report was read as a number (its
hidden value reconstructed), complex reports lost their imaginary part with numpy's
``ComplexWarning``, a Python int beyond the float range escaped as a bare
``OverflowError``, ``None`` and a number were "got shape ()", and a generator, a text or a
text cell said only "need a 1-D array of real numbers (reports)"."""

import warnings

import numpy as np
import pytest

from ldpfleet import ParameterError, SquareWave, cpr, cpr_many

SW = SquareWave(2.0)
Y = SW.perturb(np.tile(np.random.default_rng(1).random(20), 12), np.random.default_rng(2))


def _refusal(y) -> ParameterError:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's ComplexWarning was printed
        with pytest.raises(ParameterError) as caught:
            cpr(y, SW)
    return caught.value


def test_a_masked_report_is_refused_not_read():
    masked = np.ma.masked_array(Y.copy(), mask=np.zeros(Y.size, bool))
    masked[7] = np.ma.masked  # its hidden value is a valid report: it was used
    error = _refusal(masked)
    assert error.field == "y[7]" and "masked" in str(error)


@pytest.mark.parametrize(
    ("y", "text"),
    [
        (Y.astype(complex), "y: must be a 1-D array of real numbers, got complex"),
        (None, "y: must be a 1-D array of real numbers, got None"),
        ((v for v in Y), "got an iterator (generator): pass list(...) or an array"),
        ("0.1 0.2", "got a str '0.1 0.2': split and convert it first"),
        ([10**400] * 30, "within the float range (|x| < 1.8e308)"),
        (0.5, "need a non-empty 1-D array of reports (a stream), got one value 0.5"),
    ],
)
def test_the_refusal_says_what_is_wrong(y, text):
    error = _refusal(y)
    assert text in str(error) and error.field == "y", str(error)


def test_a_text_cell_is_named_by_its_index():
    error = _refusal([0.5, 0.4, "", 0.3])
    assert error.field == "y[2]" and "sample must be a real number, got ''" in str(error)


def test_cpr_many_names_the_stream():
    with pytest.raises(ParameterError) as caught:
        cpr_many([Y, [0.5, "", 0.4]], SW)
    assert caught.value.field == "streams[1][1]"
    assert "got ''" in str(caught.value)
    masked = np.ma.masked_array(Y.copy(), mask=np.zeros(Y.size, bool))
    masked[0] = np.ma.masked
    with pytest.raises(ParameterError) as caught:
        cpr_many([Y, masked], SW)
    assert caught.value.field == "streams[1][0]"


def test_what_was_accepted_still_is():
    unmasked = np.ma.masked_array(Y.copy(), mask=np.zeros(Y.size, bool))
    assert np.array_equal(cpr(unmasked, SW).reconstruction, cpr(Y, SW).reconstruction)
    assert np.array_equal(cpr([str(v) for v in Y], SW).reconstruction, cpr(Y, SW).reconstruction)
    assert np.array_equal(cpr(list(Y), SW).template, cpr(Y, SW).template)
