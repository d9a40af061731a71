"""Tier-1 tests of the secure-aggregation machines (protocol/secagg/server.py, client.py).

A small driver (``Net``) connects one ``SecAggServer`` and n ``SecAggClient``s by direct
calls: it parses every outbound topic with ``topics.parse``, passes every message through
msgspec JSON with the secure-aggregation message classes (proving they serialise) and
hands it to the machine the topic names. Time is a float we advance to the server's next
deadline when nothing is in flight; randomness is seeded (``numpy`` ``Generator.bytes``),
so every run is reproducible. A dropout is a device that, from a given stage on, no
longer receives or sends (its messages are simply not delivered).
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
import numpy as np
import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.events import Event, Outbound, Rejected
from ldpfleet.protocol.messages import Message, Reject
from ldpfleet.protocol.secagg import crypto
from ldpfleet.protocol.secagg.client import SecAggClient, SessionAborted, StageAnswered
from ldpfleet.protocol.secagg.crypto import generate_keypair
from ldpfleet.protocol.secagg.encoding import FixedPoint
from ldpfleet.protocol.secagg.messages import (
    SA_MESSAGES,
    PeerKeys,
    RevealedShare,
    SaAbort,
    SaAdvertise,
    SaMasked,
    SaNeighbours,
    SaSetup,
    SaUnmask,
    SaUnmaskRequest,
)
from ldpfleet.protocol.secagg.server import (
    Aborted,
    DeviceAborted,
    SecAggServer,
    StageOpened,
    SumReady,
)
from scipy import stats

RUN = "r1"
SESSION = "s1"
COLLECTOR = topics.COLLECTOR_ID
TIMEOUT = 10.0
FIXED = FixedPoint(-1.0, 1.0, 1000.0)

_DECODER = msgspec.json.Decoder(functools.reduce(operator.or_, (*SA_MESSAGES, Reject)))

# What a device that drops out at a stage still receives / still gets delivered upstream.
_SEQUENCE_IN = ("sa_setup", "sa_neighbours", "sa_deliver", "sa_unmask_request")
_SEQUENCE_UP = ("sa_advertise", "sa_shares", "sa_masked", "sa_unmask")
DROP_STAGES = ("before_keys", "after_keys", "after_shares", "after_masked", "during_unmask")
_INBOUND = {
    "before_keys": set(),
    "after_keys": set(_SEQUENCE_IN[:1]),
    "after_shares": set(_SEQUENCE_IN[:2]),
    "after_masked": set(_SEQUENCE_IN[:3]),
    "during_unmask": set(_SEQUENCE_IN),
}
_UPSTREAM = {
    "before_keys": set(),
    "after_keys": set(_SEQUENCE_UP[:1]),
    "after_shares": set(_SEQUENCE_UP[:2]),
    "after_masked": set(_SEQUENCE_UP[:3]),
    "during_unmask": set(_SEQUENCE_UP[:3]),  # it computes its answer, which is lost
}
_ABORT_STAGE = {
    "before_keys": "advertise",
    "after_keys": "share",
    "after_shares": "masked",
    "after_masked": "unmask",
    "during_unmask": "unmask",
}


def seeded_bytes(*seed: int) -> Callable[[int], bytes]:
    """A deterministic ``random_bytes``."""
    return np.random.default_rng(list(seed)).bytes


def wire(message: Message) -> Message:
    """The message as a receiver sees it: JSON-encoded and decoded."""
    return _DECODER.decode(msgspec.json.encode(message))


Tamper = Callable[[str, Message], Message | None]


@dataclass
class Net:
    """One server and its clients, connected by direct calls."""

    server: SecAggServer
    clients: dict[str, SecAggClient]
    drops: dict[str, str] = field(default_factory=dict)
    tamper: Tamper | None = None  # rewrites (or withholds: None) upstream messages
    now: float = 0.0
    received: dict[str, list[Message]] = field(default_factory=dict)
    uploads: dict[tuple[str, str], Message] = field(default_factory=dict)
    svc: list[Message] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)

    def start(self) -> None:
        self.server.start(self.now)

    def run(self) -> list[Event]:
        """Start, deliver until quiet, fire deadlines, until the session is over."""
        self.start()
        return self.finish()

    def finish(self) -> list[Event]:
        """Deliver until quiet and fire deadlines until the session is over."""
        while True:
            self.pump()
            if self.server.finished:
                break
            deadline = self.server.next_timer()
            assert deadline is not None, "a stage with no deadline would wait forever"
            self.now = max(self.now, deadline)
            self.server.handle_timer(self.now)
        self.pump()
        self.events += self.server.pop_events()
        return self.events

    def pump(self) -> None:
        while True:
            batch = self.server.pop_outbound()
            for client in self.clients.values():
                batch += client.pop_outbound()
            if not batch:
                return
            for out in batch:
                self.route(out)

    def route(self, out: Outbound) -> None:
        topic = topics.parse(out.topic)
        message = wire(out.message)
        kind = message.type_name()
        if topic.family == "svc":
            self.svc.append(message)
        elif topic.family == "in":
            device = topic.recipient
            assert device is not None
            drop = self.drops.get(device)
            if drop is not None and kind not in _INBOUND[drop]:
                return
            self.received.setdefault(device, []).append(message)
            self.clients[device].receive(topic, message, self.now)
        elif topic.family == "up":
            drop = self.drops.get(topic.sender)
            if drop is not None and kind not in _UPSTREAM[drop]:
                return
            if self.tamper is not None:
                tampered = self.tamper(topic.sender, message)
                if tampered is None:
                    return
                message = wire(tampered)
            self.uploads[(topic.sender, kind)] = message
            self.server.receive(topic, message, self.now)
        else:  # pragma: no cover - the machines publish nothing else
            raise AssertionError(f"unexpected topic {out.topic}")

    def only(self, kind: type[Event]) -> list[Event]:
        return [e for e in self.events if isinstance(e, kind)]


@dataclass
class Session:
    net: Net
    inputs: dict[str, np.ndarray]
    fixed_point: FixedPoint

    @property
    def server(self) -> SecAggServer:
        return self.net.server

    def encoded_sum(self, devices: tuple[str, ...]) -> np.ndarray:
        total = sum(
            (self.fixed_point.encode(self.inputs[d]).astype(object) for d in devices),
            start=np.zeros(len(self.inputs[devices[0]]), dtype=object),
        )
        return np.asarray(total, dtype=np.uint64)

    def clipped_sum(self, devices: tuple[str, ...]) -> np.ndarray:
        fp = self.fixed_point
        return sum(np.clip(self.inputs[d], fp.clip_low, fp.clip_high) for d in devices)


def make_session(
    n: int = 8,
    *,
    graph: str = "full",
    degree: int | None = None,
    threshold: int | None = None,
    dim: int = 5,
    fixed_point: FixedPoint = FIXED,
    seed: int = 0,
    drops: dict[str, str] | None = None,
    inputs: dict[str, np.ndarray] | None = None,
    **server_options,
) -> Session:
    devices = [f"dev{i:02d}" for i in range(n)]
    rng = np.random.default_rng([seed, 12345])
    if inputs is None:
        inputs = {d: rng.uniform(-1.3, 1.3, dim) for d in devices}  # some values get clipped
    server = SecAggServer(
        RUN,
        SESSION,
        devices,
        dim,
        fixed_point,
        threshold=threshold,
        graph=graph,
        degree=degree,
        stage_timeout=TIMEOUT,
        now=0.0,
        random_bytes=seeded_bytes(seed, 999_999),
        **server_options,
    )
    clients = {
        d: SecAggClient(RUN, SESSION, d, inputs[d], random_bytes=seeded_bytes(seed, i))
        for i, d in enumerate(devices)
    }
    return Session(Net(server, clients, dict(drops or {})), inputs, fixed_point)


def assert_exact(session: Session, result: SumReady) -> None:
    """The unmasked total is exactly the sum of the survivors' encodings."""
    np.testing.assert_array_equal(result.encoded_total, session.encoded_sum(result.survivors))
    tolerance = len(result.survivors) / (2 * session.fixed_point.scale) + 1e-9
    np.testing.assert_allclose(result.total, session.clipped_sum(result.survivors), atol=tolerance)
    assert set(result.survivors).isdisjoint(result.dropped)
    assert set(result.survivors) | set(result.dropped) == set(session.inputs)


