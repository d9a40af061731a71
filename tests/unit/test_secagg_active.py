"""Tier-1 tests of the active-adversary mode of secure aggregation (Bonawitz et al., CCS
2017, §4, Fig. 4, the malicious-server variant): Ed25519-signed keys and the consistency
round (protocol/secagg/active.py, server.py, client.py).

The driver is ``Net`` of test_secagg_machines.py, extended (``ActiveNet``) with the two
active-mode messages in its dropout tables, a hook through which the *server* lies (it
rewrites or withholds what a device receives), and a record of what each device refused
(the client raises ``RemoteProtocolError`` after queuing its ``SaAbort``, as a pump would
log it). A "malicious server" is either that hook on top of the honest server, or the test
itself speaking to the clients directly.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import msgspec
import numpy as np
import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import ParameterError, RemoteProtocolError
from ldpfleet.protocol.events import Rejected
from ldpfleet.protocol.messages import Message
from ldpfleet.protocol.secagg import active as signing
from ldpfleet.protocol.secagg.client import (
    SecAggClient,
    SessionAborted,
    StageAnswered,
    share_associated_data,
)
from ldpfleet.protocol.secagg.crypto import (
    KeyPair,
    agree,
    decrypt,
    derive_key,
    generate_keypair,
    sign,
    signing_keypair,
)
from ldpfleet.protocol.secagg.messages import (
    PeerKeys,
    SaAdvertise,
    SaConsistency,
    SaConsistencyRequest,
    SaNeighbours,
    SaShares,
    SaUnmask,
    SaUnmaskRequest,
    SignedSurvivors,
)
from ldpfleet.protocol.secagg.server import (
    Aborted,
    DeviceAborted,
    SecAggServer,
    StageOpened,
    SumReady,
)

from tests.unit.test_secagg_machines import (
    COLLECTOR,
    FIXED,
    RUN,
    SESSION,
    TIMEOUT,
    Net,
    Session,
    Tamper,
    assert_exact,
    make_session,
    pick,
    seeded_bytes,
    wire,
)

_SEQUENCE_IN = (
    "sa_setup",
    "sa_neighbours",
    "sa_deliver",
    "sa_consistency_request",
    "sa_unmask_request",
)
_SEQUENCE_UP = ("sa_advertise", "sa_shares", "sa_masked", "sa_consistency", "sa_unmask")
# stage -> (how many inbox kinds it still receives, how many upstream kinds get through)
_REACH = {
    "before_keys": (0, 0),
    "after_keys": (1, 1),
    "after_shares": (2, 2),
    "after_masked": (3, 3),
    "during_consistency": (4, 3),  # it signs U3, the signature is lost
    "after_consistency": (4, 4),
    "during_unmask": (5, 4),  # it computes its answer, which is lost
}
DROP_STAGES = tuple(_REACH)
STAGES = ["advertise", "share", "masked", "consistency", "unmask"]


@dataclass
class ActiveNet(Net):
    """``Net`` with the consistency messages, a lying server and the devices' refusals."""

    lie: Tamper | None = None  # rewrites (or withholds: None) what a device receives
    refusals: dict[str, RemoteProtocolError] = field(default_factory=dict)

    def route(self, out) -> None:
        topic = topics.parse(out.topic)
        message = wire(out.message)
        if topic.family == "in":
            assert topic.recipient is not None
            self._to_device(topic, topic.recipient, message)
        elif topic.family == "up":
            self._to_server(topic, message)
        else:
            self.svc.append(message)

    def _reaches(self, device: str, kind: str, sequence: tuple[str, ...], side: int) -> bool:
        drop = self.drops.get(device)
        return drop is None or kind in sequence[: _REACH[drop][side]]

    def _to_device(self, topic: topics.Topic, device: str, message: Message) -> None:
        if not self._reaches(device, message.type_name(), _SEQUENCE_IN, 0):
            return
        if self.lie is not None:
            lied = self.lie(device, message)
            if lied is None:
                return
            message = wire(lied)
        self.received.setdefault(device, []).append(message)
        try:
            self.clients[device].receive(topic, message, self.now)
        except RemoteProtocolError as error:
            self.refusals[device] = error

    def _to_server(self, topic: topics.Topic, message: Message) -> None:
        kind = message.type_name()
        if kind != "sa_abort" and not self._reaches(topic.sender, kind, _SEQUENCE_UP, 1):
            return
        if self.tamper is not None:
            tampered = self.tamper(topic.sender, message)
            if tampered is None:
                return
            message = wire(tampered)
        self.uploads[(topic.sender, kind)] = message
        self.server.receive(topic, message, self.now)


