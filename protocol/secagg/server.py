"""Secure aggregation, collector side: ``SecAggServer`` runs ONE aggregation session.

Theory of operation (Bonawitz et al., CCS 2017, §4, Fig. 4; Bell et al., CCS 2020 for the
sparse SecAgg+ graph). The n participating devices are labelled 1..n in sorted order of
their ids; ``graph`` gives each label u its neighbourhood N(u) (everyone, or a random
Harary graph of degree k). Device u Shamir-shares its secrets t-of-(|N(u)| + 1) among
N(u) ∪ {u} (it keeps one share of each itself), so on the full graph any t surviving
devices can unmask, exactly as in Bonawitz's t-out-of-U.

Stages (each is one message per device each way):

``advertise``  ``SaSetup`` to every device; replies ``SaAdvertise`` form U1.
``share``      ``SaNeighbours`` (N(u) ∩ U1 and their keys) to each u in U1; replies
               ``SaShares`` form U2. The server only relays ciphertexts it cannot read.
``masked``     ``SaDeliver`` (the ciphertexts for u, and N(u) ∩ U2) to each u in U2;
               replies ``SaMasked`` form U3 (an accepted one stays in U3 if its
               device aborts afterwards, e.g. its last will: message order never
               decides who is summed).
``unmask``     ``SaUnmaskRequest`` to each u in U3 (survivors U3 and dropped U2 \\ U3 in
               N(u) ∪ {u}); replies ``SaUnmask`` form U4. The server reconstructs b_u for
               every u in U3 and s_v for every v in U2 \\ U3, removes the self masks and
               the dropped devices' pairwise masks (``client.self_mask``/``pairwise_mask``,
               the very functions the devices used) and decodes the sum over U3.
``done`` | ``aborted``

Active-adversary mode (``active=True``, off by default; Bonawitz et al. §4, Fig. 4, the
malicious-server variant; see ``protocol.secagg.active``). The server knows every
device's long-term Ed25519 public key (``identity_keys``, exactly the participants) and:

- ``advertise``: refuses an ``SaAdvertise`` whose ``signature`` is missing or does not
  verify under the sender's identity key (``Rejected``, field ``signature``; the device
  is not in U1), and relays each accepted signature in ``PeerKeys`` so that every device
  checks its neighbours' keys itself.
- ``consistency`` (between ``masked`` and ``unmask``): ``SaConsistencyRequest`` (all of
  U3) to each u in U3; replies ``SaConsistency`` (u's signature of U3, verified here)
  form the signer set. The same deadline and threshold rules apply: fewer than t signers
  abort the session. ``SaUnmaskRequest`` then goes to the signers only, carrying every
  signature received (``consistency``); a device dropping during this stage still has
  its masked input summed (it is in U3) and its self-mask seed is rebuilt from the
  signers' shares.

Progression and deadlines: a stage closes as soon as every device expected in it replied
(or aborted), or when ``handle_timer`` sees its deadline pass. The deadline is opened +
``stage_timeout``, moved on by every accepted reply to at least ``stage_timeout`` after
it, but never past opened + ``patience`` x ``stage_timeout`` (default
``DEFAULT_PATIENCE``; 1 gives fixed deadlines): on a busy machine live devices whose
replies keep trickling in are waited for, while a device that is really gone costs at most
``stage_timeout`` after the last reply. Devices must therefore tolerate a silence of
``patience`` x ``stage_timeout`` between two messages of the server (``silence_limit``).
Closing checks that at least t devices replied; otherwise the session is aborted with a
reason naming the stage and the counts (``Aborted`` event, ``SaAbort`` to every
participant). ``min_inputs`` (default 0: off) adds a floor on the inputs a sum may cover,
for a caller whose privacy needs many of them (the DP θ search of CADR-LDP: each device's
noise share is sized for at least that many sharers, ``protocol.cadr_theta_noise``):
through ``masked``, a stage closing with fewer devices present aborts the session, so
nothing is unmasked over too few inputs. The rule is the server's: in SecAgg+ a device sees
only its neighbourhood and cannot check it. SecAgg+ adds per-device checks (Bell et al. §3):
a device whose share holders that are still present number fewer than t could never be
unmasked, so after ``advertise`` and ``share`` such devices are excluded (repeatedly, until
every remaining device has t holders; Flower's survivors crash on exactly this case), and
after ``masked`` the session aborts if a survivor's self-mask seed or a dropped device's
mask key could not be reconstructed. A device that misses a deadline or is excluded gets
``SaAbort(excluded=True)`` so its pump can stop.

Validation: every message must come on its sender's own ``up`` topic, from a participant,
for this run, session and round, and of the kind of the open stage. A second message of a
stage from one device is a duplicate if identical (QoS 1 redelivery: counted, ignored) and
rejected otherwise; public keys must be valid X25519 points, distinct, not used by another
device and not from an earlier session (``previous_public_keys``); share lists must address
exactly the neighbours offered; vectors must be ``dim`` words. An unmask response must
reveal exactly one share per node of the request, of the kind requested: a response that
lists a node both as alive (b-share) and as dropped (s-share) is REJECTED as a whole and
its device does not count as a responder (the honest server never asks for both; it must
never hold both). A rejected message produces a ``Rejected`` event and a ``Reject`` on the
``svc`` topic and changes nothing else. A late reply to a closed stage is counted.
"""

from __future__ import annotations

import math
import os
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import (
    LocalProtocolError,
    ParameterError,
    ProtocolError,
    RemoteProtocolError,
)
from ldpfleet.protocol.events import Event, PeerFacingMachine
from ldpfleet.protocol.messages import Message
from ldpfleet.protocol.secagg import active as signing
from ldpfleet.protocol.secagg import crypto, shamir
from ldpfleet.protocol.secagg import graph as graphs
from ldpfleet.protocol.secagg.client import (
    add_pairwise_into,
    pairwise_mask,
    self_mask,
    unpack_vector,
)
from ldpfleet.protocol.secagg.encoding import FixedPoint, low_bits
from ldpfleet.protocol.secagg.messages import (
    MAX_DIM,
    MAX_PARTICIPANTS,
    MAX_ROUND,
    MAX_STAGE_TIMEOUT,
    PeerKeys,
    SaAbort,
    SaAdvertise,
    SaConsistency,
    SaConsistencyRequest,
    SaDeliver,
    SaMasked,
    SaNeighbours,
    SaSetup,
    SaShares,
    SaUnmask,
    SaUnmaskRequest,
    SealedShare,
    SignedSurvivors,
)

