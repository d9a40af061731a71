"""Claim R6 for helper C1's modules: a refused parameter carries, as data, the field, the rule
it broke (``err.limit``, the words of the sentence) and the value refused (``err.value``).

One real refusal per converted module (protocol, protocol/secagg, scenarios), each through
the public constructor or function, chosen across the kinds of check: range, type, choice,
shape (arrays give the shape or their first bad entry, and the limit says which), and key
material (never carried: its length or type). The AST guard
(``test_parameter_error_fields.py``) sees that every call passes both keywords; these see
that the values passed are the right ones.
"""

from __future__ import annotations

import asyncio
import threading
from fractions import Fraction

import numpy as np
import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.sw import SquareWave


def refusal(call, *args, **kwargs) -> ParameterError:
    """The ``ParameterError`` ``call(*args, **kwargs)`` raises."""
    with pytest.raises(ParameterError) as info:
        call(*args, **kwargs)
    return info.value


def fields_of(error: ParameterError) -> tuple:
    return error.field, error.limit, error.value


def rng() -> np.random.Generator:
    return np.random.default_rng(0)


# ---- protocol ---------------------------------------------------------------------------


def bulk_plan(**changes):
    from ldpfleet.protocol.bulk import BulkPlan

    settings = dict(run="r", devices=4, steps=8, batch_steps=4, eps=1.0, w=2) | changes
    return BulkPlan(**settings)


def test_bulk_plan_range_and_choice():
    from ldpfleet.protocol.bulk import BULK_MECHANISMS, MAX_DEVICES

    assert fields_of(refusal(bulk_plan, devices=0)) == (
        "devices",
        f"an integer in 1..{MAX_DEVICES}",
        0,
    )
    assert fields_of(refusal(bulk_plan, mechanism="rr")) == (
        "mechanism",
        f"one of {list(BULK_MECHANISMS)}",
        "rr",
    )
    assert fields_of(refusal(bulk_plan, step_seconds=4000.0)) == (
        "step_seconds",
        "in [0, 3600] seconds",
        4000.0,
    )


def test_cadr_device_max_eps():
    from ldpfleet.protocol.cadr_device import CadrDevice

    error = refusal(CadrDevice, "r", "d1", ["d2"], rng(), max_eps=-1.0)
    assert fields_of(error) == ("max_eps", "a number > 0 (or None)", -1.0)


def test_dsr_array_gives_its_first_bad_entry():
    from ldpfleet.protocol.dsr import dsr_release

    error = refusal(dsr_release, np.array([3, -2, -5]), 4, 1.0, rng())
    assert error.field == "kept_degree"
    assert error.limit == ">= 0 (every entry; value is the first entry below 0)"
    assert error.value == -2


def test_exponential_partitions_range():
    from ldpfleet.protocol.exponential import ndoe_partitions

    error = refusal(ndoe_partitions, 0, 3, 9)
    assert fields_of(error) == ("parts", "<= the number of degrees in [0, 3] (4)", 9)


def test_exponential_scores_shape():
    from ldpfleet.protocol.exponential import ExponentialMechanism

    mechanism = ExponentialMechanism(1.0, 1)
    error = refusal(mechanism.sample, np.zeros((2, 3)), rng())
    assert fields_of(error) == ("scores", "one-dimensional; value is the shape", (2, 3))


def test_gcdp_release_window_assembler():
    from ldpfleet.protocol.gcdp_release import WindowAssembler

    assert fields_of(refusal(WindowAssembler, 0, 1, 1)) == ("nodes", "an integer >= 1", 0)


def test_ledger_type():
    from ldpfleet.protocol.ledger import PrivacyLedger

    assert fields_of(refusal(PrivacyLedger, "")) == ("owner", "a non-empty string", "")
    ledger = PrivacyLedger("fleet")
    error = refusal(ledger.open_account, "a", object)
    assert error.field == "account" and error.value is object
    assert error.limit == "a WindowAccount, BudgetAccount or RawAccount"


def test_liveness_timeout():
    from ldpfleet.protocol.liveness import SilenceWatch

    error = refusal(SilenceWatch, "r", 5.0, first_timeout=0)
    assert fields_of(error) == ("first_timeout", "> 0 seconds", 0)


