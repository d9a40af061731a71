"""A device that leaves right after sending its masked input (a ``[secure_sum]`` dropout at
``after_masked``, announced by its last will) is summed or not independently of timing.

Before: the server's masked stage counted the replies minus the devices that had sent
``SaAbort``, so such a device was left out when its last will arrived while the stage was
still open (other devices yet to answer) and summed when it arrived after the stage had
closed (it was the last to answer). Privacy-safe and exact over the listed survivors
either way, but which devices a run summed depended on message order. Now an accepted
masked input is in U3 whatever the device does next (Bonawitz et al.: U3 is who sent a
masked input; its self-mask seed is rebuilt from its holders' shares), and the session
is checked up front for the shares the departed survivors can no longer give.

The order is injected on the pure machines (``tests/unit/test_secagg_machines.py``'s
driver; the masked inputs are held back and fed in the order under test)."""

from __future__ import annotations

import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.secagg.messages import SaAbort, SaMasked
from ldpfleet.protocol.secagg.server import Aborted, SumReady

from tests.unit.test_secagg_machines import RUN, SESSION, assert_exact, make_session, wire

LEAVER = "dev02"


def _last_will(device: str) -> SaAbort:
    return SaAbort(
        run=RUN, sender=device, session=SESSION, stage="after_masked",
        reason="connection lost (last will)",
    )  # fmt: skip


def _up(device: str, kind: str) -> topics.Topic:
    return topics.parse(topics.up(RUN, device, kind))


def _session_with_masked_held(**options):
    """A session driven up to the masked stage, every ``SaMasked`` held back (returned)."""
    session = make_session(**options)
    held: dict[str, SaMasked] = {}

    def hold(sender, message):
        if isinstance(message, SaMasked):
            held[sender] = message
            return None
        return message

    net = session.net
    net.tamper = hold
    net.start()
    net.pump()
    assert session.server.state == "masked" and len(held) == len(session.inputs)
    net.tamper = None
    return session, held


def _feed(session, order: list[tuple[str, str]], held: dict[str, SaMasked]) -> list:
    """Feed ("masked" | "will", device) steps in ``order``, then run to the end; the
    leaver hears nothing after it left."""
    server, net = session.server, session.net
    for step, device in order:
        if step == "masked":
            server.receive(_up(device, "sa_masked"), wire(held[device]), net.now)
        else:
            server.receive(_up(device, "sa_abort"), wire(_last_will(device)), net.now)
    for _step, device in order:
        if _step == "will":
            net.drops[device] = "after_masked"
    return net.finish()


def _orders(devices: list[str], leaver: str) -> dict[str, list[tuple[str, str]]]:
    others = [("masked", d) for d in devices if d != leaver]
    mine = [("masked", leaver), ("will", leaver)]
    return {
        "leaver first (its last will while the stage is open)": mine + others,
        "leaver last (its masked input closes the stage)": others + mine,
        "last will between the others' inputs": [mine[0], *others[:2], mine[1], *others[2:]],
    }


@pytest.mark.parametrize(("graph", "degree"), [("full", None), ("harary", 4)])
def test_a_device_leaving_after_its_masked_input_is_summed_whatever_the_order(graph, degree):
    """Fails on the old code: in the first and third orders the leaver was dropped."""
    outcomes = {}
    for name, order in _orders([f"dev{i:02d}" for i in range(8)], LEAVER).items():
        session, held = _session_with_masked_held(n=8, seed=21, graph=graph, degree=degree)
        _feed(session, order, held)
        (result,) = session.net.only(SumReady)
        assert_exact(session, result)
        outcomes[name] = (result.survivors, result.dropped, tuple(result.encoded_total))
    assert len(set(outcomes.values())) == 1, outcomes
    survivors, dropped, _ = next(iter(outcomes.values()))
    assert LEAVER in survivors and dropped == ()