def identities(devices: list[str], seed: int) -> dict[str, KeyPair]:
    """Each device's long-term Ed25519 identity key pair (the PKI)."""
    return {d: signing_keypair(seeded_bytes(seed, 50_000 + i)) for i, d in enumerate(devices)}


def make_active_session(
    n: int = 8,
    *,
    seed: int = 0,
    dim: int = 4,
    drops: dict[str, str] | None = None,
    **server_options,
) -> Session:
    devices = [f"dev{i:02d}" for i in range(n)]
    rng = np.random.default_rng([seed, 54321])
    inputs = {d: rng.uniform(-1.3, 1.3, dim) for d in devices}
    keys = identities(devices, seed)
    roster = {d: pair.public for d, pair in keys.items()}
    server = SecAggServer(
        RUN,
        SESSION,
        devices,
        dim,
        FIXED,
        stage_timeout=TIMEOUT,
        random_bytes=seeded_bytes(seed, 999_999),
        active=True,
        identity_keys=roster,
        **server_options,
    )
    clients = {
        d: SecAggClient(
            RUN,
            SESSION,
            d,
            inputs[d],
            random_bytes=seeded_bytes(seed, i),
            active=True,
            signing_key=keys[d].private,
            identity_keys=roster,
        )
        for i, d in enumerate(devices)
    }
    return Session(ActiveNet(server, clients, dict(drops or {})), inputs, FIXED)


def net_of(session: Session) -> ActiveNet:
    assert isinstance(session.net, ActiveNet)
    return session.net


def deliver(client: SecAggClient, message: Message) -> list[Message]:
    """Hand ``message`` to ``client`` as the collector; return what the client sent."""
    topic = topics.parse(topics.inbox(RUN, client.device, COLLECTOR))
    client.receive(topic, wire(message), 0.0)
    return [wire(out.message) for out in client.pop_outbound()]


ENVELOPE = {"run": RUN, "sender": COLLECTOR, "session": SESSION}


# ---- the sum is exact ----------------------------------------------------------------


def test_no_dropout_sums_exactly_with_signatures_and_a_consistency_round() -> None:
    session = make_active_session(n=8, seed=1)
    net = net_of(session)
    events = net.run()
    (result,) = net.only(SumReady)
    assert_exact(session, result)
    assert result.dropped == () and net.now == 0.0
    assert [e.stage for e in events if isinstance(e, StageOpened)] == STAGES
    assert not net.only(Rejected) and not net.svc and not net.refusals
    summary = session.server.summary()
    assert summary["messages_out"]["sa_consistency_request"] == 8
    assert summary["messages_in"]["sa_consistency"] == 8
    assert summary["active"] is True and summary["signed"] == 8
    advert = net.uploads[("dev03", "sa_advertise")]
    assert isinstance(advert, SaAdvertise) and advert.signature is not None
    (request,) = [m for m in net.received["dev03"] if isinstance(m, SaUnmaskRequest)]
    assert request.consistency is not None and len(request.consistency) == 8
    for client in net.clients.values():
        stages = [e.stage for e in client.pop_events() if isinstance(e, StageAnswered)]
        assert stages == ["advertise", "share", "masked", "consistency", "unmask"]
        assert client.state == "done"


@pytest.mark.parametrize("stage", DROP_STAGES)
def test_full_graph_sums_exactly_with_dropouts_at_every_stage(stage: str) -> None:
    n = 8  # t = 5
    for count in (1, 3):
        session = make_active_session(n=n, seed=10 + count)
        net = net_of(session)
        devices = sorted(session.inputs)
        dropped = pick(devices, count, seed=count)
        net.drops = dict.fromkeys(dropped, stage)
        net.run()
        results = net.only(SumReady)
        assert results, (stage, count, session.server.abort_reason)
        (result,) = results
        assert_exact(session, result)
        late = DROP_STAGES.index(stage) >= DROP_STAGES.index("after_masked")
        want = devices if late else sorted(set(devices) - dropped)
        assert result.survivors == tuple(want)  # U3: who sent a masked input
        assert not net.refusals and not net.only(Rejected)