RandomBytes = Callable[[int], bytes]
STAGES = ("advertise", "share", "masked", "unmask")
# how far a stage that keeps receiving replies may be extended, in stage timeouts (module
# docstring, "Progression and deadlines")
DEFAULT_PATIENCE = 4.0
ACTIVE_STAGES = ("advertise", "share", "masked", "consistency", "unmask")
REPLY_OF_STAGE: dict[str, type[Message]] = {
    "advertise": SaAdvertise,
    "share": SaShares,
    "masked": SaMasked,
    "consistency": SaConsistency,
    "unmask": SaUnmask,
}
STAGE_OF_REPLY = {cls: stage for stage, cls in REPLY_OF_STAGE.items()}
_REPLY_VERB = {
    "advertise": "advertised keys",
    "share": "sent their shares",
    "masked": "sent a masked input",
    "consistency": "signed the survivor set",
    "unmask": "answered the unmask request",
}


# Events -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StageOpened(Event):
    """``stage`` opened: ``devices`` are expected to reply before ``deadline``;
    ``dropped`` = every participant no longer in the session (missed a stage, excluded,
    or aborted), cumulative."""

    stage: str
    devices: tuple[str, ...]
    dropped: tuple[str, ...]
    deadline: float


@dataclass(frozen=True, slots=True)
class DeviceAborted(Event):
    """``device`` sent ``SaAbort`` in ``stage``: it refused to go on (counted as dropped)."""

    device: str
    stage: str
    reason: str


@dataclass(frozen=True, slots=True, eq=False)
class SumReady(Event):
    """The session succeeded: ``total`` = Σ over ``survivors`` (U3) of their clipped inputs
    (float, within len(survivors)/(2·scale) per element); ``encoded_total`` is the exact
    integer sum of their fixed-point encodings; ``dropped`` = every other participant."""

    total: np.ndarray
    survivors: tuple[str, ...]
    dropped: tuple[str, ...]
    encoded_total: np.ndarray


@dataclass(frozen=True, slots=True)
class Aborted(Event):
    """The session failed in ``stage``; nothing was released. ``dropped``: the
    participants that had left by then (every one without an accepted reply in the open
    stage, those that aborted included; empty when no stage was open)."""

    stage: str
    reason: str
    dropped: tuple[str, ...] = ()


# The machine --------------------------------------------------------------------------


@dataclass
class _Stage:
    """Book-keeping of the open stage."""

    name: str
    expected: frozenset[int]
    deadline: float
    latest: float  # the furthest the deadline may move (opened + patience x stage_timeout)
    replies: dict[int, Message] = field(default_factory=dict)
    # expected - gone - replies, kept up to date so that "is the stage complete?" after
    # each message is O(1): recomputing it from the sets cost O(n) per message, O(n^2)
    # per stage (~0.1 ms a message at n = 4,039)
    waiting: set[int] = field(default_factory=set)


def check_dim(dim: int) -> int:
    """The vector length of a session: an integer in ``[1, MAX_DIM]``, else a
    ``ParameterError`` naming ``dim``, the limits and the value."""
    if not _is_int(dim) or not 1 <= dim <= MAX_DIM:
        raise ParameterError(
            f"must be an integer in [1, {MAX_DIM}], got {dim!r}",
            field="dim",
            limit=f"an integer in [1, {MAX_DIM}]",
            value=dim,
        )
    return dim


def check_stage_timeout(stage_timeout: float) -> float:
    """A session's stage timeout in seconds: a real number in ``(0, MAX_STAGE_TIMEOUT]``
    (what every device accepts in ``SaSetup``; a longer one was sent anyway, refused by
    every device, and the session hung until its deadline), else a ``ParameterError``
    naming ``stage_timeout``, the limits and the value."""
    if not (_is_real(stage_timeout) and 0 < stage_timeout <= MAX_STAGE_TIMEOUT):
        raise ParameterError(
            f"must be > 0 and <= {MAX_STAGE_TIMEOUT:.0f} seconds, got {stage_timeout!r}",
            field="stage_timeout",
            limit=f"> 0 and <= {MAX_STAGE_TIMEOUT:.0f} seconds",
            value=stage_timeout,
        )
    return float(stage_timeout)