def test_lpea_choice_and_lpea_device_run():
    from ldpfleet.protocol.lpea import LpeaNode, padded_rounds
    from ldpfleet.protocol.lpea_device import LpeaDevice

    assert fields_of(refusal(padded_rounds, 0)) == ("max_rounds", "an integer >= 1", 0)
    error = refusal(LpeaNode, "r", "d1", {"d2": 1}, 3, 1.0, rng(), "middle")
    assert fields_of(error) == ("order", "one of ['low', 'high']", "middle")
    node = LpeaNode("r", "d1", {"d2": 1}, 3, 1.0, rng())
    assert fields_of(refusal(LpeaDevice, node, "s")) == ("run", "the node's run 'r'", "s")


def test_mechanism_contract_budget_and_inputs():
    from ldpfleet.protocol.mechanism_contract import EPS_MAX, check_budget, unit_inputs

    assert fields_of(refusal(check_budget, 60.0)) == ("eps", f"in (0, {EPS_MAX:g}]", 60.0)
    assert fields_of(refusal(unit_inputs, [0.5, 1.5, -1.0])) == ("v[1]", "in [0, 1]", 1.5)
    error = refusal(unit_inputs, np.array(["0.5"]))
    assert error.field == "v" and error.limit == "real numbers in [0, 1]"
    assert error.value == np.dtype("<U3")


def test_mechanism_contract_failure_names_the_plugin():
    from ldpfleet.protocol.mechanism_contract import build_mechanism

    error = refusal(build_mechanism, 42, 1.0, "plug:Cls")
    assert fields_of(error) == ("mechanism", "a class (the mechanism contract)", "plug:Cls")

    class NoMethods:
        def __init__(self, eps):
            self.eps = eps

    error = refusal(build_mechanism, NoMethods, 1.0, "plug:NoMethods")
    assert error.value == "plug:NoMethods"
    assert error.limit.startswith("the methods perturb, ")


def test_mechanisms_name():
    from ldpfleet.protocol.mechanisms import check_mechanism_name

    error = refusal(check_mechanism_name, "plugins/mine.py:Wide")
    assert error.field == "mechanism" and error.value == "plugins/mine.py:Wide"
    assert error.limit == "a 'module:Class' name, not a file path"


def test_peer_relay_devices():
    from ldpfleet.protocol.peer_relay import PeerRelay

    error = refusal(PeerRelay, "r", iter(()))
    assert fields_of(error) == ("devices", "at least one device", frozenset())


def test_raw_eps_and_first_input_outside():
    from ldpfleet.protocol.raw import RawMechanism

    error = refusal(RawMechanism, eps=1.0)
    assert fields_of(error) == ("eps", "0 (a raw stream spends no local budget)", 1.0)
    error = refusal(RawMechanism().perturb, np.array([0.2, 1.5, 2.0]), rng())
    assert error.value == 1.5
    assert error.limit == "in [0, 1] (every entry; value is the first entry outside)"


def test_readiness_expected():
    from ldpfleet.protocol.readiness import ReadinessBarrier

    error = refusal(ReadinessBarrier, "r", (d for d in ()), timeout=1.0)
    assert fields_of(error) == ("expected", "at least one expected device", frozenset())


def test_rendezvous_timeout():
    from ldpfleet.protocol.rendezvous import RunTerms, RunWaiter

    terms = RunTerms("stream", "s", 1, 2, "digest")
    error = refusal(RunWaiter, "r", terms, timeout=1.0, resubscribe_every=-2)
    assert fields_of(error) == ("resubscribe_every", "> 0 seconds", -2)


def test_rr_range_and_counts():
    from ldpfleet.protocol.rr import WarnerRR

    assert fields_of(refusal(WarnerRR, 100.0)) == ("eps", "<= 50", 100.0)
    error = refusal(WarnerRR(1.0).debias_count, np.array([1, 2]), np.array([3, -1, -4]))
    assert error.field == "asked" and error.value == -1
    assert error.limit == ">= 0 (every entry; value is the first entry below 0)"


def test_samplers_grid_scores_and_rate():
    from ldpfleet.protocol.samplers import exponential_choice, laplace_on_grid

    error = refusal(laplace_on_grid, rng(), 0.5, 1.0, grid=3.0)
    assert fields_of(error) == ("grid", "a positive power of two", 3.0)
    error = refusal(exponential_choice, rng(), np.array([1.0, np.inf]), Fraction(1))
    assert error.field == "scores" and error.value == np.inf
    assert "size if empty, else 1st non-finite" in error.limit
    error = refusal(exponential_choice, rng(), np.array([1.0]), Fraction(-1))
    assert fields_of(error) == ("rate", ">= 0", Fraction(-1))