def test_a_device_dropping_during_the_consistency_round_is_still_summed() -> None:
    """It is in U3 (its masked input arrived): the signers rebuild its self-mask seed, and
    it is not asked to unmask."""
    session = make_active_session(n=8, seed=2)
    net = net_of(session)
    quiet = "dev05"
    net.drops = {quiet: "during_consistency"}
    net.run()
    (result,) = net.only(SumReady)
    assert quiet in result.survivors and result.dropped == ()
    assert_exact(session, result)
    server = session.server
    label = server.label_of[quiet]
    assert label in server.u3 and label not in server.signers and len(server.signers) == 7
    assert server.summary()["messages_out"]["sa_unmask_request"] == 7
    assert net.now == TIMEOUT  # the consistency stage waited for its deadline


def test_harary_graph_sums_exactly_with_a_consistency_dropout() -> None:
    session = make_active_session(n=12, seed=3, graph="harary", degree=5)
    net = net_of(session)
    net.drops = {"dev04": "during_consistency", "dev09": "after_shares"}
    net.run()
    results = net.only(SumReady)
    assert results, session.server.abort_reason
    assert_exact(session, results[0])
    assert "dev09" in results[0].dropped and "dev04" in results[0].survivors


# ---- AdvertiseKeys: forged signatures are refused by the server ------------------------


def _forge(case: str, message: SaAdvertise, session: Session) -> SaAdvertise:
    intruder = signing_keypair(seeded_bytes(77, 1))
    right_transcript = signing.advertise_transcript(
        message.c_public, message.s_public, run=RUN, session=SESSION, round=0, label=4
    )
    other_label = signing.advertise_transcript(
        message.c_public, message.s_public, run=RUN, session=SESSION, round=0, label=5
    )
    other_round = signing.advertise_transcript(
        message.c_public, message.s_public, run=RUN, session=SESSION, round=1, label=4
    )
    own = identities(sorted(session.inputs), 4)["dev03"].private
    signature = {
        "missing": None,
        "corrupted": bytes(64),
        "wrong_signer": sign(intruder.private, right_transcript),
        "other_label": sign(own, other_label),
        "other_round": sign(own, other_round),
    }[case]
    return msgspec.structs.replace(message, signature=signature)


@pytest.mark.parametrize(
    "case", ["missing", "corrupted", "wrong_signer", "other_label", "other_round"]
)
def test_server_rejects_a_forged_advertisement_signature(case: str) -> None:
    session = make_active_session(n=6, seed=4)
    net = net_of(session)
    forged = "dev03"  # label 4

    def forge(sender: str, message: Message) -> Message | None:
        if sender == forged and isinstance(message, SaAdvertise):
            return _forge(case, message, session)
        return message

    net.tamper = forge
    net.run()
    (rejected,) = net.only(Rejected)
    assert rejected.device == forged and rejected.kind == "sa_advertise"
    assert rejected.field == "signature"
    assert ("missing" if case == "missing" else "not a valid signature") in rejected.reason
    server = session.server
    assert server.label_of[forged] not in server.u1
    assert server.summary()["rejections_by_field"] == {"signature": 1}
    (result,) = net.only(SumReady)  # the five honest devices are summed
    assert forged in result.dropped
    assert_exact(session, result)


def test_server_relays_each_neighbours_signature() -> None:
    session = make_active_session(n=4, seed=5)
    net = net_of(session)
    net.run()
    (neighbours,) = [m for m in net.received["dev00"] if isinstance(m, SaNeighbours)]
    for entry in neighbours.neighbours:
        advert = net.uploads[(session.server.device_of[entry.label], "sa_advertise")]
        assert isinstance(advert, SaAdvertise)
        assert entry.signature == advert.signature is not None


# ---- ShareKeys: a substituted key (server in the middle) is detected --------------------


MALLORY_C = generate_keypair(seeded_bytes(88, 1))  # the server's own X25519 keys
MALLORY_S = generate_keypair(seeded_bytes(88, 2))


