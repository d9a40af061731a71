"""Same-draws speed-ups of the machines the graph audits drive (helper A, 2026-12-07
evening, claim A6).

* ``LpeaNode._propose`` no longer asks the generator for a permutation of a pool of 0 or 1
  "yes" answers: numpy's ``Generator.permutation(n)`` for n <= 1 is the identity and draws
  nothing (checked here on every bit generator numpy ships), so the pool and the
  generator's state after are the same.
* ``topics.check_ident`` remembers the plain strings it accepted (a set lookup instead of
  the regex): the same value back, every bad value still refused."""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.lpea import LpeaNode

BIT_GENERATORS = [np.random.PCG64, np.random.PCG64DXSM, np.random.Philox, np.random.SFC64,
                  np.random.MT19937]  # fmt: skip


@pytest.mark.parametrize("bit_generator", BIT_GENERATORS, ids=lambda b: b.__name__)
@pytest.mark.parametrize("n", [0, 1])
def test_a_permutation_of_at_most_one_item_draws_nothing(bit_generator, n):
    for seed in range(20):
        rng = np.random.Generator(bit_generator(seed))
        twin = np.random.Generator(bit_generator(seed))
        assert rng.permutation(n).tolist() == list(range(n))
        assert rng.integers(0, 2**63, 8).tolist() == twin.integers(0, 2**63, 8).tolist()


def _pool_after_propose(yes: list[str], seed: int) -> tuple[list[str], dict]:
    codes = {f"n{i:04d}": i % 3 for i in range(1, 6)}
    rng = np.random.default_rng(seed)
    node = LpeaNode("audit", "n0000", codes, 4, 1.0, rng, compact=True)
    node.start_round(0, 0.0)
    for j in sorted(codes):
        node._answers[j] = j in yes
    node._awaiting.clear()
    node._target = len(yes)  # as a debiased count of that many
    node.rr = type("Coin", (), {"debias_count": lambda self, y, a: float(len(yes))})()
    node._propose()
    return [item.peer for item in node.pop_items() if item.kind == "est"], rng.bit_generator.state


def _frozen_pool(yes: list[str], seed: int) -> tuple[list[str], dict]:
    """The proposals and the generator state of the code before (always ``permutation``)."""
    codes = {f"n{i:04d}": i % 3 for i in range(1, 6)}
    rng = np.random.default_rng(seed)
    node = LpeaNode("audit", "n0000", codes, 4, 1.0, rng, compact=True)
    node.start_round(0, 0.0)
    node.pop_items()
    said_yes = sorted(yes)
    shuffled = [said_yes[i] for i in rng.permutation(len(said_yes)).tolist()]
    pool = sorted(shuffled, key=lambda j: codes[j])
    return pool[: min(len(yes), 4)], rng.bit_generator.state


@pytest.mark.parametrize("yes", [[], ["n0002"], ["n0001", "n0004"], ["n0005", "n0002", "n0003"]])
def test_the_pool_and_the_generator_are_as_before(yes):
    for seed in range(10):
        got, state = _pool_after_propose(yes, seed)
        want, want_state = _frozen_pool(yes, seed)
        assert got == want
        assert state == want_state


def test_check_ident_remembers_only_good_strings():
    good = "dev-remembered.1"
    assert topics.check_ident(good, "device") is good
    again = "".join(["dev-remembered", ".1"])  # equal, another object
    assert topics.check_ident(again, "device") is again
    for bad in ("", "a/b", "x" * 65, "é", None, 3, b"dev", "dev\n"):
        for _ in range(2):
            with pytest.raises(ParameterError) as caught:
                topics.check_ident(bad, "device")
            assert caught.value.field == "device"

    class Name(str):
        pass

    sub = Name("dev-sub")
    assert topics.check_ident(sub, "device") is sub
    assert "dev-sub" not in topics._KNOWN_IDENTS  # only plain str is remembered


def test_the_remembered_set_is_bounded(monkeypatch):
    monkeypatch.setattr(topics, "KNOWN_IDENTS_MAX", 8)
    monkeypatch.setattr(topics, "_KNOWN_IDENTS", set())
    for i in range(50):
        topics.check_ident(f"d{i}", "device")
        assert len(topics._KNOWN_IDENTS) <= 8