def test_sw_choice_and_stream_range():
    from ldpfleet.protocol.stream import StreamConfig

    error = refusal(SquareWave, 1.0, "sw2")
    assert fields_of(error) == ("variant", "one of ['sw', 'sw01']", "sw2")
    error = refusal(StreamConfig, "r", "sw", 1.0, 0, 8, 4, 0.0, 1.0)
    assert fields_of(error) == ("w", "an integer in [1, 100000]", 0)
    error = refusal(StreamConfig, "r", "sw", 1.0, 2, 8, 4, 1.0, 0.0)
    assert fields_of(error) == ("bounds", "finite lo < hi", (1.0, 0.0))


def test_topics_identifier():
    from ldpfleet.protocol.topics import check_ident

    error = refusal(check_ident, "a b", "device")
    assert error.field == "device" and error.value == "a b"
    assert error.limit == "an identifier: 1-64 characters of A-Z a-z 0-9 _ . -"


# ---- protocol/secagg ----------------------------------------------------------------------


def test_secagg_active_choice_and_duplicate_key():
    from ldpfleet.protocol.secagg import crypto
    from ldpfleet.protocol.secagg.active import check_identity_keys, check_mode

    assert fields_of(refusal(check_mode, "yes")) == ("active", "True or False", "yes")
    public = crypto.signing_keypair(lambda n: b"\x01" * n).public
    error = refusal(check_identity_keys, {"d1": public, "d2": public})
    assert fields_of(error) == (
        "identity_keys",
        "distinct identity keys (value is a shared key)",
        public,
    )


def test_secagg_client_shape():
    from ldpfleet.protocol.secagg.client import SecAggClient

    error = refusal(SecAggClient, "r", "s", "d1", [[1.0, 2.0]])
    assert fields_of(error) == ("x", "a non-empty 1-D vector (value is the shape)", (1, 2))


def test_secagg_crypto_key_material_is_never_carried():
    from ldpfleet.protocol.secagg import crypto

    secret = b"\x07" * 31
    error = refusal(
        crypto.derive_key, secret, purpose="mask", run="r", session="s", round=0, a=1, b=2
    )
    assert (
        error.field == "shared"
        and error.value == "31 bytes"
        and repr(secret) not in repr(vars(error))
    )
    assert error.limit == "exactly 32 bytes (value is the length or type, never the bytes)"
    error = refusal(crypto.prg_mask, b"\x00" * 32, 4, 16)
    assert fields_of(error) == ("bits", "32 or 64", 16)


def test_secagg_encoding_order_and_dtype():
    from ldpfleet.protocol.secagg.encoding import FixedPoint

    error = refusal(FixedPoint, 1.0, 0.0, 10.0)
    assert fields_of(error) == ("clip_high", "> clip_low=1.0", 0.0)
    error = refusal(FixedPoint(0.0, 1.0, 10.0).decode_sum, np.array([1.5]), 2)
    assert fields_of(error) == ("total", "an integer array (value is the dtype)", np.float64)


def test_secagg_graph_range():
    from ldpfleet.protocol.secagg.graph import harary_graph

    error = refusal(harary_graph, [1, 2, 3], 3)
    assert fields_of(error) == ("k", "an integer in [1, n - 1] with n = 3", 3)


def test_secagg_server_dim_and_renamed_degree():
    from ldpfleet.protocol.secagg.encoding import FixedPoint
    from ldpfleet.protocol.secagg.messages import MAX_DIM
    from ldpfleet.protocol.secagg.server import SecAggServer, check_dim

    assert fields_of(refusal(check_dim, 0)) == ("dim", f"an integer in [1, {MAX_DIM}]", 0)
    devices = [f"d{i}" for i in range(5)]
    error = refusal(
        SecAggServer, "r", "s", devices, 1, FixedPoint(0.0, 1.0, 10.0), graph="harary", degree=9
    )
    assert fields_of(error) == ("degree", "an integer in [1, n - 1] with n = 5", 9)