def _substitute(victim: str, target: int, how: str) -> Tamper:
    """The server hands ``victim`` its own keys in place of label ``target``'s."""
    c, s = MALLORY_C, MALLORY_S
    mallory = signing_keypair(seeded_bytes(88, 3))

    def lie(device: str, message: Message) -> Message | None:
        if device != victim or not isinstance(message, SaNeighbours):
            return message
        entries = []
        for entry in message.neighbours:
            if entry.label == target:
                transcript = signing.advertise_transcript(
                    c.public, s.public, run=RUN, session=SESSION, round=0, label=target
                )
                signature = {
                    "keep_signature": entry.signature,
                    "own_signature": sign(mallory.private, transcript),
                    "unsigned": None,
                }[how]
                entry = PeerKeys(
                    label=target, c_public=c.public, s_public=s.public, signature=signature
                )
            entries.append(entry)
        return msgspec.structs.replace(message, neighbours=entries)

    return lie


@pytest.mark.parametrize("how", ["keep_signature", "own_signature", "unsigned"])
def test_client_detects_a_substituted_neighbour_key_and_sends_no_shares(how: str) -> None:
    session = make_active_session(n=6, seed=6)
    net = net_of(session)
    victim, target = "dev01", 5
    net.lie = _substitute(victim, target, how)
    net.run()
    error = net.refusals[victim]
    assert error.field is not None and error.field.startswith("neighbours[")
    want = "are not signed (active mode)" if how == "unsigned" else "not signed by its identity"
    assert want in error.reason and "dev04" in error.reason
    assert (victim, "sa_shares") not in net.uploads  # no share left the device
    client = net.clients[victim]
    assert client.state == "error" and want in client.abort_reason
    events = client.pop_events()
    assert [e.stage for e in events if isinstance(e, StageAnswered)] == ["advertise"]
    assert isinstance(events[-1], SessionAborted) and not events[-1].by_collector
    (aborted,) = net.only(DeviceAborted)  # the victim told the collector why
    assert aborted.device == victim and aborted.stage == "share"
    (result,) = net.only(SumReady)  # the others go on without it
    assert victim in result.dropped
    assert_exact(session, result)


def test_without_active_mode_a_substituted_key_goes_unnoticed() -> None:
    """The contrast: the honest-but-curious client shares with whatever keys it is given,
    and the server in the middle opens the share meant for the target."""
    plain = make_session(n=6, seed=6)
    net = ActiveNet(plain.net.server, plain.net.clients)
    victim, target = "dev01", 5
    net.lie = _substitute(victim, target, "unsigned")
    net.start()
    net.pump()
    shares = net.uploads[(victim, "sa_shares")]
    assert isinstance(shares, SaShares)
    (sealed,) = [e.ciphertext for e in shares.shares if e.peer == target]
    advert = net.uploads[(victim, "sa_advertise")]
    assert isinstance(advert, SaAdvertise)
    shared = agree(MALLORY_C.private, advert.c_public)
    key = derive_key(shared, purpose="enc", run=RUN, session=SESSION, round=0, a=2, b=target)
    plaintext = decrypt(key, sealed, share_associated_data(RUN, SESSION, 0, 2, target))
    assert plaintext[:8] == (2).to_bytes(4, "big") + target.to_bytes(4, "big")


# ---- ConsistencyCheck: a lying server gets no share ------------------------------------


def _at_consistency(seed: int) -> tuple[Session, list[int]]:
    """An 8-device session (t = 5) stopped once the server sent the consistency requests
    (withheld): every client awaits U3."""
    session = make_active_session(n=8, seed=seed)
    net = net_of(session)
    net.lie = lambda d, m: None if isinstance(m, SaConsistencyRequest) else m
    net.start()
    net.pump()
    assert session.server.state == "consistency"
    assert all(c.state == "masked" for c in net.clients.values())
    return session, sorted(session.server.u3)


def _sign_views(session: Session, views: dict[int, list[int]]) -> dict[int, bytes]:
    """Show each label its U3 (as the lying server); collect the signatures."""
    signatures = {}
    for label, u3 in views.items():
        client = session.net.clients[session.server.device_of[label]]
        (reply,) = deliver(client, SaConsistencyRequest(**ENVELOPE, survivors=u3))
        assert isinstance(reply, SaConsistency)
        signatures[label] = reply.signature
    return signatures