def expected_survivors(devices: list[str], dropped: set[str], stage: str) -> tuple[str, ...]:
    """U3: who sent a masked input."""
    if stage in ("after_masked", "during_unmask"):
        return tuple(sorted(devices))
    return tuple(sorted(set(devices) - dropped))


def pick(devices: list[str], count: int, seed: int) -> set[str]:
    rng = np.random.default_rng([seed, 777])
    return {str(d) for d in rng.choice(devices, size=count, replace=False)}


# ---- correctness under every dropout pattern ------------------------------------------


def test_no_dropout_sums_exactly_without_waiting_for_deadlines() -> None:
    session = make_session(n=8, seed=1)
    events = session.net.run()
    (result,) = session.net.only(SumReady)
    assert_exact(session, result)
    assert result.survivors == tuple(sorted(session.inputs)) and result.dropped == ()
    assert session.net.now == 0.0  # every stage closed on the last reply, not a deadline
    opened = [e.stage for e in events if isinstance(e, StageOpened)]
    assert opened == ["advertise", "share", "masked", "unmask"]
    assert not session.net.only(Rejected) and not session.net.svc


def test_one_message_per_device_per_stage() -> None:
    session = make_session(n=6, seed=2)
    session.net.run()
    summary = session.server.summary()
    assert summary["messages_out"] == {
        "sa_setup": 6,
        "sa_neighbours": 6,
        "sa_deliver": 6,
        "sa_unmask_request": 6,
    }
    assert summary["messages_in"] == {
        "sa_advertise": 6,
        "sa_shares": 6,
        "sa_masked": 6,
        "sa_unmask": 6,
    }
    assert all(c.state == "done" for c in session.net.clients.values())


