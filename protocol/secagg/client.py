"""Secure aggregation, device side: one ``SecAggClient`` per device and session.

Theory of operation (Bonawitz et al., CCS 2017, §4, Fig. 4, honest-but-curious server;
Bell et al., CCS 2020, SecAgg+ when the neighbourhood N(u) is a sparse Harary graph).
Device u (label u in 1..n) holds a real vector x_u and answers the collector's stages:

0. ``SaSetup`` -> AdvertiseKeys. Check the parameters (the vector length, a fixed-point
   encoding whose sum over ``participants`` devices cannot wrap mod 2^bits), draw two fresh
   X25519 key pairs, c_u (encrypts the shares u sends) and s_u (agrees the pairwise masks),
   and send ``SaAdvertise(c_u^pk, s_u^pk)``.
1. ``SaNeighbours`` (N(u) ∩ U1 with their keys) -> ShareKeys. Draw a fresh self-mask seed
   b_u (32 bytes, new every round), Shamir-split b_u and s_u's private key t-of-(|N|+1)
   over the abscissae N(u) ∪ {u}: u keeps its own share of both, which makes the full graph
   exactly Bonawitz's t-out-of-U (a survivor's own b-share counts towards t). Each
   neighbour v gets ``u||v||b_share||s_share`` under AES-GCM with the key
   HKDF(X25519(c_u, c_v), "enc", run, session, round, {u, v}); all ciphertexts go in one
   ``SaShares``.
2. ``SaDeliver`` (the ciphertexts addressed to u, and U2 ∩ N(u)) -> MaskedInput. Decrypt
   and check every ciphertext (sender and recipient inside the plaintext must match), then
   send y_u = encode(x_u) + PRG(b_u) + Σ_{v ∈ U2 ∩ N(u)} sign(u, v)·PRG(k_uv) mod 2^bits
   with k_uv = HKDF(X25519(s_u, s_v), "mask", run, session, round, {u, v}) and
   sign(u, v) = +1 if u > v else -1, so each pair's masks cancel in the sum.
4. ``SaUnmaskRequest`` (survivors U3 and dropped U2 \\ U3 among N(u) ∪ {u}) -> Unmask.
   For each node send EITHER its b-share (it survived) OR its s-share (it dropped), never
   both, and answer once only: a server that learnt both shares of u from t devices
   would unmask x_u. A request that puts a node in both lists, lists u itself as dropped,
   asks about nodes u holds no shares of, or claims fewer than t survivors is refused.

Active-adversary mode (``active=True``, off by default; Bonawitz et al. §4, Fig. 4, the
malicious-server variant; see ``protocol.secagg.active``). The device holds a long-term
Ed25519 ``signing_key`` and knows every participant's public identity key
(``identity_keys``, exactly the session's participants: label = 1 + the id's sorted
position, the server's labelling rule). Then:

0. ``SaAdvertise`` carries σ_u, u's signature of (c_u^pk, s_u^pk, run, session, round, u).
1. Before sharing, every neighbour's ``PeerKeys.signature`` must verify under that
   neighbour's identity key; a missing or bad one (a substituted key: the server in the
   middle) is refused, and no share leaves the device.
3. ``SaConsistencyRequest`` (U3) -> ConsistencyCheck: check U3 (u is in it, at least t
   members, its neighbours in U3 completed ShareKeys), sign (run, session, round, U3) and
   send ``SaConsistency``; an honest device signs one U3 per round.
4. ``SaUnmaskRequest`` must carry ``consistency``: distinct signers from U3, every
   signature valid on the very U3 this device signed, at least t of them; and its
   survivors/dropped must be exactly U3 / the rest among the nodes u holds shares of.
   Otherwise the device refuses without revealing any share.

Error policy (DESIGN.md, "sans-I/O"): a malformed or inconsistent instruction from the
collector is terminal: the client queues ``SaAbort`` (so the collector learns why),
emits ``SessionAborted(by_collector=False)``, moves to ``error`` and raises
``RemoteProtocolError``; the pump must still publish the outbox. Messages from anyone but
the collector, or for another session, are refused without a state change. An identical
redelivery (MQTT QoS 1 may deliver twice) of a message already handled is ignored.

The helpers ``self_mask``, ``pairwise_mask``, ``pack_vector`` and ``unpack_vector`` are
also what the server uses to remove masks, so both sides compute them identically.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from ldpfleet.protocol import topics
from ldpfleet.protocol.errors import LocalProtocolError, ParameterError, RemoteProtocolError
from ldpfleet.protocol.events import Event, Machine
from ldpfleet.protocol.messages import Message
from ldpfleet.protocol.secagg import active as signing
from ldpfleet.protocol.secagg import crypto, shamir
from ldpfleet.protocol.secagg.encoding import FixedPoint, add_mod, low_bits, sub_mod
from ldpfleet.protocol.secagg.messages import (
    PeerKeys,
    RevealedShare,
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
LABEL_BYTES = 4
SEED_BYTES = 32
PLAINTEXT_BYTES = 2 * LABEL_BYTES + 2 * shamir.SHARE_BYTES


# Shared with the server ---------------------------------------------------------------


def self_mask(seed: bytes, dim: int, bits: int) -> np.ndarray:
    """PRG(b_u): the self mask, keyed by the whole 32-byte seed."""
    return crypto.prg_mask(seed, dim, bits)


def pairwise_mask(
    shared: bytes, *, run: str, session: str, round: int, u: int, v: int, dim: int, bits: int
) -> np.ndarray:
    """PRG(HKDF(shared, "mask", run, session, round, {u, v})): the same for u and v."""
    key = crypto.derive_key(shared, purpose="mask", run=run, session=session, round=round, a=u, b=v)
    return crypto.prg_mask(key, dim, bits)


def apply_pairwise(total: np.ndarray, mask: np.ndarray, *, u: int, v: int, bits: int) -> np.ndarray:
    """``total + sign(u, v) * mask`` mod 2^bits, sign = +1 if u > v else -1."""
    return add_mod(total, mask, bits) if u > v else sub_mod(total, mask, bits)


def add_pairwise_into(total: np.ndarray, mask: np.ndarray, *, u: int, v: int) -> None:
    """``total += sign(u, v) * mask`` mod 2^64 in place (``apply_pairwise`` without a new
    array per mask): ``total`` is a uint64 array its caller owns; a 32-bit sum is reduced
    once at the end (``encoding.low_bits``), which gives what reducing after every step
    gives."""
    (np.add if u > v else np.subtract)(total, mask, out=total)


def pack_vector(values: np.ndarray, bits: int) -> bytes:
    """Words mod 2^bits as packed little-endian bytes (``bits / 8`` bytes each)."""
    return np.asarray(values, dtype=np.uint64).astype(_wire_dtype(bits)).tobytes()


def unpack_vector(data: bytes, dim: int, bits: int) -> np.ndarray:
    """Inverse of ``pack_vector`` as uint64; ``RemoteProtocolError`` on a wrong length."""
    width = bits // 8
    if len(data) != dim * width:
        raise RemoteProtocolError(
            f"{len(data)} bytes is not {dim} words of {width} bytes", field="masked"
        )
    return np.frombuffer(data, dtype=_wire_dtype(bits)).astype(np.uint64)


def _wire_dtype(bits: int) -> np.dtype:
    return np.dtype("<u8") if bits == 64 else np.dtype("<u4")


def share_associated_data(run: str, session: str, round: int, sender: int, recipient: int) -> bytes:
    """AES-GCM associated data binding a share ciphertext to its session, round and pair."""
    return f"ldpfleet/secagg/v1/share/{run}/{session}/{round}/{sender}/{recipient}".encode()


# Events -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StageAnswered(Event):
    """The device sent its message of ``stage`` ("advertise", "share", "masked",
    "consistency" in active mode, "unmask"); after "unmask" the client is done."""

    stage: str


@dataclass(frozen=True, slots=True)
class SessionAborted(Event):
    """The session ended for this device without it completing: the collector aborted it
    (``by_collector``; ``excluded`` when only this device was dropped from it) or the
    device refused an instruction (``by_collector=False``)."""

    reason: str
    by_collector: bool
    excluded: bool = False


# The machine --------------------------------------------------------------------------


@dataclass
class _Held:
    """The shares u holds of one node's secrets (its own or a neighbour's)."""

    b_share: int
    s_share: int


class SecAggClient(Machine):
    """Device side of one secure-aggregation session (see the module docstring)."""

    def __init__(
        self,
        run: str,
        session: str,
        device: str,
        x: np.ndarray | Iterable[float],
        *,
        random_bytes: RandomBytes = os.urandom,
        active: bool = False,
        signing_key: bytes | None = None,
        identity_keys: Mapping[str, bytes] | None = None,
    ) -> None:
        super().__init__()
        self.run = topics.check_ident(run, "run")
        self.session = topics.check_ident(session, "session")
        self.device = topics.check_ident(device, "device")
        values = np.asarray(x, dtype=float)
        if values.ndim != 1 or values.size == 0:
            raise ParameterError(
                "must be a non-empty 1-D vector",
                field="x",
                limit="a non-empty 1-D vector (value is the shape)",
                value=values.shape,
            )
        if not np.isfinite(values).all():  # the method: a third of np.all's cost
            raise ParameterError(
                "must be finite (a sensor fault is not data)",
                field="x",
                limit="finite (value is the first non-finite entry)",
                value=float(values[~np.isfinite(values)][0]),
            )
        self._x = values
        self._random_bytes = random_bytes
        signing.check_mode(active, signing_key=signing_key, identity_keys=identity_keys)
        self.active = active
        self._signing_key = self._check_signing_key(signing_key, identity_keys) if active else b""
        self._roster: tuple[str, ...] = tuple(sorted(identity_keys or ()))
        self._identity = dict(identity_keys or {})
        self._u3: frozenset[int] = frozenset()  # active mode: the U3 this device signed
        # idle -> advertised -> shared -> masked [-> signed] -> done | aborted | error
        self.state = "idle"
        self.setup: SaSetup | None = None
        self._fixed_point: FixedPoint | None = None
        self._c: crypto.KeyPair | None = None
        self._s: crypto.KeyPair | None = None
        self._seed: bytes | None = None
        # v -> HKDF(X25519(c_u, c_v), "enc", ...): sealing to v (ShareKeys) and opening v's
        # ciphertext (MaskedInput) use the same key; deriving it once instead of twice saved
        # one exchange (~32 µs) per neighbour. Held exactly as long as the private keys.
        self._enc_keys: dict[int, bytes] = {}
        self._neighbours: dict[int, PeerKeys] = {}
        self._completed: frozenset[int] = frozenset()
        self._held: dict[int, _Held] = {}
        self._handled: dict[str, Message] = {}
        self.abort_reason = ""

    def _check_signing_key(
        self, signing_key: bytes | None, identity_keys: Mapping[str, bytes] | None
    ) -> bytes:
        """Active mode: a 32-byte Ed25519 private key whose public half is this device's
        entry in ``identity_keys`` (so neighbours will accept its signatures)."""
        roster = signing.check_identity_keys(identity_keys)
        for device in roster:
            topics.check_ident(device, "identity_keys")
        if not isinstance(signing_key, bytes) or len(signing_key) != crypto.KEY_BYTES:
            raise ParameterError(
                f"active mode needs this device's {crypto.KEY_BYTES}-byte Ed25519 private key",
                field="signing_key",
                limit=f"a {crypto.KEY_BYTES}-byte Ed25519 private key (value: its length or type)",
                value=len(signing_key)
                if isinstance(signing_key, bytes)
                else type(signing_key).__name__,
            )
        if roster.get(self.device) != crypto.signing_public_key(signing_key):
            raise ParameterError(
                f"has no entry for {self.device} matching signing_key",
                field="identity_keys",
                limit=f"an entry for {self.device} matching signing_key",
                value=roster.get(self.device),
            )
        return signing_key

    # ---- properties ---------------------------------------------------------------------

    @property
    def finished(self) -> bool:
        """No further input will change anything."""
        return self.state in ("done", "aborted", "error")

    @property
    def label(self) -> int | None:
        """This device's label (1..n) once the collector assigned it."""
        return self.setup.label if self.setup is not None else None

    # ---- input --------------------------------------------------------------------------

    def receive(self, topic: topics.Topic, message: Message, now: float) -> None:
        """Consume one inbox message from the collector."""
        self._check_origin(topic, message)
        previous = self._handled.get(message.type_name())
        if previous is not None and previous == message:
            return  # an identical redelivery (QoS 1)
        if self.finished:
            if self.state == "done" and isinstance(message, SaUnmaskRequest):
                raise RemoteProtocolError(
                    "a second unmask request: this device answers once per round (it may "
                    "never reveal both shares of a node)",
                    field="type",
                )
            return
        if isinstance(message, SaAbort):
            self._on_abort(message)
            return
        try:
            self._dispatch(message)
        except RemoteProtocolError as error:
            self._refuse(error)
            raise
        self._handled[message.type_name()] = message

    def _check_origin(self, topic: topics.Topic, message: Message) -> None:
        if topic.family != "in" or topic.recipient != self.device:
            raise RemoteProtocolError(
                f"{topic.text[:120]!r} is not this device's inbox", field="topic"
            )
        if topic.sender != topics.COLLECTOR_ID or message.sender != topics.COLLECTOR_ID:
            raise RemoteProtocolError(
                f"{message.type_name()} from {message.sender!r}: devices take secure-"
                "aggregation instructions only from the collector",
                field="sender",
            )
        if message.run != self.run:
            raise RemoteProtocolError(f"run {message.run!r} is not {self.run!r}", field="run")
        if getattr(message, "session", None) != self.session:
            raise RemoteProtocolError(
                f"a {message.type_name()} of session {getattr(message, 'session', None)!r}, "
                f"this client serves {self.session!r}",
                field="session",
            )

    def _dispatch(self, message: Message) -> None:
        if self.setup is not None and message.round != self.setup.round:  # type: ignore[attr-defined]
            raise RemoteProtocolError(
                f"round {message.round} is not {self.setup.round}",  # type: ignore[attr-defined]
                field="round",
            )
        expected = {
            "idle": SaSetup,
            "advertised": SaNeighbours,
            "shared": SaDeliver,
            "masked": SaConsistencyRequest if self.active else SaUnmaskRequest,
            "signed": SaUnmaskRequest,
        }[self.state]
        if not isinstance(message, expected):
            raise RemoteProtocolError(
                f"a {message.type_name()} in state {self.state} (expected "
                f"{expected.__struct_config__.tag})",
                field="type",
            )
        if isinstance(message, SaSetup):
            self._on_setup(message)
        elif isinstance(message, SaNeighbours):
            self._on_neighbours(message)
        elif isinstance(message, SaDeliver):
            self._on_deliver(message)
        elif isinstance(message, SaConsistencyRequest):
            self._on_consistency_request(message)
        elif isinstance(message, SaUnmaskRequest):
            self._on_unmask_request(message)

    # ---- stage 0: AdvertiseKeys -----------------------------------------------------------

    def _on_setup(self, setup: SaSetup) -> None:
        if not 1 <= setup.label <= setup.participants:
            raise RemoteProtocolError(
                f"label {setup.label} outside 1..{setup.participants}", field="label"
            )
        if setup.threshold > setup.participants:
            raise RemoteProtocolError(
                f"threshold {setup.threshold} exceeds the {setup.participants} participants",
                field="threshold",
            )
        if setup.dim != self._x.size:
            raise RemoteProtocolError(
                f"the session sums {setup.dim} entries, this device's vector has {self._x.size}",
                field="dim",
            )
        try:
            fixed_point = FixedPoint(setup.clip_low, setup.clip_high, setup.scale, setup.bits)
            fixed_point.check_capacity(setup.participants)
        except ParameterError as error:
            raise RemoteProtocolError(error.reason, field=error.field) from None
        if self.active:
            self._check_roster(setup)
        self.setup = setup
        self._fixed_point = fixed_point
        self._c = crypto.generate_keypair(self._random_bytes)
        self._s = crypto.generate_keypair(self._random_bytes)
        self._reply(
            "advertise",
            SaAdvertise(
                **self._envelope(),
                c_public=self._c.public,
                s_public=self._s.public,
                signature=self._sign_advertisement() if self.active else None,
            ),
        )
        self.state = "advertised"

    def _check_roster(self, setup: SaSetup) -> None:
        """Active mode: the labels must be the roster's sorted order (the server's rule),
        else this device could not tell whose identity key signs a neighbour's keys."""
        if setup.participants != len(self._roster):
            raise RemoteProtocolError(
                f"{setup.participants} participants, the identity roster lists "
                f"{len(self._roster)} devices",
                field="participants",
            )
        if self._roster[setup.label - 1] != self.device:
            raise RemoteProtocolError(
                f"label {setup.label} is not this device's position in the sorted roster",
                field="label",
            )

    def _sign_advertisement(self) -> bytes:
        """σ_u = SIG.sign(d_u^SK, c_u^PK || s_u^PK || ...) (Bonawitz Fig. 4, round 0)."""
        setup, keys = self._setup(), self._keys()
        transcript = signing.advertise_transcript(
            keys.c.public,
            keys.s.public,
            run=self.run,
            session=self.session,
            round=setup.round,
            label=setup.label,
        )
        return crypto.sign(self._signing_key, transcript)

    # ---- stage 1: ShareKeys ---------------------------------------------------------------

    def _on_neighbours(self, message: SaNeighbours) -> None:
        setup = self._setup()
        if message.threshold != setup.threshold:
            raise RemoteProtocolError(
                f"threshold {message.threshold}, the setup said {setup.threshold}",
                field="threshold",
            )
        neighbours = self._check_neighbour_keys(message.neighbours)
        if len(neighbours) + 1 < setup.threshold:
            raise RemoteProtocolError(
                f"{len(neighbours)} neighbours + this device cannot hold a "
                f"{setup.threshold}-of-n sharing",
                field="neighbours",
            )
        if 2 * setup.threshold <= len(neighbours) + 1:
            raise RemoteProtocolError(
                f"threshold {setup.threshold} is not above half of the {len(neighbours) + 1} "
                "share holders: disjoint holder groups could reveal both of a node's secrets",
                field="threshold",
            )
        self._neighbours = neighbours
        self._seed = self._random_bytes(SEED_BYTES)  # b_u: fresh every round
        abscissae = sorted([setup.label, *neighbours])
        b_shares = shamir.split(self._seed, abscissae, setup.threshold, self._random_bytes)
        s_shares = shamir.split(
            self._keys().s.private, abscissae, setup.threshold, self._random_bytes
        )
        self._held = {setup.label: _Held(b_shares[setup.label], s_shares[setup.label])}
        sealed = [
            SealedShare(peer=v, ciphertext=self._seal(v, b_shares[v], s_shares[v]))
            for v in sorted(neighbours)
        ]
        self._reply("share", SaShares(**self._envelope(), shares=sealed))
        self.state = "shared"

    def _check_neighbour_keys(self, entries: list[PeerKeys]) -> dict[int, PeerKeys]:
        setup = self._setup()
        c, s = self._keys()
        seen_keys = {c.public, s.public}
        neighbours: dict[int, PeerKeys] = {}
        for index, entry in enumerate(entries):
            where = f"neighbours[{index}]"
            if entry.label == setup.label or not 1 <= entry.label <= setup.participants:
                raise RemoteProtocolError(
                    f"label {entry.label} is this device or outside 1..{setup.participants}",
                    field=where,
                )
            if entry.label in neighbours:
                raise RemoteProtocolError(f"label {entry.label} listed twice", field=where)
            if (
                entry.c_public in seen_keys
                or entry.s_public in seen_keys
                or (entry.c_public == entry.s_public)
            ):
                raise RemoteProtocolError(
                    f"label {entry.label} reuses a public key seen in this session", field=where
                )
            if self.active:
                self._check_neighbour_signature(entry, where)
            seen_keys.update((entry.c_public, entry.s_public))
            neighbours[entry.label] = entry
        return neighbours

    def _check_neighbour_signature(self, entry: PeerKeys, where: str) -> None:
        """Active mode: v's keys must carry σ_v, valid under v's identity key (Bonawitz
        Fig. 4, round 1: "verify that σ_v is valid"); otherwise the server may have
        substituted keys of its own and would read the shares sent to "v"."""
        device = self._roster[entry.label - 1]
        if entry.signature is None:
            raise RemoteProtocolError(
                f"the keys of label {entry.label} ({device}) are not signed (active mode)",
                field=where,
            )
        transcript = signing.advertise_transcript(
            entry.c_public,
            entry.s_public,
            run=self.run,
            session=self.session,
            round=self._setup().round,
            label=entry.label,
        )
        try:
            crypto.verify(self._identity[device], transcript, entry.signature)
        except RemoteProtocolError as error:
            raise RemoteProtocolError(
                f"the keys of label {entry.label} ({device}) are not signed by its identity "
                f"key ({error.reason}): substituted keys?",
                field=where,
            ) from None

    def _seal(self, v: int, b_share: int, s_share: int) -> bytes:
        setup = self._setup()
        u = setup.label
        plaintext = (
            u.to_bytes(LABEL_BYTES, "big")
            + v.to_bytes(LABEL_BYTES, "big")
            + shamir.share_to_bytes(b_share)
            + shamir.share_to_bytes(s_share)
        )
        key = self._share_key(v)
        associated = share_associated_data(self.run, self.session, setup.round, u, v)
        return crypto.encrypt(key, plaintext, associated, self._random_bytes)

    def _share_key(self, v: int) -> bytes:
        """The share-encryption key of the pair {u, v}: derived once, then reused."""
        key = self._enc_keys.get(v)
        if key is None:
            setup = self._setup()
            shared = self._agree(self._keys().c.agreement_key(), self._neighbours[v].c_public, v)
            key = crypto.derive_key(
                shared,
                purpose="enc",
                run=self.run,
                session=self.session,
                round=setup.round,
                a=setup.label,
                b=v,
            )
            self._enc_keys[v] = key
        return key

    @staticmethod
    def _agree(private: X25519PrivateKey, public: bytes, v: int) -> bytes:
        try:
            return crypto.agree(private, public)
        except ParameterError as error:
            raise RemoteProtocolError(
                f"neighbour {v}'s public key: {error.reason}", field="neighbours"
            ) from None

    # ---- stage 2: MaskedInput -------------------------------------------------------------

    def _on_deliver(self, message: SaDeliver) -> None:
        setup = self._setup()
        completed = set(message.completed)
        if len(completed) != len(message.completed):
            raise RemoteProtocolError("a label listed twice", field="completed")
        strangers = completed - set(self._neighbours)
        if strangers:
            raise RemoteProtocolError(
                f"labels {sorted(strangers)} are not neighbours of this device", field="completed"
            )
        if len(completed) + 1 < setup.threshold:
            raise RemoteProtocolError(
                f"only {len(completed)} neighbours completed ShareKeys: with this device, "
                f"fewer than the threshold {setup.threshold} could unmask it",
                field="completed",
            )
        senders = [entry.peer for entry in message.shares]
        if sorted(senders) != sorted(completed):
            raise RemoteProtocolError(
                f"ciphertexts from {sorted(senders)}, expected one from each of "
                f"{sorted(completed)}",
                field="shares",
            )
        for entry in message.shares:
            self._held[entry.peer] = self._open(entry.peer, entry.ciphertext)
        self._completed = frozenset(completed)
        masked = self._masked_input()
        self._reply("masked", SaMasked(**self._envelope(), masked=pack_vector(masked, setup.bits)))
        self._seed = None  # b_u is now only recoverable from shares
        self._c = self._s = None  # the private keys are no longer needed
        self._enc_keys = {}
        self.state = "masked"

    def _open(self, v: int, ciphertext: bytes) -> _Held:
        setup = self._setup()
        associated = share_associated_data(self.run, self.session, setup.round, v, setup.label)
        plaintext = crypto.decrypt(self._share_key(v), ciphertext, associated)
        if len(plaintext) != PLAINTEXT_BYTES:
            raise RemoteProtocolError(
                f"share plaintext from {v} has {len(plaintext)} bytes", field="shares"
            )
        sender = int.from_bytes(plaintext[:LABEL_BYTES], "big")
        recipient = int.from_bytes(plaintext[LABEL_BYTES : 2 * LABEL_BYTES], "big")
        if (sender, recipient) != (v, setup.label):
            raise RemoteProtocolError(
                f"ciphertext relayed as {v} -> {setup.label} says {sender} -> {recipient}",
                field="shares",
            )
        start = 2 * LABEL_BYTES
        middle = start + shamir.SHARE_BYTES
        return _Held(
            shamir.share_from_bytes(plaintext[start:middle]),
            shamir.share_from_bytes(plaintext[middle:]),
        )

    def _masked_input(self) -> np.ndarray:
        setup = self._setup()
        assert self._fixed_point is not None and self._seed is not None
        u, bits = setup.label, setup.bits
        y = self._fixed_point.encode(self._x)  # a fresh uint64 array: summed into in place
        np.add(y, self_mask(self._seed, setup.dim, bits), out=y)
        s_private = self._keys().s.agreement_key()
        for v in sorted(self._completed):
            shared = self._agree(s_private, self._neighbours[v].s_public, v)
            mask = pairwise_mask(
                shared,
                run=self.run,
                session=self.session,
                round=setup.round,
                u=u,
                v=v,
                dim=setup.dim,
                bits=bits,
            )
            add_pairwise_into(y, mask, u=u, v=v)
        return low_bits(y, bits)

    # ---- stage 3: ConsistencyCheck (active mode) -------------------------------------------

    def _on_consistency_request(self, request: SaConsistencyRequest) -> None:
        """Bonawitz Fig. 4, round 3: check U3, sign it once, and remember what was signed."""
        survivors = frozenset(request.survivors)
        if len(survivors) != len(request.survivors):
            raise RemoteProtocolError("a label listed twice", field="survivors")
        self._check_survivor_set(survivors)
        self._u3 = survivors
        signature = crypto.sign(self._signing_key, self._consistency_transcript())
        self._reply("consistency", SaConsistency(**self._envelope(), signature=signature))
        self.state = "signed"

    def _check_survivor_set(self, survivors: frozenset[int]) -> None:
        """U3 ⊆ U2 as far as this device can tell, u ∈ U3 and |U3| >= t (Fig. 4, round 3)."""
        setup = self._setup()
        if setup.label not in survivors:
            raise RemoteProtocolError(
                "this device sent a masked input but is not in U3", field="survivors"
            )
        outside = sorted(v for v in survivors if v > setup.participants)
        unfinished = sorted((survivors & set(self._neighbours)) - self._completed)
        if outside or unfinished:
            raise RemoteProtocolError(
                f"labels {outside or unfinished} cannot have sent a masked input (outside "
                f"1..{setup.participants}, or neighbours that did not complete ShareKeys)",
                field="survivors",
            )
        if len(survivors) < setup.threshold:
            raise RemoteProtocolError(
                f"{len(survivors)} survivors, below the threshold {setup.threshold}",
                field="survivors",
            )

    def _consistency_transcript(self) -> bytes:
        return signing.consistency_transcript(
            self._u3, run=self.run, session=self.session, round=self._setup().round
        )

    def _check_consistency(self, request: SaUnmaskRequest) -> None:
        """Active mode, Bonawitz Fig. 4 round 4: reveal nothing unless at least t distinct
        members of U3 signed the very U3 this device signed (every listed signature must
        verify), and the request's split is exactly U3 / U2 \\ U3 on this device's nodes."""
        setup = self._setup()
        if request.consistency is None:
            raise RemoteProtocolError(
                "no consistency signatures (active mode): refusing to unmask", field="consistency"
            )
        signers = self._check_signatures(request.consistency)
        if len(signers) < setup.threshold:
            raise RemoteProtocolError(
                f"only {len(signers)} consistency signatures on the survivor set, below the "
                f"threshold {setup.threshold}: refusing to unmask",
                field="consistency",
            )
        known = set(self._completed) | {setup.label}
        if set(request.survivors) != known & self._u3 or set(request.dropped) != known - self._u3:
            raise RemoteProtocolError(
                f"survivors {sorted(request.survivors)} / dropped {sorted(request.dropped)} "
                f"disagree with the signed U3 on this device's nodes {sorted(known)}",
                field="survivors",
            )
        if request.survivor_total != len(self._u3):
            raise RemoteProtocolError(
                f"{request.survivor_total} survivors in total, the signed U3 has {len(self._u3)}",
                field="survivor_total",
            )

    def _check_signatures(self, entries: list[SignedSurvivors]) -> set[int]:
        transcript = self._consistency_transcript()
        signers: set[int] = set()
        for index, entry in enumerate(entries):
            where = f"consistency[{index}]"
            if entry.label in signers:
                raise RemoteProtocolError(f"label {entry.label} listed twice", field=where)
            if entry.label not in self._u3:
                raise RemoteProtocolError(
                    f"label {entry.label} is not in U3: only survivors sign it", field=where
                )
            device = self._roster[entry.label - 1]
            try:
                crypto.verify(self._identity[device], transcript, entry.signature)
            except RemoteProtocolError as error:
                raise RemoteProtocolError(
                    f"{device}'s signature is not valid on the survivor set this device "
                    f"signed ({error.reason}): the server shows devices different U3 sets",
                    field=where,
                ) from None
            signers.add(entry.label)
        return signers

    # ---- stage 4: Unmask ------------------------------------------------------------------

    def _on_unmask_request(self, request: SaUnmaskRequest) -> None:
        setup = self._setup()
        if self.active:
            self._check_consistency(request)
        survivors, dropped = set(request.survivors), set(request.dropped)
        if len(survivors) != len(request.survivors) or len(dropped) != len(request.dropped):
            raise RemoteProtocolError("a label listed twice", field="survivors")
        both = survivors & dropped
        if both:
            raise RemoteProtocolError(
                f"nodes {sorted(both)} listed both as survivors and as dropped: revealing "
                "both of their shares would unmask their input",
                field="dropped",
            )
        if setup.label in dropped:
            raise RemoteProtocolError("this device is listed as dropped", field="dropped")
        known = set(self._completed) | {setup.label}
        if survivors | dropped != known:
            raise RemoteProtocolError(
                f"the request covers {sorted(survivors | dropped)}, this device holds shares "
                f"of exactly {sorted(known)}",
                field="survivors",
            )
        if request.survivor_total < max(setup.threshold, len(survivors)):
            raise RemoteProtocolError(
                f"{request.survivor_total} survivors in total, below the threshold "
                f"{setup.threshold}: unmasking would expose too few inputs' sum",
                field="survivor_total",
            )
        revealed = [
            RevealedShare(node=v, kind="b", share=shamir.share_to_bytes(self._held[v].b_share))
            for v in sorted(survivors)
        ] + [
            RevealedShare(node=v, kind="s", share=shamir.share_to_bytes(self._held[v].s_share))
            for v in sorted(dropped)
        ]
        self._held = {}  # answered once: nothing left to reveal this round
        self._reply("unmask", SaUnmask(**self._envelope(), shares=revealed))
        self.state = "done"

    # ---- abort --------------------------------------------------------------------------

    def _on_abort(self, message: SaAbort) -> None:
        if self.setup is not None and message.round != self.setup.round:
            raise RemoteProtocolError(
                f"round {message.round} is not {self.setup.round}", field="round"
            )
        self.state = "aborted"
        self.abort_reason = message.reason
        self._forget_secrets()
        self._emit(SessionAborted(message.reason, by_collector=True, excluded=message.excluded))

    def _refuse(self, error: RemoteProtocolError) -> None:
        stage = {
            "idle": "setup",
            "advertised": "share",
            "shared": "masked",
            "masked": "consistency" if self.active else "unmask",
            "signed": "unmask",
        }
        self._send(
            topics.up(self.run, self.device, "sa_abort"),
            SaAbort(**self._envelope(), stage=stage.get(self.state, ""), reason=str(error)[:500]),
        )
        self.state = "error"
        self.abort_reason = str(error)
        self._forget_secrets()
        self._emit(SessionAborted(str(error), by_collector=False))

    def _forget_secrets(self) -> None:
        self._seed = None
        self._c = self._s = None
        self._enc_keys = {}
        self._held = {}

    # ---- helpers ------------------------------------------------------------------------

    def _envelope(self) -> dict:
        round_number = self.setup.round if self.setup is not None else 0
        return {
            "run": self.run,
            "sender": self.device,
            "session": self.session,
            "round": round_number,
        }

    def _reply(self, stage: str, message: Message) -> None:
        self._send(topics.up(self.run, self.device, message.type_name()), message)
        self._emit(StageAnswered(stage))

    def _setup(self) -> SaSetup:
        if self.setup is None:
            raise LocalProtocolError("no SaSetup received yet")
        return self.setup

    def _keys(self) -> _KeyPairs:
        if self._c is None or self._s is None:
            raise LocalProtocolError("keys are drawn on SaSetup")
        return _KeyPairs(self._c, self._s)


class _KeyPairs(NamedTuple):
    """This device's two X25519 key pairs of the session."""

    c: crypto.KeyPair
    s: crypto.KeyPair