def _unmask_request(
    survivors: list[int], dropped: list[int], signatures: dict[int, bytes]
) -> SaUnmaskRequest:
    return SaUnmaskRequest(
        **ENVELOPE,
        survivors=survivors,
        dropped=dropped,
        survivor_total=len(survivors),
        consistency=[SignedSurvivors(label=v, signature=signatures[v]) for v in signatures],
    )


def _refuses(client: SecAggClient, request: SaUnmaskRequest, match: str) -> None:
    """The client refuses ``request`` and reveals no share."""
    with pytest.raises(RemoteProtocolError, match=match):
        deliver(client, request)
    sent = [wire(out.message) for out in client.pop_outbound()]
    assert [m.type_name() for m in sent] == ["sa_abort"]
    assert not any(isinstance(m, SaUnmask) for m in sent)
    assert client.state == "error" and client.finished


@pytest.mark.parametrize("relay", ["every_signature", "matching_signatures"])
def test_clients_refuse_to_unmask_when_the_server_shows_different_survivor_sets(
    relay: str,
) -> None:
    """The split-view attack: half the devices are told the victim survived (they would
    reveal its b-share), half that it dropped (its s-share); with both, x_victim is out."""
    session, u3 = _at_consistency(seed=7)
    victim = 1
    believers, doubters = u3[:4], u3[4:]
    fake = [v for v in u3 if v != victim]
    views = {v: u3 for v in believers} | {v: fake for v in doubters}
    signatures = _sign_views(session, views)
    for label, view in views.items():
        client = session.net.clients[session.server.device_of[label]]
        group = believers if view == u3 else doubters
        shown = view if relay == "every_signature" else group  # signers listed in U3 only
        relayed = {v: signatures[v] for v in shown}
        dropped = [] if view == u3 else [victim]
        match = "not valid on the survivor set" if relay == "every_signature" else "only 4"
        _refuses(client, _unmask_request(view, dropped, relayed), match)


def test_honest_server_rejects_signatures_of_a_different_survivor_set() -> None:
    """The same split routed through the honest server code: the doubters' signatures do
    not verify on the U3 it holds, so only four count and the stage aborts."""
    session = make_active_session(n=8, seed=8)
    net = net_of(session)
    victim = 1

    def split(device: str, message: Message) -> Message | None:
        if isinstance(message, SaConsistencyRequest) and device >= "dev04":
            return msgspec.structs.replace(
                message, survivors=[v for v in message.survivors if v != victim]
            )
        return message

    net.lie = split
    net.run()
    rejected = net.only(Rejected)
    assert len(rejected) == 4 and {r.field for r in rejected} == {"signature"}
    assert all("survivor set U3" in r.reason for r in rejected)
    (aborted,) = net.only(Aborted)
    assert aborted.stage == "consistency"
    assert aborted.reason.startswith(
        "consistency stage: only 4 of 8 devices signed the survivor set (threshold 5); "
        "4 sent no accepted reply before the deadline"
    )
    assert not any(isinstance(m, SaUnmaskRequest) for ms in net.received.values() for m in ms)
    assert all(c.state == "aborted" for c in net.clients.values())


def test_client_refuses_a_split_that_disagrees_with_the_signed_survivor_set() -> None:
    """Every signature is valid on U3, but the request calls the victim dropped."""
    session, u3 = _at_consistency(seed=9)
    signatures = _sign_views(session, dict.fromkeys(u3, u3))
    client = session.net.clients[session.server.device_of[u3[-1]]]
    request = _unmask_request(u3[1:], [u3[0]], signatures)
    request = msgspec.structs.replace(request, survivor_total=len(u3))
    _refuses(client, request, "disagree with the signed U3")


def test_a_device_signs_one_survivor_set_per_round() -> None:
    session, u3 = _at_consistency(seed=10)
    client = session.net.clients["dev07"]
    (reply,) = deliver(client, SaConsistencyRequest(**ENVELOPE, survivors=u3))
    assert isinstance(reply, SaConsistency)
    assert deliver(client, SaConsistencyRequest(**ENVELOPE, survivors=u3)) == []  # QoS 1
    with pytest.raises(RemoteProtocolError, match="expected sa_unmask_request"):
        deliver(client, SaConsistencyRequest(**ENVELOPE, survivors=u3[1:]))
    assert client.state == "error"