@pytest.mark.parametrize("stage", DROP_STAGES)
def test_full_graph_every_dropout_count_up_to_n_minus_t(stage: str) -> None:
    n = 8
    for count in range(0, n - 5 + 1):  # default t for 8 holders is 5
        session = make_session(n=n, seed=100 + count)
        assert session.server.threshold == 5
        devices = sorted(session.inputs)
        dropped = pick(devices, count, seed=count)
        session.net.drops = dict.fromkeys(dropped, stage)
        session.net.run()
        results = session.net.only(SumReady)
        assert results, (stage, count, session.server.abort_reason)
        (result,) = results
        assert result.survivors == expected_survivors(devices, dropped, stage)
        assert_exact(session, result)
        live = [c for d, c in session.net.clients.items() if d not in dropped]
        if stage != "during_unmask" or count == 0:
            assert all(c.state == "done" for c in live)


def _harary_clean(session: Session, dropped: set[str], stage: str) -> bool:
    """A sufficient condition for every non-dropped device to be summed (SecAgg+ needs t
    share holders per device, among its neighbours and itself)."""
    server, t = session.server, session.server.threshold
    alive = {server.label_of[d] for d in set(session.inputs) - dropped}
    gone = {server.label_of[d] for d in dropped}
    closed = {u: server.neighbours[u] | {u} for u in server.neighbours}
    if stage in ("before_keys", "after_keys"):
        return all(len(closed[u] & alive) >= t for u in alive)
    if stage == "after_shares":
        return all(len(closed[u] & alive) >= t for u in alive) and all(
            len(server.neighbours[v] & alive) >= t for v in gone
        )
    return all(len(closed[u] & alive) >= t for u in closed)


@pytest.mark.parametrize("stage", DROP_STAGES)
def test_harary_graph_every_dropout_count_up_to_n_minus_t(stage: str) -> None:
    n, degree = 10, 5
    outcomes = []
    for count in range(0, n - 4 + 1):  # t = 4 for 6 holders (5 neighbours + itself)
        session = make_session(n=n, graph="harary", degree=degree, seed=200 + count)
        server = session.server
        assert server.threshold == 4
        assert all(len(vs) == degree for vs in server.neighbours.values())
        devices = sorted(session.inputs)
        dropped = pick(devices, count, seed=50 + count)
        session.net.drops = dict.fromkeys(dropped, stage)
        clean = _harary_clean(session, dropped, stage)
        session.net.run()
        results = session.net.only(SumReady)
        if clean:
            assert results, (stage, count, server.abort_reason)
            assert results[0].survivors == expected_survivors(devices, dropped, stage)
        if results:
            (result,) = results
            assert_exact(session, result)
            assert set(result.survivors) <= set(expected_survivors(devices, dropped, stage))
            outcomes.append("sum")
        else:
            (aborted,) = session.net.only(Aborted)
            assert "threshold 4" in aborted.reason, aborted.reason
            outcomes.append("abort")
        if count <= degree + 1 - server.threshold:  # no neighbourhood can lose too many
            assert clean
    assert outcomes[0] == "sum"


def test_harary_excludes_a_device_whose_neighbours_all_dropped() -> None:
    """SecAgg+ graceful case (the peer pitfall): a live device left with fewer than t share
    holders is excluded before it masks anything, and the rest is summed exactly."""
    session = make_session(n=10, graph="harary", degree=3, seed=7)
    server = session.server
    assert server.threshold == 3
    lonely = 1
    dropped_labels = set(server.neighbours[lonely])
    dropped = {server.device_of[v] for v in dropped_labels}
    session.net.drops = dict.fromkeys(dropped, "after_keys")
    session.net.run()
    results = session.net.only(SumReady)
    if results:
        (result,) = results
        assert server.device_of[lonely] in result.dropped
        assert_exact(session, result)
    else:
        assert "threshold 3" in session.server.abort_reason
    lonely_client = session.net.clients[server.device_of[lonely]]
    assert lonely_client.state == "aborted"
    (notice,) = lonely_client.pop_events()[-1:]
    assert isinstance(notice, SessionAborted) and notice.by_collector


def test_thirty_two_bit_modulus_sums_exactly() -> None:
    fixed = FixedPoint(0.0, 10.0, 100.0, bits=32)
    session = make_session(n=6, fixed_point=fixed, dim=7, seed=3)
    session.net.drops = {"dev02": "after_shares"}
    session.net.run()
    (result,) = session.net.only(SumReady)
    assert result.survivors == ("dev00", "dev01", "dev03", "dev04", "dev05")
    assert_exact(session, result)
    masked = session.net.uploads[("dev00", "sa_masked")]
    assert isinstance(masked, SaMasked) and len(masked.masked) == 7 * 4


