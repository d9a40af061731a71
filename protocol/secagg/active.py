"""Active-adversary mode of secure aggregation: what is signed, and by whom.

Theory of operation (Bonawitz et al., CCS 2017, §4 and Fig. 4, the malicious-server
variant; security argument in §6). An honest-but-curious server follows the protocol; an
active one may lie. Two lies break the honest-but-curious protocol:

- Key substitution (man in the middle, or Sybils): the server hands u its own public keys
  in place of neighbour v's, decrypts the shares u meant for v and learns the masks. The
  fix is a PKI: every device owns a long-term Ed25519 identity key pair whose public half
  every device and the server know in advance (``identity_keys``, device id -> key), and
  signs its advertised keys (``advertise_transcript``). Every device checks every
  neighbour's signature before it shares anything.
- Inconsistent views: the server tells some holders of v's shares "v survived" (they
  reveal v's self-mask share) and others "v dropped" (they reveal v's mask-key share);
  with t of both it unmasks x_v alone. The fix is the ConsistencyCheck round between
  MaskedInput and Unmask: the server sends every survivor the survivor set U3, each signs
  it (``consistency_transcript``), and a device reveals shares only after it saw at least
  t valid signatures on the very U3 it signed itself, and only shares that agree with
  that U3. An honest device signs one U3 per round, so on the full graph (2t > n) no two
  different U3 sets can each gather t signatures unless devices colluding with the
  server sign both (Bonawitz §6 bounds how many may). On a sparse SecAgg+ graph the t
  signatures may come from far apart; there the split of one node's holders is ruled out
  because each holder answers from the single U3 it signed and 2t > holders.

Labels: the server labels its participants 1..n in sorted order of their ids; a device
maps a neighbour's label to its id, hence to its identity key, by the same rule, so in
active mode ``identity_keys`` must list exactly the session's participants (its roster).

Every transcript starts with a purpose string (domain separation: an advertisement
signature is never a valid consistency signature) and separates its variable-length
fields with "/" (run and session identifiers may not contain it), so it is injective.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.secagg import crypto

TRANSCRIPT_PREFIX = b"ldpfleet/secagg/v1/"


def advertise_transcript(
    c_public: bytes, s_public: bytes, *, run: str, session: str, round: int, label: int
) -> bytes:
    """What device ``label`` signs in AdvertiseKeys: c_u^pk || s_u^pk || run || session ||
    round || label (Bonawitz Fig. 4, round 0: σ_u = SIG.sign(d_u^SK, c_u^PK || s_u^PK))."""
    context = f"{run}/{session}/{round}/{label}".encode()
    return TRANSCRIPT_PREFIX + b"advertise/" + c_public + s_public + context


def consistency_transcript(
    survivors: Iterable[int], *, run: str, session: str, round: int
) -> bytes:
    """What every survivor signs in ConsistencyCheck: run || session || round || the
    sorted U3 labels (Bonawitz Fig. 4, round 3: σ'_u = SIG.sign(d_u^SK, U3))."""
    labels = ",".join(str(label) for label in sorted(survivors))
    return TRANSCRIPT_PREFIX + f"consistency/{run}/{session}/{round}/{labels}".encode()


def check_identity_keys(
    identity_keys: Mapping[str, bytes] | None, devices: Iterable[str] | None = None
) -> dict[str, bytes]:
    """``identity_keys`` as a dict, checked: 32-byte Ed25519 public keys, distinct, and
    (when ``devices`` is given) exactly those devices; ``ParameterError`` otherwise."""
    if identity_keys is None or not isinstance(identity_keys, Mapping):
        raise ParameterError(
            "active mode needs the devices' Ed25519 public keys (device id -> key)",
            field="identity_keys",
            limit="a mapping device id -> Ed25519 public key",
            value=identity_keys,
        )
    if devices is not None:
        _check_roster(set(identity_keys), set(devices))
    roster = {
        device: crypto.check_signing_public(key, f"identity_keys[{device}]")
        for device, key in identity_keys.items()
    }
    if len(set(roster.values())) != len(roster):
        raise ParameterError(
            "two devices share one identity key",
            field="identity_keys",
            limit="distinct identity keys (value is a shared key)",
            value=next(k for k in roster.values() if list(roster.values()).count(k) > 1),
        )
    return roster


def _check_roster(listed: set[str], devices: set[str]) -> None:
    missing, extra = devices - listed, listed - devices
    if missing or extra:
        raise ParameterError(
            f"must list exactly the session's devices: missing {sorted(missing)[:5]}, "
            f"unexpected {sorted(map(str, extra))[:5]}",
            field="identity_keys",
            limit="exactly the session's devices (value: the first missing and unexpected ids)",
            value={"missing": sorted(missing)[:5], "unexpected": sorted(map(str, extra))[:5]},
        )


def check_mode(active: bool, **options: object) -> None:
    """Refuse active-mode options without ``active=True`` (a silent no-op would let an
    operator believe the session is hardened when it is not)."""
    if not isinstance(active, bool):
        raise ParameterError(
            f"must be True or False, got {active!r}",
            field="active",
            limit="True or False",
            value=active,
        )
    if active:
        return
    for name, value in options.items():
        if value is not None:
            raise ParameterError(
                "is only used with active=True",
                field=name,
                limit="None unless active=True",
                value=value,
            )
