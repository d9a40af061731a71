"""Helper A's A6 same-draws speed-ups (2026-12-07): what each fast path must still refuse.

``build_mechanism`` remembers, per class (or ``functools.partial`` of one), that ``Cls(eps)``
binds: a class whose constructor is replaced later (as the audit's planted mutants do) must
be inspected again. ``ExponentialMechanism``'s score check takes a finite 1-D float64 array
at once: a non-finite one is still refused by its index. ``check_device_id`` tests the
service prefixes and the extra client-id suffixes at once."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from ldpfleet.protocol.errors import ParameterError


def _mechanism_class():
    from ldpfleet.protocol.laplace import LaplaceMechanism

    class Mine(LaplaceMechanism):  # a fresh class: no other test has built it
        pass

    return Mine


def test_a_class_whose_constructor_is_replaced_is_inspected_again(monkeypatch):
    from ldpfleet.protocol.mechanism_contract import build_mechanism

    cls = _mechanism_class()
    assert build_mechanism(cls, 1.0, "mine:Mine").eps == 1.0  # remembered: binds Cls(eps)

    def keyword_only(self, *, eps):  # pragma: no cover - never called
        raise AssertionError("called")

    monkeypatch.setattr(cls, "__init__", keyword_only)
    with pytest.raises(ParameterError, match="cannot be built as Cls") as caught:
        build_mechanism(cls, 1.0, "mine:Mine")
    assert caught.value.field == "mechanism"
    assert "keyword-only" in str(caught.value)


def test_a_partial_is_remembered_with_its_bound_arguments():
    from ldpfleet.protocol.mechanism_contract import build_mechanism
    from ldpfleet.protocol.sw import SquareWave

    ok = functools.partial(SquareWave, variant="sw")
    assert build_mechanism(ok, 1.0, "sw").eps == 1.0
    assert build_mechanism(ok, 1.0, "sw").eps == 1.0  # the remembered path
    # the same class with eps already bound by keyword: Cls(eps) no longer binds
    bound = functools.partial(SquareWave, eps=1.0, variant="sw")
    with pytest.raises(ParameterError, match="cannot be built as Cls"):
        build_mechanism(bound, 1.0, "sw")
    ok.keywords["eps"] = 1.0  # a partial's keywords are a dict: changed, a new key
    with pytest.raises(ParameterError, match="cannot be built as Cls"):
        build_mechanism(ok, 1.0, "sw")


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_exponential_refuses_a_non_finite_float64_score_by_its_index(bad):
    from ldpfleet.protocol.exponential import ExponentialMechanism

    scores = np.array([0.0, -1.0, bad, -2.0])
    with pytest.raises(ParameterError) as caught:
        ExponentialMechanism(1.0, 1.0).sample(scores, np.random.default_rng(0))
    assert caught.value.field == "scores[2]"


def test_exponential_fast_path_draws_as_the_general_path():
    from ldpfleet.protocol.exponential import ExponentialMechanism

    mech = ExponentialMechanism(1.0, 2.0)
    scores = np.array([0.0, -1.0, -3.0, -0.5])
    a, b = np.random.default_rng(5), np.random.default_rng(5)
    fast = [mech.sample(scores, a) for _ in range(50)]
    general = [mech.sample(scores.tolist(), b) for _ in range(50)]  # a list: the general path
    assert fast == general
    assert a.bit_generator.state == b.bit_generator.state


@pytest.mark.parametrize(
    "device", ["collector-1", "recorder-x", "relay-a", "gateway-b", "admin-c", "d7-sa", "d7-lpea"]
)
def test_device_ids_like_service_or_extra_client_ids_are_refused(device):
    from ldpfleet.broker.auth import check_device_id

    with pytest.raises(ValueError):
        check_device_id(device)


def test_a_device_client_id_is_its_name_and_one_suffix():
    from ldpfleet.broker.auth import AccessPolicy

    policy = AccessPolicy("r1", frozenset({"d7", "d70"}))
    for client in ("r1-d7", "r1-d7-sa", "r1-d7-lpea"):
        assert policy.client_ids_ok("d7", client)
    for client in ("r1-d70", "r1-d7-x", "r1-d7-sa-sa", "r1-d", "r1-d7lpea", "r2-d7"):
        assert not policy.client_ids_ok("d7", client), client