def test_each_pairwise_secret_is_agreed_once_per_neighbour_and_key_kind(monkeypatch) -> None:
    """X25519 runs once per (device, neighbour, key kind): c to seal and open the shares,
    s for the mask. The server probes each advertised key once and agrees a dropped
    device's rebuilt mask key once with each surviving neighbour. No pair is repeated."""
    calls: list[tuple[bytes, bytes]] = []
    agree = crypto.agree

    def counting(private, peer_public):
        calls.append((crypto.public_from_private(private), peer_public))
        return agree(private, peer_public)

    monkeypatch.setattr(crypto, "agree", counting)
    n, degree = 10, 5
    session = make_session(n=n, graph="harary", degree=degree, seed=11)
    session.net.drops = {"dev03": "after_shares"}  # shares sent, never masks
    session.net.run()
    (result,) = session.net.only(SumReady)
    assert_exact(session, result)
    assert len(calls) == len(set(calls))
    sealing, masking = n * degree, (n - 1) * degree
    probes, rebuilt = 2 * n, degree
    assert len(calls) == sealing + masking + probes + rebuilt
    finished = [c for d, c in session.net.clients.items() if d != "dev03"]
    assert all(c.state == "done" and not c._enc_keys for c in finished)  # keys forgotten


# ---- aborts below threshold -----------------------------------------------------------


@pytest.mark.parametrize("stage", DROP_STAGES)
def test_abort_below_threshold_names_the_stage_and_counts(stage: str) -> None:
    n, t = 8, 5
    session = make_session(n=n, seed=300)
    devices = sorted(session.inputs)
    dropped = pick(devices, n - t + 1, seed=9)
    session.net.drops = dict.fromkeys(dropped, stage)
    session.net.run()
    assert not session.net.only(SumReady)
    (aborted,) = session.net.only(Aborted)
    want = _ABORT_STAGE[stage]
    assert aborted.stage == want
    assert aborted.reason.startswith(f"{want} stage: only {t - 1} of"), aborted.reason
    assert f"(threshold {t})" in aborted.reason
    # the earlier stages closed on their last reply; the failing one waited for its deadline
    assert session.net.now == TIMEOUT
    assert [e.stage for e in session.net.only(StageOpened)][-1] == want
    assert session.server.next_timer() is None and session.server.state == "aborted"
    for device, client in session.net.clients.items():
        if device in dropped:
            continue
        if want == "unmask":
            assert client.state == "done"  # it answered before the abort
        else:
            assert client.state == "aborted" and client.abort_reason == aborted.reason


# ---- min_inputs: the fewest inputs a sum may cover (the DP θ search's noise floor) ----


@pytest.mark.parametrize("stage", ("before_keys", "after_keys", "after_shares"))
@pytest.mark.parametrize("graph", ("full", "harary"))
def test_min_inputs_aborts_before_anything_is_unmasked(stage: str, graph: str) -> None:
    n, floor = 10, 9
    session = make_session(n=n, graph=graph, seed=310, min_inputs=floor)
    dropped = pick(sorted(session.inputs), n - floor + 1, seed=11)  # 8 left: one too few
    session.net.drops = dict.fromkeys(dropped, stage)
    session.net.run()
    assert not session.net.only(SumReady)
    (aborted,) = session.net.only(Aborted)
    assert aborted.stage == _ABORT_STAGE[stage]
    assert f"only {floor - 1} of" in aborted.reason
    assert f"needs at least {floor} inputs (min_inputs)" in aborted.reason
    # no device was asked for a share of anything: nothing was unmasked
    asked = [m for ms in session.net.received.values() for m in ms]
    assert not any(isinstance(m, SaUnmaskRequest) for m in asked)
    assert session.server.summary()["min_inputs"] == floor


@pytest.mark.parametrize("stage", DROP_STAGES)
def test_min_inputs_met_sums_exactly(stage: str) -> None:
    n, floor = 10, 9
    session = make_session(n=n, seed=320, min_inputs=floor)
    devices = sorted(session.inputs)
    dropped = pick(devices, n - floor, seed=12)
    session.net.drops = dict.fromkeys(dropped, stage)
    session.net.run()
    (result,) = session.net.only(SumReady)
    assert result.survivors == expected_survivors(devices, dropped, stage)
    assert len(result.survivors) >= floor
    assert_exact(session, result)


def test_min_inputs_does_not_apply_to_unmask_answers() -> None:
    """Every input is in (U3 = 10); two devices then drop while unmasking: the sum still
    covers 10 inputs, so the floor of 10 is met and the threshold alone decides."""
    n = 10
    session = make_session(n=n, seed=330, min_inputs=n)
    devices = sorted(session.inputs)
    session.net.drops = dict.fromkeys(pick(devices, 2, seed=13), "during_unmask")
    session.net.run()
    (result,) = session.net.only(SumReady)
    assert len(result.survivors) == n
    assert_exact(session, result)