@pytest.mark.parametrize(
    ("survivors", "match"),
    [
        ([2, 3, 4, 5, 6], "not in U3"),  # dev07 is label 8
        ([4, 5, 6, 8], "below the threshold 5"),
    ],
)
def test_client_refuses_an_implausible_survivor_set(survivors: list[int], match: str) -> None:
    session, _ = _at_consistency(seed=11)
    client = session.net.clients["dev07"]
    with pytest.raises(RemoteProtocolError, match=match) as info:
        deliver(client, SaConsistencyRequest(**ENVELOPE, survivors=survivors))
    assert info.value.field == "survivors"
    assert [m.message.type_name() for m in client.pop_outbound()] == ["sa_abort"]


# ---- fewer than t consistency signatures ----------------------------------------------


def test_server_rejects_a_bad_consistency_signature_and_goes_on_without_it() -> None:
    session = make_active_session(n=8, seed=20)
    net = net_of(session)
    cheat = "dev02"

    def corrupt(sender: str, message: Message) -> Message | None:
        if sender == cheat and isinstance(message, SaConsistency):
            flipped = bytes([message.signature[0] ^ 1]) + message.signature[1:]
            return msgspec.structs.replace(message, signature=flipped)
        return message

    net.tamper = corrupt
    net.run()
    (rejected,) = net.only(Rejected)
    assert rejected.device == cheat and rejected.kind == "sa_consistency"
    assert rejected.field == "signature" and "survivor set U3" in rejected.reason
    server = session.server
    assert server.label_of[cheat] not in server.signers and len(server.signers) == 7
    (result,) = net.only(SumReady)
    assert cheat in result.survivors  # its masked input is in U3
    assert_exact(session, result)


def test_server_aborts_when_fewer_than_t_devices_sign_the_survivor_set() -> None:
    session = make_active_session(n=8, seed=12)
    net = net_of(session)
    quiet = pick(sorted(session.inputs), 4, seed=3)
    net.drops = dict.fromkeys(quiet, "during_consistency")
    net.run()
    assert not net.only(SumReady)
    (aborted,) = net.only(Aborted)
    assert aborted.stage == "consistency"
    assert aborted.reason.startswith(
        "consistency stage: only 4 of 8 devices signed the survivor set (threshold 5); "
        "4 sent no accepted reply before the deadline"
    )
    assert net.now == TIMEOUT and session.server.state == "aborted"
    assert session.server.summary()["messages_out"].get("sa_unmask_request", 0) == 0
    for device, client in net.clients.items():
        if device not in quiet:
            assert client.state == "aborted" and client.abort_reason == aborted.reason


@pytest.mark.parametrize("case", ["too_few", "none", "stranger", "twice"])
def test_client_refuses_to_unmask_without_t_valid_signatures(case: str) -> None:
    session, u3 = _at_consistency(seed=13)
    signatures = _sign_views(session, dict.fromkeys(u3, u3))
    client = session.net.clients["dev00"]
    request = _unmask_request(u3, [], signatures)
    valid = [SignedSurvivors(label=v, signature=signatures[v]) for v in u3]
    if case == "too_few":
        request = _unmask_request(u3, [], {v: signatures[v] for v in u3[:4]})
        match = "only 4 consistency signatures on the survivor set, below the threshold 5"
    elif case == "none":
        request = msgspec.structs.replace(request, consistency=None)
        match = "no consistency signatures"
    elif case == "stranger":  # label 1's signature passed off as a ninth device's
        stranger = SignedSurvivors(label=9, signature=signatures[1])
        request = msgspec.structs.replace(request, consistency=[*valid[1:], stranger])
        match = "not in U3"
    else:  # four signatures counted twice
        request = msgspec.structs.replace(request, consistency=valid[:4] + valid[:4])
        match = "listed twice"
    _refuses(client, request, match)


def test_signatures_of_t_devices_suffice() -> None:
    session, u3 = _at_consistency(seed=14)
    signatures = _sign_views(session, dict.fromkeys(u3, u3))
    client = session.net.clients["dev00"]
    (answer,) = deliver(client, _unmask_request(u3, [], {v: signatures[v] for v in u3[3:]}))
    assert isinstance(answer, SaUnmask) and len(answer.shares) == 8
    assert client.state == "done"


# ---- configuration and mode mismatches -------------------------------------------------


def _server(**options) -> SecAggServer:
    return SecAggServer(RUN, SESSION, ["a", "b", "c"], 2, FIXED, **options)