class SecAggServer(PeerFacingMachine):
    """Collector side of one secure-aggregation session (see the module docstring)."""

    def __init__(
        self,
        run: str,
        session: str,
        devices: Iterable[str],
        dim: int,
        fixed_point: FixedPoint,
        *,
        threshold: int | None = None,
        graph: str = "full",
        degree: int | None = None,
        bits: int | None = None,
        stage_timeout: float = 30.0,
        patience: float = DEFAULT_PATIENCE,
        now: float = 0.0,
        round: int = 0,
        previous_public_keys: Collection[bytes] = (),
        random_bytes: RandomBytes = os.urandom,
        active: bool = False,
        identity_keys: Mapping[str, bytes] | None = None,
        min_inputs: int = 0,
    ) -> None:
        self.run = topics.check_ident(run, "run")
        super().__init__(self.run)
        self.session = topics.check_ident(session, "session")
        names = sorted(topics.check_ident(d, "devices") for d in devices)
        if len(set(names)) != len(names):
            repeated = next(d for d in names if names.count(d) > 1)
            raise ParameterError(
                f"device ids must be distinct, got {repeated!r} more than once",
                field="devices",
                limit="distinct device ids (value is the first repeated id)",
                value=repeated,
            )
        if not 2 <= len(names) <= MAX_PARTICIPANTS:
            raise ParameterError(
                f"need 2..{MAX_PARTICIPANTS} devices, got {len(names)}",
                field="devices",
                limit=f"2..{MAX_PARTICIPANTS} devices (value is the count)",
                value=len(names),
            )
        self.n = len(names)
        self.label_of = {name: label for label, name in enumerate(names, start=1)}
        self.device_of = {label: name for name, label in self.label_of.items()}
        self.dim = self._check_dim(dim)
        self.fixed_point = self._check_fixed_point(fixed_point, bits)
        self.bits = self.fixed_point.bits
        self.round = self._check_round(round)
        self.stage_timeout = check_stage_timeout(stage_timeout)
        if not (_is_real(patience) and math.isfinite(patience) and patience >= 1):
            raise ParameterError(
                f"must be >= 1, got {patience!r}", field="patience", limit=">= 1", value=patience
            )
        self.patience = float(patience)
        self.created_at = now
        self.graph_kind = graph
        self.neighbours = self._build_graph(graph, degree, random_bytes)
        self.threshold = self._check_threshold(threshold)
        self.min_inputs = self._check_min_inputs(min_inputs)
        self._previous_keys = frozenset(previous_public_keys)
        # to test advertised points; the parsed key object is kept (2 agreements a device)
        self._probe_key = crypto.generate_keypair(random_bytes).agreement_key()
        signing.check_mode(active, identity_keys=identity_keys)
        self.active = active
        self.stages = ACTIVE_STAGES if active else STAGES
        self._identity = signing.check_identity_keys(identity_keys, names) if active else {}

        # idle -> advertise -> share -> masked [-> consistency] -> unmask -> done | aborted
        self.state = "idle"
        self._stage: _Stage | None = None
        self._replies: dict[str, dict[int, Message]] = {stage: {} for stage in self.stages}
        self._gone: dict[int, str] = {}  # devices that sent SaAbort -> reason
        self._key_owner: dict[bytes, int] = {}
        self._offered: dict[int, frozenset[int]] = {}  # N(u) ∩ U1 sent to u
        self._requests: dict[int, tuple[frozenset[int], frozenset[int]]] = {}
        self._revealed: dict[int, dict[tuple[int, str], int]] = {}
        self.u1: frozenset[int] = frozenset()
        self.u2: frozenset[int] = frozenset()
        self.u3: frozenset[int] = frozenset()
        self.u4: frozenset[int] = frozenset()
        self.signers: frozenset[int] = frozenset()  # active mode: who signed U3
        self.abort_reason = ""
        self.abort_stage = ""  # the stage the session aborted in
        self.duplicates = 0
        self.late = 0
        self.messages_in: Counter[str] = Counter()
        self.messages_out: Counter[str] = Counter()

    # ---- construction checks --------------------------------------------------------------

    @staticmethod
    def _check_dim(dim: int) -> int:
        return check_dim(dim)

    def _check_fixed_point(self, fixed_point: FixedPoint, bits: int | None) -> FixedPoint:
        if not isinstance(fixed_point, FixedPoint):
            raise ParameterError(
                "must be a FixedPoint", field="fixed_point", limit="a FixedPoint", value=fixed_point
            )
        if bits is not None and bits != fixed_point.bits:
            raise ParameterError(
                f"{bits} differs from the fixed-point modulus 2^{fixed_point.bits}",
                field="bits",
                limit=f"the fixed-point modulus bits {fixed_point.bits}",
                value=bits,
            )
        fixed_point.check_capacity(self.n)  # refuse a sum that could wrap, never wrap
        return fixed_point

    @staticmethod
    def _check_round(round: int) -> int:
        if not _is_int(round) or not 0 <= round <= MAX_ROUND:
            raise ParameterError(
                f"must be an integer in [0, {MAX_ROUND}], got {round!r}",
                field="round",
                limit=f"an integer in [0, {MAX_ROUND}]",
                value=round,
            )
        return round

    def _build_graph(
        self, kind: str, degree: int | None, random_bytes: RandomBytes
    ) -> dict[int, frozenset[int]]:
        labels = list(self.device_of)
        if kind == "full":
            if degree is not None and degree != self.n - 1:
                raise ParameterError(
                    f"the full graph has degree n - 1 = {self.n - 1}, got {degree}",
                    field="degree",
                    limit=f"n - 1 = {self.n - 1} (the full graph)",
                    value=degree,
                )
            adjacency = graphs.full_graph(labels)
        elif kind == "harary":
            k = graphs.default_degree(self.n) if degree is None else degree
            try:
                adjacency = graphs.harary_graph(labels, k, random_bytes)
            except ParameterError as error:  # the graph calls it k; our callers, degree
                if error.field != "k":
                    raise
                raise ParameterError(
                    error.reason, field="degree", limit=error.limit, value=error.value
                ) from None
        else:
            raise ParameterError(
                f"must be 'full' or 'harary', got {kind!r}",
                field="graph",
                limit="one of ['full', 'harary']",
                value=kind,
            )
        if len(graphs.components(adjacency, labels)) > 1:  # only k = 1 on n > 2 devices
            raise ParameterError(
                f"must be >= 2 with n = {self.n} devices: degree 1 pairs the devices off, and "
                f"unmasking would reveal each pair's sum (not only the total), got {degree}",
                field="degree",
                limit=f">= 2 with n = {self.n} devices",
                value=degree,
            )
        return {u: frozenset(vs) for u, vs in adjacency.items()}

    def _check_threshold(self, threshold: int | None) -> int:
        """t of the (|N(u)| + 1)-holder sharing: 2t > max holders (an honest majority of
        any holder set answers for at most one of a node's two secrets) and t <= min
        holders (every device can be unmasked when nobody drops)."""
        largest = max(len(vs) for vs in self.neighbours.values()) + 1
        smallest = min(len(vs) for vs in self.neighbours.values()) + 1
        if threshold is None:
            threshold = graphs.default_threshold(largest)
        if not _is_int(threshold) or not (largest < 2 * threshold and threshold <= smallest):
            raise ParameterError(
                f"must be an integer with {largest} < 2t and t <= {smallest} (share holders "
                f"per device: neighbours + itself), got {threshold!r}",
                field="threshold",
                limit=f"an integer with {largest} < 2t and t <= {smallest}",
                value=threshold,
            )
        return threshold

    def _check_min_inputs(self, min_inputs: int) -> int:
        """The fewest inputs a sum may cover (0: the threshold alone decides)."""
        if not _is_int(min_inputs) or not 0 <= min_inputs <= self.n:
            raise ParameterError(
                f"must be an integer in [0, {self.n}] (the participants), got {min_inputs!r}",
                field="min_inputs",
                limit=f"an integer in [0, {self.n}]",
                value=min_inputs,
            )
        return int(min_inputs)

    # ---- properties ---------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """The session is over (``done`` or ``aborted``)."""
        return self.state in ("done", "aborted")

    def public_keys(self) -> frozenset[bytes]:
        """Every public key advertised in this session (pass to the next session as
        ``previous_public_keys``: keys must be fresh per session)."""
        return frozenset(self._key_owner)

    # ---- start, time, operator abort ----------------------------------------------------

    def start(self, now: float | None = None) -> None:
        """Send ``SaSetup`` to every device and open the ``advertise`` stage."""
        if self.state != "idle":
            raise LocalProtocolError(f"start() in state {self.state}")
        now = self.created_at if now is None else now
        fp = self.fixed_point
        for label in self.device_of:
            setup = SaSetup(
                **self._envelope(),
                label=label,
                participants=self.n,
                threshold=self.threshold,
                bits=self.bits,  # type: ignore[arg-type]
                dim=self.dim,
                clip_low=fp.clip_low,
                clip_high=fp.clip_high,
                scale=fp.scale,
                stage_timeout=self.stage_timeout,
            )
            self._to_device(label, setup)
        self._open("advertise", frozenset(self.device_of), now, dropped=())

    def next_timer(self) -> float | None:
        """The open stage's deadline."""
        return self._stage.deadline if self._stage is not None else None

    def handle_timer(self, now: float) -> None:
        """Close the open stage if its deadline passed."""
        if self._stage is not None and now >= self._stage.deadline:
            self._close_stage(now)

    def abort(self, reason: str) -> None:
        """End the session now (operator request); the reason, like every abort's, reads
        "<stage> stage: <reason>"."""
        if not self.finished:
            self._abort(self.state, f"{self.state} stage: {reason}")

    # ---- input --------------------------------------------------------------------------

    def _receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        label = self._check_envelope(topic, message)
        self.messages_in[message.type_name()] += 1
        if self.finished:
            self.late += 1  # e.g. a reply racing the end of the session: not an attack
            return
        if self.state == "idle":
            raise RemoteProtocolError("the session has not started", field="type")
        if isinstance(message, SaAbort):
            self._on_device_abort(label, message, now)
            return
        stage = self._stage_of(message)
        if self.stages.index(stage) > self.stages.index(self.state):
            raise RemoteProtocolError(
                f"a {message.type_name()} before the {stage} stage opened "
                f"(the session is in {self.state})",
                field="type",
            )
        earlier = self._replies[stage].get(label)
        if earlier is not None:
            if earlier == message:
                self.duplicates += 1
                return
            raise RemoteProtocolError(
                f"a second {message.type_name()} from {message.sender} with different "
                "content (the first one stands)",
                field="type",
            )
        if stage != self.state:
            self.late += 1  # the device missed that stage's deadline and is out
            return
        assert self._stage is not None
        if label in self._gone:
            raise RemoteProtocolError(f"{message.sender} aborted the session", field="sender")
        if label not in self._stage.expected:
            raise RemoteProtocolError(
                f"{message.sender} is not part of the {stage} stage (it dropped out or was "
                "excluded earlier)",
                field="sender",
            )
        self._validate_reply(label, message)
        self._replies[stage][label] = message
        self._stage.replies[label] = message
        self._stage.waiting.discard(label)
        self._extend(now)
        if self._stage_complete():
            self._close_stage(now)

    def _stage_of(self, message: Message) -> str:
        stage = STAGE_OF_REPLY[type(message)]
        if stage not in self.stages:
            raise RemoteProtocolError(
                f"a {message.type_name()} in a session that is not in active mode", field="type"
            )
        return stage

    def _check_envelope(self, topic: topics.Topic, message: Message) -> int:
        self._check_upstream(topic, message)
        label = self.label_of.get(message.sender)
        if label is None:
            raise RemoteProtocolError(
                f"{message.sender!r} is not a participant of session {self.session}",
                field="sender",
            )
        if message.type_name() != topic.kind:
            raise RemoteProtocolError(
                f"a {message.type_name()} message on a {topic.kind!r} topic", field="topic"
            )
        if not isinstance(
            message, SaAbort | SaAdvertise | SaShares | SaMasked | SaConsistency | SaUnmask
        ):
            raise RemoteProtocolError(
                f"unexpected {message.type_name()} from a device", field="type"
            )
        if message.session != self.session:
            raise RemoteProtocolError(
                f"session {message.session!r} is not {self.session!r}", field="session"
            )
        if message.round != self.round:
            raise RemoteProtocolError(f"round {message.round} is not {self.round}", field="round")
        return label

    def _validate_reply(self, label: int, message: Message) -> None:
        if isinstance(message, SaAdvertise):
            self._check_advertise(label, message)
        elif isinstance(message, SaShares):
            self._check_shares(label, message)
        elif isinstance(message, SaMasked):
            unpack_vector(message.masked, self.dim, self.bits)
        elif isinstance(message, SaConsistency):
            self._check_consistency(label, message)
        elif isinstance(message, SaUnmask):
            self._revealed[label] = self._check_unmask(label, message)

    def _check_advertise(self, label: int, message: SaAdvertise) -> None:
        if self.active:
            self._check_advertise_signature(label, message)
        if message.c_public == message.s_public:
            raise RemoteProtocolError("c_public and s_public must differ", field="s_public")
        for name in ("c_public", "s_public"):
            key = getattr(message, name)
            owner = self._key_owner.get(key)
            if owner is not None:
                raise RemoteProtocolError(
                    f"replays the public key of {self.device_of[owner]}", field=name
                )
            if key in self._previous_keys:
                raise RemoteProtocolError(
                    "reuses a public key of an earlier session (keys must be fresh)", field=name
                )
            try:
                crypto.agree(self._probe_key, key)
            except ParameterError as error:
                raise RemoteProtocolError(error.reason, field=name) from None
        self._key_owner[message.c_public] = label
        self._key_owner[message.s_public] = label

    def _check_advertise_signature(self, label: int, message: SaAdvertise) -> None:
        """Active mode: σ_u must verify under u's identity key on (c_u, s_u, run, session,
        round, label) (Bonawitz Fig. 4, round 0), so no one else can advertise for u."""
        if message.signature is None:
            raise RemoteProtocolError(
                "missing: active mode needs the keys signed with the identity key",
                field="signature",
            )
        transcript = signing.advertise_transcript(
            message.c_public,
            message.s_public,
            run=self.run,
            session=self.session,
            round=self.round,
            label=label,
        )
        self._verify(label, transcript, message.signature, "the advertised keys")

    def _check_consistency(self, label: int, message: SaConsistency) -> None:
        """Active mode: σ'_u must verify under u's identity key on the U3 sent to u
        (Bonawitz Fig. 4, round 3)."""
        transcript = signing.consistency_transcript(
            self.u3, run=self.run, session=self.session, round=self.round
        )
        self._verify(label, transcript, message.signature, "the survivor set U3")

    def _verify(self, label: int, transcript: bytes, signature: bytes, what: str) -> None:
        try:
            crypto.verify(self._identity[self.device_of[label]], transcript, signature)
        except RemoteProtocolError as error:
            raise RemoteProtocolError(
                f"not a valid signature of {what} under the identity key of "
                f"{self.device_of[label]} ({error.reason})",
                field="signature",
            ) from None

    def _check_shares(self, label: int, message: SaShares) -> None:
        recipients = [entry.peer for entry in message.shares]
        offered = self._offered[label]
        if len(set(recipients)) != len(recipients) or set(recipients) != offered:
            raise RemoteProtocolError(
                f"shares for {sorted(recipients)}, expected exactly one for each of "
                f"{sorted(offered)}",
                field="shares",
            )

    def _check_unmask(self, label: int, message: SaUnmask) -> dict[tuple[int, str], int]:
        survivors, dropped = self._requests[label]
        kinds: dict[int, str] = {}
        revealed: dict[tuple[int, str], int] = {}
        for index, entry in enumerate(message.shares):
            where = f"shares[{index}]"
            if entry.node in kinds:
                if kinds[entry.node] != entry.kind:
                    raise RemoteProtocolError(
                        f"lists node {entry.node} both as alive (b-share) and as dropped "
                        "(s-share): the response is refused as a whole",
                        field=where,
                    )
                raise RemoteProtocolError(f"node {entry.node} listed twice", field=where)
            kinds[entry.node] = entry.kind
            wanted = "b" if entry.node in survivors else "s" if entry.node in dropped else None
            if wanted is None:
                raise RemoteProtocolError(f"node {entry.node} was not asked about", field=where)
            if entry.kind != wanted:
                raise RemoteProtocolError(
                    f"a {entry.kind}-share of node {entry.node}, which was asked for its "
                    f"{wanted}-share",
                    field=where,
                )
            revealed[(entry.node, entry.kind)] = shamir.share_from_bytes(entry.share)
        missing = (survivors | dropped) - set(kinds)
        if missing:
            raise RemoteProtocolError(f"no share for nodes {sorted(missing)}", field="shares")
        return revealed

    def _on_device_abort(self, label: int, message: SaAbort, now: float) -> None:
        if label in self._gone:
            self.duplicates += 1
            return
        self._gone[label] = message.reason
        if self._stage is not None:
            self._stage.waiting.discard(label)
        self._emit(DeviceAborted(self.device_of[label], self.state, message.reason))
        if self._stage_complete():
            self._close_stage(now)

    # ---- stage progression --------------------------------------------------------------

    def silence_limit(self) -> float:
        """The longest a device may hear nothing from this server between two stages."""
        return self.patience * self.stage_timeout

    def _extend(self, now: float) -> None:
        """A stage still receiving replies stays open at least ``stage_timeout`` after the
        latest one, up to ``patience`` x ``stage_timeout`` after it opened: a busy machine
        slows the session down instead of turning slow live devices into dropouts."""
        stage = self._stage
        assert stage is not None
        stage.deadline = min(stage.latest, max(stage.deadline, now + self.stage_timeout))

    def _stage_complete(self) -> bool:
        """Every device expected in the open stage replied or aborted."""
        stage = self._stage
        return stage is not None and not stage.waiting

    def _open(
        self, name: str, expected: frozenset[int], now: float, dropped: Iterable[int]
    ) -> None:
        self.state = name
        self._stage = _Stage(
            name,
            expected,
            now + self.stage_timeout,
            now + self.patience * self.stage_timeout,
            waiting=set(expected.difference(self._gone)),
        )
        self._emit(
            StageOpened(
                name,
                self._names(expected),
                self._names(dropped),
                self._stage.deadline,
            )
        )

    def _close_stage(self, now: float) -> None:
        assert self._stage is not None
        name = self._stage.name
        replied = self._counted_replies()
        missing = self._stage.expected - replied
        if not self._enough(name, replied, len(self._stage.expected)):
            return
        for label in sorted(missing - set(self._gone)):
            self._exclude(
                label,
                name,
                f"no {REPLY_OF_STAGE[name].__struct_config__.tag} before the {name} deadline",
            )
        if name == "advertise":
            self._close_advertise(replied, now)
        elif name == "share":
            self._close_share(replied, now)
        elif name == "masked":
            self._close_masked(replied, now)
        elif name == "consistency":
            self._close_consistency(replied, now)
        else:
            self._close_unmask(replied)

    def _counted_replies(self) -> frozenset[int]:
        """The open stage's accepted replies that count when it closes. A masked input or
        an unmask answer, once accepted, counts whatever its device does next: the input
        is in U3 (Bonawitz et al.: U3 is who sent a masked input; a survivor's self-mask
        seed is rebuilt from its holders' shares), the shares are revealed. Before, a
        device that sent its masked input and then its last will (a ``[secure_sum]``
        dropout at ``after_masked``) was summed or not depending on whether the will came
        before the stage closed, i.e. on message order. In the other stages a device that
        replied and then aborted cannot go on, so it does not count."""
        stage = self._stage
        assert stage is not None
        if stage.name in ("masked", "unmask"):
            return frozenset(stage.replies)
        return frozenset(stage.replies) - set(self._gone)

    def _enough(self, stage: str, members: Collection[int], out_of: int) -> bool:
        if len(members) >= self.threshold:
            return self._enough_inputs(stage, members, out_of)
        self._abort(
            stage,
            f"{stage} stage: only {len(members)} of {out_of} devices "
            f"{_REPLY_VERB[stage]} (threshold {self.threshold}){self._aborts_note()}"
            f"{self._deadline_note()}",
        )
        return False

    def _deadline_note(self) -> str:
        """Why the stage closed short, when devices sent no accepted reply and did not
        abort: its deadline passed. Live devices on a machine too busy for the deadlines look the
        same as dropouts; the note says which setting gives them more time."""
        stage = self._stage
        if stage is None or not stage.waiting:
            return ""
        return (
            f"; {len(stage.waiting)} sent no accepted reply before the deadline "
            f"(stage_timeout {self.stage_timeout:g} s after the latest reply, at most "
            f"{self.silence_limit():g} s after the stage opened): if the devices are alive "
            "but the machine is busy, raise stage_timeout"
        )

    def _aborts_note(self) -> str:
        """ "; 4 devices aborted (d0: <its reason>)" when devices sent ``SaAbort``: why they
        left (a refused setup, a last will) was only in ``summary()["device_aborts"]``."""
        if not self._gone:
            return ""
        first = min(self._gone)
        return (
            f"; {len(self._gone)} device{'s' if len(self._gone) > 1 else ''} aborted "
            f"({self.device_of[first]}: "
            f"{self._gone[first][:200]})"
        )

    def _enough_inputs(self, stage: str, members: Collection[int], out_of: int) -> bool:
        """``min_inputs``: until the masked inputs are in, the devices still present bound
        the inputs the sum could cover; a session that can no longer reach
        ``min_inputs`` aborts before anything is unmasked (the consistency and unmask
        stages answer for inputs already fixed: the threshold alone applies there)."""
        if stage in ("consistency", "unmask") or len(members) >= self.min_inputs:
            return True
        self._abort(
            stage,
            f"{stage} stage: only {len(members)} of {out_of} devices "
            f"{_REPLY_VERB[stage]}; the sum needs at least {self.min_inputs} inputs "
            f"(min_inputs){self._deadline_note()}",
        )
        return False

    def _recoverable_core(self, members: frozenset[int], stage: str) -> frozenset[int] | None:
        """Exclude, until none is left, devices with fewer than t share holders among the
        remaining members (their neighbours there, plus themselves); None if the session
        aborted because fewer than t devices remain."""
        core = set(members)
        while True:
            weak = {u for u in core if len(self.neighbours[u] & core) + 1 < self.threshold}
            if not weak:
                break
            core -= weak
            for label in sorted(weak):
                self._exclude(
                    label,
                    stage,
                    f"fewer than {self.threshold - 1} of your neighbours are still in the "
                    "session: your input could not be unmasked",
                )
        if len(core) < self.threshold:
            self._abort(
                stage,
                f"{stage} stage: only {len(core)} of {len(members)} devices keep at least "
                f"{self.threshold} share holders (threshold {self.threshold}, SecAgg+ graph)",
            )
            return None
        if not self._enough_inputs(stage, core, len(members)):
            return None
        return frozenset(core)

    def _close_advertise(self, replied: frozenset[int], now: float) -> None:
        core = self._recoverable_core(replied, "advertise")
        if core is None:
            return
        self.u1 = core
        for u in sorted(core):
            offered = self.neighbours[u] & core
            self._offered[u] = offered
            keys = [self._peer_keys(v) for v in sorted(offered)]
            self._to_device(
                u, SaNeighbours(**self._envelope(), threshold=self.threshold, neighbours=keys)
            )
        self._open("share", core, now, dropped=self._left(core))

    def _close_share(self, replied: frozenset[int], now: float) -> None:
        core = self._recoverable_core(replied, "share")
        if core is None:
            return
        self.u2 = core
        inboxes = self._sealed_for(core)
        for u in sorted(core):
            sealed = inboxes[u]
            senders = [entry.peer for entry in sealed]
            self._to_device(u, SaDeliver(**self._envelope(), shares=sealed, completed=senders))
        self._open("masked", core, now, dropped=self._left(core))

    def _sealed_for(self, core: frozenset[int]) -> dict[int, list[SealedShare]]:
        """For each u in ``core``, the ciphertexts addressed to u by its neighbours in
        ``core`` (U2 ∩ N(u)), ordered by sender: one pass over every ``SaShares`` instead
        of a search of the sender's list per (sender, recipient) pair."""
        inboxes: dict[int, list[SealedShare]] = {u: [] for u in core}
        for v in sorted(core):
            shares = self._replies["share"][v]
            assert isinstance(shares, SaShares)
            for entry in shares.shares:  # exactly one per u in N(v) ∩ U1 (_check_shares)
                inbox = inboxes.get(entry.peer)
                if inbox is not None:
                    inbox.append(SealedShare(peer=v, ciphertext=entry.ciphertext))
        return inboxes

    def _close_masked(self, replied: frozenset[int], now: float) -> None:
        survivors, dropped = replied, self.u2 - replied
        # the survivors that already left (their last will came after their masked input)
        # answer no unmask request: checked now, before any holder reveals a share
        responders = survivors - set(self._gone)
        problem = self._unmask_infeasible(survivors, dropped, responders) or self._split(survivors)
        if problem:
            self._abort("masked", f"masked stage: cannot unmask: {problem}")
            return
        self.u3 = survivors
        if self.active:
            self._request_consistency(now)
        else:
            self._request_unmask(survivors, now)

    def _request_consistency(self, now: float) -> None:
        """Active mode, Bonawitz Fig. 4 round 3 (ConsistencyCheck): every survivor is sent
        the whole U3 to sign."""
        request = SaConsistencyRequest(**self._envelope(), survivors=sorted(self.u3))
        for u in sorted(self.u3):
            self._to_device(u, request)
        self._open("consistency", self.u3, now, dropped=self._left(self.u3))

    def _close_consistency(self, replied: frozenset[int], now: float) -> None:
        """At least t survivors signed U3 (``_close_stage`` checked): the signers can still
        reveal t shares of every secret needed, or the session aborts."""
        problem = self._unmask_infeasible(self.u3, self.u2 - self.u3, replied)
        if problem:
            self._abort("consistency", f"consistency stage: cannot unmask: {problem}")
            return
        self.signers = replied
        self._request_unmask(replied, now)

    def _request_unmask(self, recipients: frozenset[int], now: float) -> None:
        """Bonawitz Fig. 4 round 4 (Unmasking): ask each of ``recipients`` (U3, or the
        signers of U3 in active mode) for one share per node it holds shares of."""
        survivors, dropped = self.u3, self.u2 - self.u3
        consistency = self._consistency_signatures() if self.active else None
        for u in sorted(recipients):
            holders = (self.neighbours[u] & self.u2) | {u}
            asked_alive = holders & survivors
            asked_dropped = self.neighbours[u] & dropped
            self._requests[u] = (asked_alive, asked_dropped)
            self._to_device(
                u,
                SaUnmaskRequest(
                    **self._envelope(),
                    survivors=sorted(asked_alive),
                    dropped=sorted(asked_dropped),
                    survivor_total=len(survivors),
                    consistency=consistency,
                ),
            )
        self._open("unmask", recipients, now, dropped=self._left(recipients))

    def _consistency_signatures(self) -> list[SignedSurvivors]:
        replies = self._replies["consistency"]
        signed = []
        for label in sorted(self.signers):
            reply = replies[label]
            assert isinstance(reply, SaConsistency)
            signed.append(SignedSurvivors(label=label, signature=reply.signature))
        return signed

    def _unmask_infeasible(
        self, survivors: frozenset[int], dropped: frozenset[int], responders: frozenset[int]
    ) -> str:
        """Why some secret needed to unmask could not get t shares from ``responders``
        ("" when every one can)."""
        t = self.threshold
        for u in sorted(survivors):
            holders = ((self.neighbours[u] & self.u2) | {u}) & responders
            if len(holders) < t:
                return (
                    f"only {len(holders)} holders of the self-mask seed of "
                    f"{self.device_of[u]} are available (threshold {t})"
                )
        for v in sorted(dropped):
            holders = self.neighbours[v] & self.u2 & responders
            if len(holders) < t:
                return (
                    f"only {len(holders)} holders of the mask key of dropped device "
                    f"{self.device_of[v]} are available (threshold {t})"
                )
        return ""

    def _split(self, survivors: frozenset[int]) -> str:
        """Why the survivors' graph cannot be unmasked because it is in several parts (""
        when it is one): the masks left after unmasking cancel within each part, so each
        part's own sum would be revealed, not only the total (SecAgg+ with a small degree
        and dropouts that cut the graph; the full graph never splits)."""
        parts = graphs.components(self.neighbours, survivors)
        if len(parts) <= 1:
            return ""
        sizes = ", ".join(str(len(part)) for part in parts[:5])
        sizes += ", ..." if len(parts) > 5 else ""
        return (
            f"the survivors' graph splits into {len(parts)} parts (sizes {sizes}): unmasking "
            "would reveal each part's own sum, not only the total (raise the degree, "
            "neighbors, or use the full graph)"
        )

    def _close_unmask(self, responders: frozenset[int]) -> None:
        self.u4 = responders
        dropped = self.u2 - self.u3
        problem = self._unmask_infeasible(self.u3, dropped, responders)
        if problem:
            self._abort("unmask", f"unmask stage: {problem}")
            return
        try:
            revealed = self._revealed_shares()
            seeds = {u: self._reconstruct(revealed, u, "b") for u in sorted(self.u3)}
            mask_keys = {v: self._reconstruct_mask_key(revealed, v) for v in sorted(dropped)}
            encoded = self._unmasked_total(seeds, mask_keys)
            total = self.fixed_point.decode_sum(encoded, len(self.u3))
        except ProtocolError as error:
            self._abort("unmask", f"unmask stage: {error}")
            return
        self.state = "done"
        self._stage = None
        self._emit(
            SumReady(
                total=total,
                survivors=self._names(self.u3),
                dropped=self._names(set(self.device_of) - self.u3),
                encoded_total=encoded,
            )
        )

    # ---- unmasking ----------------------------------------------------------------------

    def _revealed_shares(self) -> dict[tuple[int, str], dict[int, int]]:
        """(node, kind) -> {responder: share} over the responders U4: one pass over the
        responses, instead of a scan of every response per secret (O(n^2) in all)."""
        index: dict[tuple[int, str], dict[int, int]] = {}
        for responder in sorted(self.u4):
            for key, share in self._revealed[responder].items():
                index.setdefault(key, {})[responder] = share
        return index

    def _reconstruct(
        self, revealed: dict[tuple[int, str], dict[int, int]], node: int, kind: str
    ) -> bytes:
        shares = revealed.get((node, kind), {})
        return shamir.combine(shares, self.threshold, length=crypto.KEY_BYTES)

    def _reconstruct_mask_key(
        self, revealed: dict[tuple[int, str], dict[int, int]], v: int
    ) -> X25519PrivateKey:
        """The dropped device v's mask key s_v, parsed once (it agrees with every surviving
        neighbour of v) and checked against v's advertised s_public."""
        key = crypto.x25519_private_key(self._reconstruct(revealed, v, "s"))
        if crypto.public_from_private(key) != self._advertised(v).s_public:
            raise RemoteProtocolError(
                f"the reconstructed mask key of {self.device_of[v]} does not match its "
                "advertised s_public (a wrong share)",
                field="shares",
            )
        return key

    def _unmasked_total(
        self, seeds: dict[int, bytes], mask_keys: dict[int, X25519PrivateKey]
    ) -> np.ndarray:
        """Σ_{u∈U3} y_u − PRG(b_u), minus every pairwise mask a survivor shares with a
        dropped device; the masks between two survivors cancel by themselves."""
        bits = self.bits
        total = np.zeros(self.dim, dtype=np.uint64)  # summed into in place, mod 2^64
        for u, seed in seeds.items():
            masked = self._replies["masked"][u]
            assert isinstance(masked, SaMasked)
            np.add(total, unpack_vector(masked.masked, self.dim, bits), out=total)
            np.subtract(total, self_mask(seed, self.dim, bits), out=total)
        for v, private in mask_keys.items():
            for u in sorted(self.neighbours[v] & self.u3):
                s_public = self._advertised(u).s_public
                mask = pairwise_mask(
                    crypto.agree(private, s_public),
                    run=self.run,
                    session=self.session,
                    round=self.round,
                    u=u,
                    v=v,
                    dim=self.dim,
                    bits=bits,
                )
                add_pairwise_into(total, mask, u=v, v=u)  # −sign(u, v)·mask
        return low_bits(total, bits)

    # ---- abort and exclusion ------------------------------------------------------------

    def _abort(self, stage: str, reason: str) -> None:
        open_stage = self._stage
        if open_stage is None:
            dropped: tuple[str, ...] = ()
        else:
            present = set(open_stage.replies) - set(self._gone)
            dropped = self._names(set(self.device_of) - present)
        self.state = "aborted"
        self.abort_stage = stage
        self.abort_reason = reason
        self._stage = None
        self._revealed = {}
        for label in sorted(self.device_of):
            self._to_device(label, SaAbort(**self._envelope(), stage=stage, reason=reason[:500]))
        self._emit(Aborted(stage, reason, dropped))

    def _exclude(self, label: int, stage: str, reason: str) -> None:
        self._to_device(
            label,
            SaAbort(**self._envelope(), stage=stage, excluded=True, reason=reason[:500]),
        )

    # ---- helpers ------------------------------------------------------------------------

    def _send(self, topic: str, message: Message) -> None:
        self.messages_out[message.type_name()] += 1
        super()._send(topic, message)

    def _to_device(self, label: int, message: Message) -> None:
        self._send(topics.inbox(self.run, self.device_of[label], topics.COLLECTOR_ID), message)

    def _envelope(self) -> dict:
        return {
            "run": self.run,
            "sender": topics.COLLECTOR_ID,
            "session": self.session,
            "round": self.round,
        }

    def _advertised(self, label: int) -> SaAdvertise:
        message = self._replies["advertise"][label]
        assert isinstance(message, SaAdvertise)
        return message

    def _peer_keys(self, label: int) -> PeerKeys:
        advertised = self._advertised(label)
        return PeerKeys(
            label=label,
            c_public=advertised.c_public,
            s_public=advertised.s_public,
            signature=advertised.signature if self.active else None,
        )

    def _names(self, labels: Iterable[int]) -> tuple[str, ...]:
        return tuple(sorted(self.device_of[label] for label in labels))

    def _left(self, members: frozenset[int]) -> frozenset[int]:
        return frozenset(self.device_of) - members

    def summary(self) -> dict:
        """Counters for results.json and the bench (per-stage message counts).

        ``advertised``, ``shared``, ``masked``, ``unmasked`` (and ``signed`` in active
        mode): the devices whose reply of that stage the server accepted, whether or not
        the session went on: in a session that completes, ``masked`` and ``unmasked`` are
        U3 and U4 (a device excluded after advertising or sharing for too few live
        holders, or that aborted after replying, is counted in its stage's figure and not
        in the next); in the stage whose close aborted the session, what arrived.
        ``abort_stage`` and ``abort_reason`` say where and why it aborted ("" when it did
        not). (Held-out QA: ``masked`` read 0, the size of a U3 never formed, beside
        the reason of a masked-stage abort after masked inputs had arrived.)"""
        replied = {stage: len(self._replies[stage]) for stage in self.stages}
        return {
            "session": self.session,
            "round": self.round,
            "state": self.state,
            "graph": self.graph_kind,
            "degree": max(len(vs) for vs in self.neighbours.values()),
            "threshold": self.threshold,
            "min_inputs": self.min_inputs,
            "devices": self.n,
            "advertised": replied["advertise"],
            "shared": replied["share"],
            "masked": replied["masked"],
            "unmasked": replied["unmask"],
            "messages_in": dict(self.messages_in),
            "messages_out": dict(self.messages_out),
            "duplicates": self.duplicates,
            "late": self.late,
            "rejected": self.rejected,
            "rejections_by_field": dict(self.rejections_by_field),
            "device_aborts": {self.device_of[u]: r for u, r in self._gone.items()},
            "abort_stage": self.abort_stage,
            "abort_reason": self.abort_reason,
        } | self._active_summary(replied)

    def _active_summary(self, replied: dict[str, int]) -> dict:
        """Active mode only (the default summary keeps its keys)."""
        return {"active": True, "signed": replied["consistency"]} if self.active else {}


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_real(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)