def test_device_abort_counts_as_a_dropout() -> None:
    session = make_session(n=6, seed=4)
    refuser = "dev03"
    net = session.net
    net.drops = {refuser: "after_shares"}  # it receives its shares but masks nothing
    net.start()
    net.pump()
    assert session.server.state == "masked"
    abort = SaAbort(
        run=RUN, sender=refuser, session=SESSION, stage="masked", reason="my sensor failed"
    )
    session.server.receive(topics.parse(topics.up(RUN, refuser, "sa_abort")), wire(abort), 0.0)
    net.finish()
    (event,) = net.only(DeviceAborted)
    assert event == DeviceAborted(refuser, "masked", "my sensor failed")
    (result,) = net.only(SumReady)
    assert refuser in result.dropped
    assert_exact(session, result)
    assert net.now == 0.0  # the masked stage closed at once: nobody else was missing
    assert session.server.summary()["device_aborts"] == {refuser: "my sensor failed"}


# ---- the never-both rule ----------------------------------------------------------------


def _client_awaiting_unmask(seed: int = 5) -> tuple[Session, str, SecAggClient]:
    """A session that completed without ``dev02``'s unmask answer: dev02 sits in state
    ``masked`` with its neighbours' shares, the request withheld."""
    session = make_session(n=6, seed=seed)
    target = "dev02"
    session.net.drops = {target: "after_masked"}
    session.net.run()
    assert session.net.only(SumReady)
    client = session.net.clients[target]
    assert client.state == "masked"
    client.pop_events()
    return session, target, client


def _request(client: SecAggClient, survivors, dropped, total: int = 6) -> SaUnmaskRequest:
    return SaUnmaskRequest(
        run=RUN,
        sender=COLLECTOR,
        session=SESSION,
        survivors=sorted(survivors),
        dropped=sorted(dropped),
        survivor_total=total,
    )


def _deliver_to(client: SecAggClient, message: Message) -> None:
    topic = topics.parse(topics.inbox(RUN, client.device, COLLECTOR))
    client.receive(topic, wire(message), 0.0)


def test_client_refuses_a_node_both_alive_and_dropped() -> None:
    _, target, client = _client_awaiting_unmask()
    me = client.label
    assert me is not None
    others = sorted(set(range(1, 7)) - {me})
    request = _request(client, [me, *others], [others[0]])
    with pytest.raises(RemoteProtocolError, match="both as survivors and as dropped"):
        _deliver_to(client, request)
    out = client.pop_outbound()
    assert [o.message.type_name() for o in out] == ["sa_abort"]
    assert out[0].topic == topics.up(RUN, target, "sa_abort")
    assert client.state == "error"
    (event,) = client.pop_events()
    assert isinstance(event, SessionAborted) and not event.by_collector
    # terminal: a correct request afterwards reveals nothing either
    _deliver_to(client, _request(client, [me, *others[1:]], [others[0]]))
    assert client.pop_outbound() == []


@pytest.mark.parametrize(
    ("case", "match"),
    [
        ("self_dropped", "this device is listed as dropped"),
        ("stranger", "holds shares of exactly"),
        ("few_survivors", "below the threshold"),
    ],
)
def test_client_refuses_inconsistent_unmask_requests(case: str, match: str) -> None:
    _, _, client = _client_awaiting_unmask(seed=6)
    me = client.label
    assert me is not None
    others = sorted(set(range(1, 7)) - {me})
    if case == "self_dropped":
        request = _request(client, others, [me])
    elif case == "stranger":
        request = _request(client, [me, *others[1:]], [])
    else:
        request = _request(client, [me, *others], [], total=4)
    with pytest.raises(RemoteProtocolError, match=match):
        _deliver_to(client, request)
    assert [o.message.type_name() for o in client.pop_outbound()] == ["sa_abort"]


def test_client_answers_one_share_per_node_and_only_once() -> None:
    _, _, client = _client_awaiting_unmask(seed=8)
    me = client.label
    assert me is not None
    others = sorted(set(range(1, 7)) - {me})
    _deliver_to(client, _request(client, [me, *others[2:]], others[:2]))
    (out,) = client.pop_outbound()
    answer = out.message
    assert isinstance(answer, SaUnmask)
    kinds = {entry.node: entry.kind for entry in answer.shares}
    assert len(kinds) == len(answer.shares) == 6
    assert kinds == {me: "b"} | {v: "b" for v in others[2:]} | {v: "s" for v in others[:2]}
    assert client.state == "done"
    # a second request with the split the other way round would reveal the other shares
    with pytest.raises(RemoteProtocolError, match="answers once per round"):
        _deliver_to(client, _request(client, [me, *others[:2]], others[2:]))
    assert client.pop_outbound() == []
    # an identical redelivery (QoS 1) is ignored quietly
    _deliver_to(client, _request(client, [me, *others[2:]], others[:2]))
    assert client.pop_outbound() == []


