"""Wire messages of secure aggregation (Bonawitz et al., CCS 2017, §4; Bell et al., CCS 2020).

One message per device per stage, never one per neighbour (shared/reference/secagg.md,
"message economy"): a device uploads all its encrypted shares in one ``SaShares``; the
collector relays to each device, in one ``SaDeliver``, every ciphertext addressed to it.

Flow (collector = server, ``in`` = the device's inbox ``.../dev/{d}/in/collector``,
``up`` = ``.../dev/{d}/up/{tag}``):

========================  =========  ==========================================================
message                   direction  stage (Bonawitz round)
========================  =========  ==========================================================
``SaSetup``               in         opens the session: the device's label and the parameters
``SaAdvertise``           up         0 AdvertiseKeys: public keys c_u (encryption), s_u (masks)
``SaNeighbours``          in         1 ShareKeys opens: the neighbours' keys among U1
``SaShares``              up         1 ShareKeys: one AES-GCM ciphertext per neighbour
``SaDeliver``             in         2 MaskedInput opens: ciphertexts for u, U2 ∩ N(u)
``SaMasked``              up         2 MaskedInput: y_u, packed little-endian words mod 2^bits
``SaConsistencyRequest``  in         3 ConsistencyCheck opens (active mode only): the set U3
``SaConsistency``         up         3 ConsistencyCheck (active mode only): u's signature on U3
``SaUnmaskRequest``       in         4 Unmask opens: who survived (U3), who dropped (U2 \\ U3)
``SaUnmask``              up         4 Unmask: for each node EITHER its b-share OR its s-share
``SaAbort``               both       the session (or this device's part in it) ends
========================  =========  ==========================================================

Devices are named on the wire by their *label*, an integer 1..n (the Shamir abscissa and
the HKDF pair index); ``SaSetup`` tells each device its own label, ``SaNeighbours`` the
labels of its neighbours. Every message carries ``session`` (one key setup) and ``round``
(the HKDF round number). Sizes are bounded here with ``msgspec.Meta`` so the decoder
refuses oversize lists and byte strings before any machine sees them; whether a list has
the *right* members is checked by the machines.

Active-adversary mode (Bonawitz et al. §4, the malicious-server variant; off by default)
adds the optional ``signature`` of ``SaAdvertise`` (relayed in ``PeerKeys``), the
consistency stage and the optional ``consistency`` list of ``SaUnmaskRequest``; in the
default mode these optional fields stay ``None`` and the consistency messages never flow.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from ldpfleet.protocol.messages import Ident, Message, Reason
from msgspec import Meta

MAX_PARTICIPANTS = 10_000  # devices per session (full pairwise graphs stop well before)
MAX_DIM = 100_000  # vector entries per aggregation
MAX_ROUND = 1_000_000
# a stage deadline hint devices accept in SaSetup (the server refuses longer ones)
MAX_STAGE_TIMEOUT = 86_400.0
KEY_BYTES = 32
SHARE_BYTES = 66  # a Shamir share over GF(2^521 - 1), big-endian
MAX_CIPHERTEXT = 512  # nonce 12 + plaintext 140 + tag 16 = 168 bytes in practice
SIGNATURE_BYTES = 64  # Ed25519

Label = Annotated[int, Meta(ge=1, le=MAX_PARTICIPANTS)]
Round = Annotated[int, Meta(ge=0, le=MAX_ROUND)]
PublicKey = Annotated[bytes, Meta(min_length=KEY_BYTES, max_length=KEY_BYTES)]
Ciphertext = Annotated[bytes, Meta(min_length=28, max_length=MAX_CIPHERTEXT)]
ShareBytes = Annotated[bytes, Meta(min_length=SHARE_BYTES, max_length=SHARE_BYTES)]
Labels = Annotated[list[Label], Meta(max_length=MAX_PARTICIPANTS)]
Signature = Annotated[bytes, Meta(min_length=SIGNATURE_BYTES, max_length=SIGNATURE_BYTES)]


class _Entry(msgspec.Struct, forbid_unknown_fields=True, frozen=True, kw_only=True):
    """A list element inside a message (untagged)."""


class PeerKeys(_Entry, omit_defaults=True):
    """One neighbour's advertised public keys and, in active mode, its Ed25519 signature
    of them (omitted from the wire when absent)."""

    label: Label
    c_public: PublicKey
    s_public: PublicKey
    signature: Signature | None = None


class SignedSurvivors(_Entry):
    """Device ``label``'s Ed25519 signature of the survivor set U3 (active mode)."""

    label: Label
    signature: Signature


class SealedShare(_Entry):
    """An encrypted share pair. ``peer`` is the recipient in ``SaShares`` and the sender in
    ``SaDeliver`` (the other end is the message's device)."""

    peer: Label
    ciphertext: Ciphertext