def test_secagg_shamir_secret_is_never_carried():
    from ldpfleet.protocol.secagg.shamir import MAX_SECRET_BYTES, combine, split

    error = refusal(split, b"\x05" * (MAX_SECRET_BYTES + 1), [1, 2, 3], 2)
    assert error.field == "secret" and error.value == MAX_SECRET_BYTES + 1
    assert error.limit == f"bytes, at most {MAX_SECRET_BYTES} (value: its length or type)"
    error = refusal(split, b"\x05", [1, 2, 2], 2)
    assert fields_of(error) == ("xs", "distinct abscissae (value is the first repeated one)", 2)
    error = refusal(combine, {1: 5}, 2)
    assert fields_of(error) == ("shares", "at least 2 shares (value is the count)", 1)


# ---- scenarios ----------------------------------------------------------------------------


def test_bulk_run_memory_broker_has_no_processes(tmp_path):
    from ldpfleet.scenarios.bulk_run import run_bulk

    error = refusal(
        asyncio.run, run_bulk(bulk_plan(), broker="memory", out_dir=tmp_path, processes=True)
    )
    assert error.field == "processes" and error.value is True
    assert error.limit == "no processes with the memory broker (it runs in one process)"


def test_cadr_run_settings():
    from ldpfleet.scenarios.cadr_run import CadrSettings

    error = refusal(CadrSettings, peer_deadline=-1.0)
    assert error.field == "peer_deadline_seconds" and error.value == -1.0
    error = refusal(CadrSettings, theta="auto-sum", pipeline="dp")
    assert fields_of(error) == ("theta", '"auto-dev" or a given θ with pipeline = "dp"', "auto-sum")


def test_coordinator_partition_count(tmp_path):
    from ldpfleet.scenarios.coordinator import partition_side
    from ldpfleet.scenarios.schema import load_scenario

    scenario = load_scenario("quickstart")
    wanted = scenario.spec.collector.partitions
    worker = partition_side(scenario, "memory", "r", (0, wanted + 2), tmp_path)
    error = refusal(asyncio.run, worker)
    assert error.field == "partition" and error.value == wanted + 2
    assert error.limit == f"p/{wanted} (the scenario's [collector] partitions)"


class BlocksUntilReleased(SquareWave):
    """A plugin whose ``perturb`` waits on ``RELEASE``: the load-time limit always expires
    (whatever the machine's speed), then the test releases its worker thread."""

    RELEASE = threading.Event()

    def __init__(self, eps):
        super().__init__(eps)

    def perturb(self, x, rng):
        self.RELEASE.wait()
        return super().perturb(x, rng)


def test_plugin_load_time_limit(monkeypatch):
    from ldpfleet.scenarios import plugin_load

    name = f"{__name__}:BlocksUntilReleased"
    monkeypatch.setattr(plugin_load, "LOAD_CHECK_SECONDS", 0.05)
    try:
        error = refusal(plugin_load.mechanism_in_time, name, 0.7)
    finally:
        BlocksUntilReleased.RELEASE.set()
    assert fields_of(error) == (
        "mechanism",
        "a load-time check that finishes within 0.05 s",
        name,
    )


def test_runner_run_options(tmp_path):
    from ldpfleet.scenarios.runner import checked_run_options

    error = refusal(checked_run_options, None, tmp_path, -1, None)
    assert fields_of(error) == ("seed", "an integer in [0, 2^63 - 1]", -1)
    error = refusal(checked_run_options, 7, tmp_path, None, None)
    assert error.field == "broker" and error.value == 7
    assert error.limit == "'memory', 'embedded', an mqtt:// or mqtts:// URL, or a Transport"


def test_schema_full_graph_degree():
    """The schema turns this refusal into a ``ScenarioError``; its own check is called."""
    from ldpfleet.scenarios.schema import _check_full_graph

    error = refusal(_check_full_graph, 2, None, 5)
    assert fields_of(error) == ("degree", "n - 1 = 4 (the full graph)", 2)


def test_shared_integer_counts_check():
    """dsr and rr repeated one check of integer counts; ``validate.integer_counts`` is it."""
    from ldpfleet.protocol.validate import integer_counts

    assert integer_counts(np.array([0, 3]), "n").tolist() == [0, 3]
    error = refusal(integer_counts, np.array([True]), "n")
    assert error.field == "n" and error.limit == "an integer count (or array of them)"
    assert error.reason == "must be an integer count (or array of them), got array([ True])"
    error = refusal(integer_counts, -4, "n")
    assert fields_of(error) == ("n", ">= 0 (every entry; value is the first entry below 0)", -4)
    assert error.reason == "must be >= 0, got -4"