def test_active_mode_needs_the_roster_of_identity_keys() -> None:
    keys = {d: signing_keypair(seeded_bytes(15, i)).public for i, d in enumerate("abc")}
    _server(active=True, identity_keys=keys)
    cases = [
        ({"active": True}, "identity_keys"),
        ({"active": True, "identity_keys": {"a": keys["a"], "b": keys["b"]}}, "identity_keys"),
        ({"active": True, "identity_keys": keys | {"d": keys["a"]}}, "identity_keys"),
        ({"active": True, "identity_keys": keys | {"c": keys["a"]}}, "identity_keys"),
        ({"active": True, "identity_keys": keys | {"c": b"short"}}, "identity_keys[c]"),
        ({"identity_keys": keys}, "identity_keys"),  # without active=True: refused, not ignored
        ({"active": 1}, "active"),
    ]
    for options, field_name in cases:
        with pytest.raises(ParameterError) as info:
            _server(**options)
        assert info.value.field == field_name, options


def test_client_needs_a_signing_key_matching_its_roster_entry() -> None:
    pairs = {d: signing_keypair(seeded_bytes(16, i)) for i, d in enumerate("abc")}
    roster = {d: p.public for d, p in pairs.items()}
    x = np.zeros(2)
    SecAggClient(
        RUN, SESSION, "a", x, active=True, signing_key=pairs["a"].private, identity_keys=roster
    )
    cases = [
        ({"active": True, "identity_keys": roster}, "signing_key"),
        ({"active": True, "signing_key": pairs["a"].private}, "identity_keys"),
        (
            {"active": True, "signing_key": pairs["b"].private, "identity_keys": roster},
            "identity_keys",
        ),
        ({"signing_key": pairs["a"].private}, "signing_key"),
    ]
    for options, field_name in cases:
        with pytest.raises(ParameterError) as info:
            SecAggClient(RUN, SESSION, "a", x, **options)
        assert info.value.field == field_name, options


def test_active_client_refuses_a_labelling_other_than_the_roster_order() -> None:
    session = make_active_session(n=3, seed=17)
    session.server.start(0.0)
    setups = {topics.parse(o.topic).recipient: o.message for o in session.server.pop_outbound()}
    client = session.net.clients["dev00"]
    swapped = msgspec.structs.replace(setups["dev00"], label=2)
    with pytest.raises(RemoteProtocolError, match="sorted roster") as info:
        deliver(client, swapped)
    assert info.value.field == "label"


def test_mode_mismatches_are_refused() -> None:
    """An active client never answers a plain server's unmask request, and a plain server
    takes no consistency signature."""
    session, u3 = _at_consistency(seed=18)
    client = session.net.clients["dev00"]
    plain = SaUnmaskRequest(**ENVELOPE, survivors=u3, dropped=[], survivor_total=8)
    with pytest.raises(RemoteProtocolError, match="expected sa_consistency_request"):
        deliver(client, plain)
    passive = make_session(n=4, seed=18)
    passive.net.start()
    stray = SaConsistency(run=RUN, sender="dev00", session=SESSION, signature=bytes(64))
    topic = topics.parse(topics.up(RUN, "dev00", "sa_consistency"))
    passive.server.receive(topic, stray, 0.0)
    rejected = [e for e in passive.server.pop_events() if isinstance(e, Rejected)]
    assert rejected and rejected[-1].field == "type" and "not in active mode" in rejected[-1].reason


def test_default_mode_sends_no_signatures_and_no_consistency_round() -> None:
    plain = make_session(n=4, seed=19)
    plain.net.run()
    (result,) = plain.net.only(SumReady)
    assert_exact(plain, result)
    assert "sa_consistency_request" not in plain.server.summary()["messages_out"]
    assert "active" not in plain.server.summary()
    received = plain.net.received["dev00"]
    (neighbours,) = [m for m in received if isinstance(m, SaNeighbours)]
    assert all(entry.signature is None for entry in neighbours.neighbours)
    assert b"signature" not in msgspec.json.encode(neighbours)  # omitted per neighbour
    (request,) = [m for m in received if isinstance(m, SaUnmaskRequest)]
    assert request.consistency is None
    advert = plain.net.uploads[("dev00", "sa_advertise")]
    assert isinstance(advert, SaAdvertise) and advert.signature is None