def test_the_departed_survivor_is_named_in_the_summary_not_as_dropped():
    session, held = _session_with_masked_held(n=6, seed=5)
    order = _orders(sorted(session.inputs), LEAVER)[
        "leaver first (its last will while the stage is open)"
    ]
    _feed(session, order, held)
    (result,) = session.net.only(SumReady)
    assert LEAVER in result.survivors
    summary = session.server.summary()
    assert summary["masked"] == 6 and summary["device_aborts"] == {
        LEAVER: "connection lost (last will)"
    }
    assert summary["unmasked"] == 5  # it answered no unmask request


def _ring_session(seed: int = 3):
    """A 6-device ring (degree 2, t = 2): the leaver's neighbour at ring position 1 drops
    after its shares, so once the leaver (position 0) is gone too, its self-mask seed has
    one live holder (position 5) and its neighbour's mask key one (position 2)."""
    session, held = _session_with_masked_held(n=6, graph="harary", degree=2, seed=seed)
    server = session.server
    ring = [min(server.neighbours)]
    while len(ring) < 6:
        ring.append(min(server.neighbours[ring[-1]] - set(ring)))
    leaver, neighbour = (server.device_of[label] for label in ring[:2])
    return session, held, leaver, neighbour


@pytest.mark.parametrize("leaver_last", [False, True])
def test_a_departed_survivor_that_cannot_be_unmasked_aborts_the_session_either_way(
    leaver_last,
):
    """No sum in either order. When the last will comes before the masked stage closes,
    the server knows the leaver will answer no unmask request and aborts at once, before
    any holder reveals a share (without that check the new rule would have asked for the
    shares first); when it comes after, the server could not know, asks, and aborts at
    the unmask stage for want of holders (shares of one kind per node only: nothing is
    learned)."""
    session, held, leaver, neighbour = _ring_session()
    server, net = session.server, session.net
    server.receive(_up(neighbour, "sa_abort"), wire(_last_will(neighbour)), net.now)
    net.drops[neighbour] = "after_shares"
    others = [("masked", d) for d in sorted(held) if d not in (leaver, neighbour)]
    mine = [("masked", leaver), ("will", leaver)]
    _feed(session, others + mine if leaver_last else mine + others, held)
    assert not net.only(SumReady)
    (aborted,) = net.only(Aborted)
    assert "only 1 holders of the self-mask seed of " + leaver in aborted.reason
    asked = any(
        m.type_name() == "sa_unmask_request" for msgs in net.received.values() for m in msgs
    )
    assert (aborted.stage, asked) == (("unmask", True) if leaver_last else ("masked", False))


def test_an_unmask_answer_counts_when_its_device_leaves_before_the_stage_closes():
    """Fails on the old code ("unmask stage: only 2 of 4 devices answered"): dev00
    answers the unmask request and then its last will arrives while the stage waits for
    the silent dev01; its accepted shares still count, so the 3 answers reach t = 3."""
    session = make_session(n=4, seed=9)
    server, net = session.server, session.net
    assert server.threshold == 3
    held: dict[str, object] = {}

    def hold(sender, message):
        if message.type_name() == "sa_unmask":
            held[sender] = message
            return None
        return message

    net.tamper = hold
    net.drops["dev01"] = "during_unmask"  # receives the request, never answers
    net.start()
    net.pump()
    assert server.state == "unmask" and sorted(held) == ["dev00", "dev02", "dev03"]
    net.tamper = None
    server.receive(_up("dev00", "sa_unmask"), wire(held["dev00"]), net.now)
    server.receive(_up("dev00", "sa_abort"), wire(_last_will("dev00")), net.now)
    for device in ("dev02", "dev03"):
        server.receive(_up(device, "sa_unmask"), wire(held[device]), net.now)
    net.finish()
    (result,) = net.only(SumReady)
    assert result.survivors == tuple(sorted(session.inputs))
    assert_exact(session, result)