def test_every_unmask_answer_in_a_run_reveals_exactly_what_was_asked() -> None:
    session = make_session(n=8, seed=10)
    session.net.drops = {"dev01": "after_shares", "dev06": "after_shares"}
    session.net.run()
    assert session.net.only(SumReady)
    for device in session.inputs:
        if device in session.net.drops:
            continue
        (request,) = [m for m in session.net.received[device] if isinstance(m, SaUnmaskRequest)]
        answer = session.net.uploads[(device, "sa_unmask")]
        assert isinstance(answer, SaUnmask)
        revealed = {(e.node, e.kind) for e in answer.shares}
        want = {(v, "b") for v in request.survivors} | {(v, "s") for v in request.dropped}
        assert revealed == want
        assert not set(request.survivors) & set(request.dropped)


# ---- the server refuses bad messages ----------------------------------------------------


def test_server_rejects_a_response_listing_a_node_as_both_dropped_and_alive() -> None:
    session = make_session(n=8, seed=11)
    liar = "dev04"

    def both(sender: str, message: Message) -> Message | None:
        if sender == liar and isinstance(message, SaUnmask):
            first = message.shares[0]
            extra = RevealedShare(node=first.node, kind="s", share=bytes(66))
            return msgspec.structs.replace(message, shares=[*message.shares, extra])
        return message

    session.net.tamper = both
    session.net.run()
    (rejected,) = session.net.only(Rejected)
    assert rejected.device == liar and rejected.kind == "sa_unmask"
    assert "both as alive" in rejected.reason and rejected.field.startswith("shares[")
    assert session.server.label_of[liar] not in session.server.u4
    (result,) = session.net.only(SumReady)  # the seven honest answers suffice
    assert liar in result.survivors  # its masked input is in; its shares were not used
    assert_exact(session, result)
    assert session.net.now == TIMEOUT  # only the unmask stage waited for its deadline
    (notice,) = session.net.svc
    assert isinstance(notice, Reject) and notice.device == liar


def _started(n: int = 4, seed: int = 12, **options) -> tuple[Session, dict[str, SaAdvertise]]:
    """A session whose devices computed their adverts, none delivered yet."""
    session = make_session(n=n, seed=seed, **options)
    session.server.start(0.0)
    for out in session.server.pop_outbound():
        topic = topics.parse(out.topic)
        session.net.clients[topic.recipient].receive(topic, wire(out.message), 0.0)  # type: ignore[index]
    adverts = {}
    for device, client in session.net.clients.items():
        (out,) = client.pop_outbound()
        adverts[device] = wire(out.message)
    session.server.pop_events()
    return session, adverts  # type: ignore[return-value]


def _up(session: Session, device: str, message: Message, *, as_device: str | None = None):
    topic = topics.parse(topics.up(RUN, as_device or device, message.type_name()))
    session.server.receive(topic, wire(message), 0.0)
    return session.server.pop_events()


def test_server_rejects_second_and_replayed_keys_without_state_change() -> None:
    session, adverts = _started()
    a, b = adverts["dev00"], adverts["dev01"]
    assert _up(session, "dev00", a) == []
    # identical redelivery: a counted duplicate, nothing else
    assert _up(session, "dev00", a) == [] and session.server.duplicates == 1
    # a second advert with different keys
    swapped = msgspec.structs.replace(a, c_public=a.s_public, s_public=a.c_public)
    (event,) = _up(session, "dev00", swapped)
    assert isinstance(event, Rejected) and "second sa_advertise" in event.reason
    # dev01 replays dev00's encryption key
    replay = msgspec.structs.replace(b, c_public=a.c_public)
    (event,) = _up(session, "dev01", replay)
    assert isinstance(event, Rejected) and event.field == "c_public"
    assert "replays the public key of dev00" in event.reason
    # the same key twice in one advert, and a low-order point
    (event,) = _up(session, "dev01", msgspec.structs.replace(b, s_public=b.c_public))
    assert isinstance(event, Rejected) and "must differ" in event.reason
    (event,) = _up(session, "dev01", msgspec.structs.replace(b, c_public=bytes(32)))
    assert isinstance(event, Rejected) and event.field == "c_public"
    # none of that changed anything: dev01's real advert is its first
    assert _up(session, "dev01", b) == []
    assert session.server.rejected == 4 and session.server.state == "advertise"


def test_server_rejects_keys_of_an_earlier_session() -> None:
    first, adverts = _started(seed=13)
    for device, advert in adverts.items():
        _up(first, device, advert)
    assert first.server.state == "share"
    old_keys = first.server.public_keys()
    second, _ = _started(seed=14, previous_public_keys=old_keys)
    (event,) = _up(second, "dev02", adverts["dev02"])
    assert isinstance(event, Rejected) and "earlier session" in event.reason