class RevealedShare(_Entry):
    """A share revealed at unmasking: of node ``node``'s self-mask seed b (``kind="b"``,
    the node survived) or of its mask key s (``kind="s"``, the node dropped)."""

    node: Label
    kind: Literal["b", "s"]
    share: ShareBytes


class _SecAggMessage(Message, kw_only=True):
    """Fields every secure-aggregation message carries."""

    session: Ident
    round: Round = 0


class SaSetup(_SecAggMessage, tag="sa_setup", kw_only=True):
    """Collector -> device: you take part in ``session`` as ``label`` (1..participants)."""

    label: Label
    participants: Label
    threshold: Label
    bits: Literal[32, 64]
    dim: Annotated[int, Meta(ge=1, le=MAX_DIM)]
    clip_low: float
    clip_high: float
    scale: Annotated[float, Meta(gt=0.0)]
    stage_timeout: Annotated[
        float, Meta(gt=0.0, le=MAX_STAGE_TIMEOUT)
    ]  # a hint: the server enforces


class SaAdvertise(_SecAggMessage, tag="sa_advertise", kw_only=True):
    """Device -> collector: my two fresh X25519 public keys for this session; in active
    mode signed with my long-term Ed25519 identity key (``active.advertise_transcript``)."""

    c_public: PublicKey
    s_public: PublicKey
    signature: Signature | None = None


class SaNeighbours(_SecAggMessage, tag="sa_neighbours", kw_only=True):
    """Collector -> device: your neighbours that advertised (N(u) ∩ U1) and the threshold."""

    threshold: Label
    neighbours: Annotated[list[PeerKeys], Meta(min_length=1, max_length=MAX_PARTICIPANTS)]


class SaShares(_SecAggMessage, tag="sa_shares", kw_only=True):
    """Device -> collector: one ciphertext per neighbour of ``SaNeighbours`` (to relay)."""

    shares: Annotated[list[SealedShare], Meta(min_length=1, max_length=MAX_PARTICIPANTS)]


class SaDeliver(_SecAggMessage, tag="sa_deliver", kw_only=True):
    """Collector -> device: the ciphertexts addressed to you and your neighbours in U2."""

    shares: Annotated[list[SealedShare], Meta(max_length=MAX_PARTICIPANTS)]
    completed: Labels


class SaMasked(_SecAggMessage, tag="sa_masked", kw_only=True):
    """Device -> collector: y_u as ``dim`` little-endian words of ``bits/8`` bytes."""

    masked: Annotated[bytes, Meta(min_length=4, max_length=8 * MAX_DIM)]


class SaConsistencyRequest(_SecAggMessage, tag="sa_consistency_request", kw_only=True):
    """Collector -> device (active mode): the whole survivor set U3 (sorted), to sign."""

    survivors: Annotated[list[Label], Meta(min_length=1, max_length=MAX_PARTICIPANTS)]


class SaConsistency(_SecAggMessage, tag="sa_consistency", kw_only=True):
    """Device -> collector (active mode): my signature of the U3 I was sent
    (``active.consistency_transcript``)."""

    signature: Signature


class SaUnmaskRequest(_SecAggMessage, tag="sa_unmask_request", kw_only=True):
    """Collector -> device: among you and your neighbours in U2, who sent a masked input
    (``survivors``, U3) and who did not (``dropped``, U2 \\ U3); ``survivor_total`` = |U3|.
    In active mode ``consistency`` carries every signature of U3 the collector received."""

    survivors: Annotated[list[Label], Meta(min_length=1, max_length=MAX_PARTICIPANTS)]
    dropped: Labels
    survivor_total: Label
    consistency: Annotated[list[SignedSurvivors], Meta(max_length=MAX_PARTICIPANTS)] | None = None


class SaUnmask(_SecAggMessage, tag="sa_unmask", kw_only=True):
    """Device -> collector: one revealed share per node of the request, never two."""

    shares: Annotated[list[RevealedShare], Meta(min_length=1, max_length=MAX_PARTICIPANTS)]


class SaAbort(_SecAggMessage, tag="sa_abort", kw_only=True):
    """Either way: the session ends (collector -> device: for everyone, or for you alone
    when ``excluded``; device -> collector: I refuse to go on, and why)."""

    stage: Annotated[str, Meta(max_length=32)] = ""
    excluded: bool = False
    reason: Reason


SA_MESSAGES = (
    SaSetup,
    SaAdvertise,
    SaNeighbours,
    SaShares,
    SaDeliver,
    SaMasked,
    SaConsistencyRequest,
    SaConsistency,
    SaUnmaskRequest,
    SaUnmask,
    SaAbort,
)
