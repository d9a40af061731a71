"""The mechanisms as a researcher calls them from a script or a notebook (held-out
library-user QA, helper D, 2026-12-05).

Found (each test below fails on the code before the fix):

- ``SquareWave(1.0).perturb(x, 3)`` (a seed, as ``np.random.default_rng`` takes), ``None``
  or a legacy ``np.random.RandomState`` died in ``AttributeError: 'int' object has no
  attribute 'integers'`` deep in the sampler, for every built-in;
- ``get_mechanism(MyClass, 1.0)`` (the class itself, defined in the notebook) was refused
  as a malformed *name* although ``"__main__:MyClass"`` worked; ``run_audit(MyClass, 1.0)``
  and ``run_audit(MyClass(1.0), 1.0)`` died in ``TypeError: argument of type ... is not
  iterable``;
- a class edited and run again in a notebook cell: ``get_mechanism`` kept building the
  first definition (the import of ``"__main__:MyClass"`` is cached per name).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import ldpfleet

BUILT_INS = ["SquareWave", "LaplaceMechanism", "DuchiMechanism", "PiecewiseMechanism",
             "HybridMechanism"]  # fmt: skip


class ClippedLaplace:
    """Laplace noise clipped to [-width, 1 + width]: a mechanism with a parameter, fixed by
    a subclass (every side builds ``Cls(eps)``)."""

    width = 4.0

    def __init__(self, eps):
        self.eps = eps

    def perturb(self, x, rng):
        noisy = np.asarray(x, float) + rng.laplace(0.0, 2.0 / self.eps, np.shape(x))
        return np.clip(noisy, -self.width, 1.0 + self.width)

    def in_domain(self, y):
        y = np.asarray(y, float)
        return np.isfinite(y) & (y >= -self.width) & (y <= 1.0 + self.width)

    def estimate_mean(self, y):
        return float(np.mean(y))


class Wider(ClippedLaplace):
    width = 8.0


@pytest.mark.parametrize("name", BUILT_INS)
@pytest.mark.parametrize("rng", [3, None, np.random.RandomState(0), "seed"])
def test_perturb_names_a_generator_that_is_not_one(name, rng):
    mechanism = getattr(ldpfleet, name)(1.0)
    with pytest.raises(ldpfleet.ParameterError) as info:
        mechanism.perturb(np.array([0.2, 0.7]), rng)
    assert info.value.field == "rng" and "np.random.default_rng" in str(info.value)


@pytest.mark.parametrize("name", BUILT_INS)
def test_perturb_still_takes_a_generator(name):
    mechanism = getattr(ldpfleet, name)(1.0)
    x = np.random.default_rng(1).random((3, 4))  # any shape
    first = mechanism.perturb(x, np.random.default_rng(2))
    again = mechanism.perturb(x, np.random.default_rng(2))
    assert first.shape == x.shape and np.array_equal(first, again)


def test_get_mechanism_takes_the_class_itself():
    built = ldpfleet.get_mechanism(Wider, 1.0)
    assert type(built) is Wider and built.eps == 1.0
    assert isinstance(built, ldpfleet.Mechanism)


def test_get_mechanism_refuses_an_instance_saying_to_pass_the_class():
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.get_mechanism(Wider(1.0), 1.0)
    assert info.value.field == "mechanism" and "the class" in str(info.value)


def test_a_class_defined_inside_a_function_is_named_as_such():
    def make():
        class Local(ClippedLaplace):
            pass

        return Local

    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.get_mechanism(make(), 1.0)
    assert info.value.field == "mechanism" and "module level" in str(info.value)


def test_a_redefined_class_is_the_one_built(monkeypatch):
    """A notebook cell run twice: the module attribute now holds a new class."""
    first = ldpfleet.get_mechanism(Wider, 1.0)

    class Wider2(ClippedLaplace):
        width = 16.0

    Wider2.__qualname__ = Wider2.__name__ = "Wider"
    monkeypatch.setitem(globals(), "Wider", Wider2)
    second = ldpfleet.get_mechanism(Wider2, 1.0)
    assert type(first).width == 8.0 and type(second) is Wider2 and second.width == 16.0


def test_run_audit_takes_the_class_itself():
    by_class = ldpfleet.run_audit(ClippedLaplace, 1.0, trials=2000, seed=5)
    by_path = ldpfleet.run_audit(
        f"{ClippedLaplace.__module__}:ClippedLaplace", 1.0, trials=2000, seed=5
    )
    assert by_class.eps_lb == by_path.eps_lb and by_class.verdict == by_path.verdict


def test_run_audit_refuses_an_instance_saying_to_pass_the_class():
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.run_audit(ClippedLaplace(1.0), 1.0, trials=2000)
    assert info.value.field == "mechanism" and "the class" in str(info.value)


@pytest.mark.parametrize("value", [None, 3, b"laplace"])
def test_run_audit_names_a_mechanism_of_the_wrong_type(value):
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.run_audit(value, 1.0, trials=2000)
    assert info.value.field == "mechanism"


@pytest.mark.parametrize(
    "factory",
    [functools.partial(ClippedLaplace), lambda eps: ClippedLaplace(eps)],
    ids=["partial", "lambda"],
)
def test_a_factory_that_is_not_a_class_says_to_subclass(factory):
    """A parameter bound with ``functools.partial`` was refused as a malformed name."""
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.get_mechanism(factory, 1.0)
    assert info.value.field == "mechanism" and "subclass" in str(info.value)