def test_server_rejects_wrong_sender_session_stage_and_topic() -> None:
    session, adverts = _started()
    advert = adverts["dev00"]
    # the message claims dev00 but arrives on dev01's topic
    (event,) = _up(session, "dev00", advert, as_device="dev01")
    assert isinstance(event, Rejected) and event.field == "sender"
    # a stranger
    stranger = msgspec.structs.replace(advert, sender="mallory")
    (event,) = _up(session, "mallory", stranger)
    assert isinstance(event, Rejected) and "not a participant" in event.reason
    # another session, another round
    (event,) = _up(session, "dev00", msgspec.structs.replace(advert, session="s2"))
    assert isinstance(event, Rejected) and event.field == "session"
    (event,) = _up(session, "dev00", msgspec.structs.replace(advert, round=1))
    assert isinstance(event, Rejected) and event.field == "round"
    # a masked input during the advertise stage
    early = SaMasked(run=RUN, sender="dev00", session=SESSION, masked=bytes(40))
    (event,) = _up(session, "dev00", early)
    assert isinstance(event, Rejected) and "before the masked stage opened" in event.reason
    # an inbox topic is not for the collector
    topic = topics.parse(topics.inbox(RUN, "dev00", "dev01"))
    session.server.receive(topic, advert, 0.0)
    (event,) = session.server.pop_events()
    assert isinstance(event, Rejected) and event.field == "topic"
    assert session.server.state == "advertise" and not session.server.u1
    assert _up(session, "dev00", advert) == []  # still dev00's first valid advert


def test_server_rejects_a_wrong_length_vector_and_treats_the_device_as_dropped() -> None:
    session = make_session(n=8, seed=15)
    short = "dev05"

    def truncate(sender: str, message: Message) -> Message | None:
        if sender == short and isinstance(message, SaMasked):
            return msgspec.structs.replace(message, masked=message.masked[:-8])
        return message

    session.net.tamper = truncate
    session.net.run()
    (rejected,) = session.net.only(Rejected)
    assert rejected.device == short and rejected.field == "masked"
    assert "is not 5 words of 8 bytes" in rejected.reason
    (result,) = session.net.only(SumReady)
    assert short in result.dropped  # its shares were sent: its mask key is reconstructed
    assert_exact(session, result)


def test_server_rejects_shares_not_addressed_to_exactly_the_neighbours() -> None:
    session = make_session(n=5, seed=16)
    cheat = "dev01"

    def skip_one(sender: str, message: Message) -> Message | None:
        if sender == cheat and message.type_name() == "sa_shares":
            return msgspec.structs.replace(message, shares=message.shares[1:])  # type: ignore[attr-defined]
        return message

    session.net.tamper = skip_one
    session.net.run()
    (rejected,) = session.net.only(Rejected)
    assert rejected.device == cheat and rejected.field == "shares"
    (result,) = session.net.only(SumReady)
    assert cheat in result.dropped
    assert_exact(session, result)


def test_client_refuses_instructions_from_anyone_but_the_collector() -> None:
    session = make_session(n=3, seed=17)
    client = session.net.clients["dev00"]
    setup = SaSetup(
        run=RUN,
        sender="dev01",
        session=SESSION,
        label=1,
        participants=3,
        threshold=2,
        bits=64,
        dim=5,
        clip_low=-1.0,
        clip_high=1.0,
        scale=1000.0,
        stage_timeout=TIMEOUT,
    )
    topic = topics.parse(topics.inbox(RUN, "dev00", "dev01"))
    with pytest.raises(RemoteProtocolError, match="only from the collector"):
        client.receive(topic, setup, 0.0)
    assert client.state == "idle" and client.pop_outbound() == []
    forged = msgspec.structs.replace(setup, sender=COLLECTOR, session="other")
    with pytest.raises(RemoteProtocolError):
        _deliver_to(client, forged)
    assert client.state == "idle"


# ---- what the collector sees ------------------------------------------------------------


@pytest.mark.parametrize("bits", [64, 32])
def test_masked_input_looks_uniform_to_the_collector(bits: int) -> None:
    dim = 4096
    fixed = FixedPoint(-1.0, 1.0, 1000.0, bits=bits)
    inputs = {f"dev{i:02d}": np.zeros(dim) for i in range(3)}  # a known constant input
    session = make_session(n=3, dim=dim, fixed_point=fixed, inputs=inputs, seed=18)
    session.net.run()
    (result,) = session.net.only(SumReady)
    assert_exact(session, result)
    masked = session.net.uploads[("dev01", "sa_masked")]
    assert isinstance(masked, SaMasked)
    words = np.frombuffer(masked.masked, dtype="<u8" if bits == 64 else "<u4")
    top_byte = (words >> np.array(bits - 8, dtype=words.dtype)).astype(np.int64)
    counts = np.bincount(top_byte, minlength=256)
    assert stats.chisquare(counts).pvalue > 1e-6
    assert not np.any(words == fixed.encode(np.zeros(1))[0])


# ---- configuration ----------------------------------------------------------------------


def test_capacity_overflow_is_refused_at_construction() -> None:
    fixed = FixedPoint(0.0, 1.0, 2.0**20, bits=32)  # 4096 * 2^20 = 2^32 would wrap
    devices = [f"d{i}" for i in range(4096)]
    with pytest.raises(ParameterError, match="would wrap") as info:
        SecAggServer(RUN, SESSION, devices, 3, fixed, stage_timeout=TIMEOUT, now=0.0)
    assert info.value.field == "bits"
    SecAggServer(RUN, SESSION, devices[:4095], 3, fixed, graph="harary", degree=7)


def test_client_refuses_a_setup_whose_sum_could_wrap() -> None:
    session = make_session(n=3, seed=19)
    client = session.net.clients["dev00"]
    setup = SaSetup(
        run=RUN,
        sender=COLLECTOR,
        session=SESSION,
        label=1,
        participants=5000,
        threshold=2,
        bits=32,
        dim=5,
        clip_low=0.0,
        clip_high=1.0,
        scale=2.0**20,
        stage_timeout=TIMEOUT,
    )
    with pytest.raises(RemoteProtocolError, match="would wrap"):
        _deliver_to(client, setup)
    assert client.state == "error"


@pytest.mark.parametrize(
    ("options", "field_name"),
    [
        ({"threshold": 4}, "threshold"),  # 2t must exceed the 8 holders
        ({"threshold": 9}, "threshold"),  # more than the holders
        ({"graph": "star"}, "graph"),
        ({"graph": "full", "degree": 3}, "degree"),
        # the graph's own name for it was "k", which no caller passes
        ({"graph": "harary", "degree": 0}, "degree"),
        ({"graph": "harary", "degree": 8}, "degree"),
        ({"bits": 32}, "bits"),
        ({"stage_timeout": 0.0}, "stage_timeout"),
        ({"min_inputs": 9}, "min_inputs"),  # more than the 8 participants
        ({"min_inputs": -1}, "min_inputs"),
        ({"min_inputs": 2.5}, "min_inputs"),
    ],
)
def test_invalid_parameters_are_refused(options: dict, field_name: str) -> None:
    devices = [f"d{i}" for i in range(8)]
    params = {"stage_timeout": TIMEOUT} | options
    with pytest.raises(ParameterError) as info:
        SecAggServer(RUN, SESSION, devices, 3, FIXED, **params)
    assert info.value.field == field_name


@pytest.mark.parametrize("timeout", [86_400.5, 1e300, float("inf")])
def test_a_stage_timeout_the_devices_would_refuse_is_refused_at_construction(timeout) -> None:
    """``SaSetup.stage_timeout`` is at most a day: a server built with more sent a setup
    every device refused to decode, then waited for the deadline (``ldpfleet bench secagg
    --stage-timeout 86401`` hung; ``stage_timeout = 1e300`` in ``[secure_sum]`` hung the
    run after its stream stage)."""
    devices = [f"d{i}" for i in range(8)]
    with pytest.raises(ParameterError) as info:
        SecAggServer(RUN, SESSION, devices, 3, FIXED, stage_timeout=timeout)
    assert info.value.field == "stage_timeout"
    assert "86400" in info.value.reason and repr(timeout) in info.value.reason
    SecAggServer(RUN, SESSION, devices, 3, FIXED, stage_timeout=86_400.0)  # the limit itself


def test_client_events_trace_the_stages() -> None:
    session = make_session(n=4, seed=20)
    session.net.run()
    for client in session.net.clients.values():
        stages = [e.stage for e in client.pop_events() if isinstance(e, StageAnswered)]
        assert stages == ["advertise", "share", "masked", "unmask"]
        assert client.finished


def test_client_refuses_a_threshold_without_an_honest_majority_of_holders() -> None:
    session = make_session(n=3, seed=21)
    client = session.net.clients["dev00"]
    envelope = {"run": RUN, "sender": COLLECTOR, "session": SESSION}
    setup = SaSetup(
        **envelope,
        label=1,
        participants=6,
        threshold=3,  # 6 holders: 2t = 6 is not a majority
        bits=64,
        dim=5,
        clip_low=-1.0,
        clip_high=1.0,
        scale=1000.0,
        stage_timeout=TIMEOUT,
    )
    _deliver_to(client, setup)
    client.pop_outbound()
    keys = [
        (generate_keypair(seeded_bytes(22, i)), generate_keypair(seeded_bytes(23, i)))
        for i in range(5)
    ]
    neighbours = [
        PeerKeys(label=label, c_public=c.public, s_public=s.public)
        for label, (c, s) in zip(range(2, 7), keys, strict=True)
    ]
    with pytest.raises(RemoteProtocolError, match="not above half"):
        _deliver_to(client, SaNeighbours(**envelope, threshold=3, neighbours=neighbours))
    assert [o.message.type_name() for o in client.pop_outbound()] == ["sa_abort"]


def test_an_operator_abort_names_its_stage_once() -> None:
    """``SecAggServer.abort(reason)`` (an operator stop) sent devices the bare reason while
    every other abort reads "<stage> stage: ..."; now it names the open stage, once."""
    session = make_session(n=8, seed=301)
    session.server.start(0.0)
    session.server.abort("stopped by the operator")
    (aborted,) = [e for e in session.server.pop_events() if isinstance(e, Aborted)]
    assert aborted.stage == "advertise"
    assert aborted.reason == "advertise stage: stopped by the operator"
