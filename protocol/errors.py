"""Typed errors shared by every protocol machine (the h11 model).

- ``ParameterError``: a mechanism or protocol was configured with an invalid parameter
  (raised at construction, names the field and the limit).
- ``LocalProtocolError``: *we* misused a machine (wrong stage, call out of order).
- ``RemoteProtocolError``: a *peer* sent something malformed, out of domain or out of turn.
- ``BudgetExhausted``: a privacy ledger refused a charge; nothing was released.
"""

from __future__ import annotations


class ProtocolError(Exception):
    """Base class of every protocol error.

    ``field`` names the offending field (``"eps0"``, ``"values[3]"``, ``"payload"``) when one
    can be named; ``reason`` is a short human sentence saying what limit was violated;
    ``code`` is a stable machine-readable reason key (``"oversize"``, ``"wrong_sender"``, ...;
    ``protocol.events.reason_key`` derives one from ``field`` when none is given), what
    ``rejections_by_reason`` in results.json counts. ``limit`` (the rule the value broke,
    e.g. ``"a finite real number > 0"``) and ``value`` (the value refused) are set where the
    raise knows them (``protocol.validate``'s checks do); None otherwise — the sentence
    says them either way.
    """

    def __init__(
        self,
        reason: str,
        *,
        field: str | None = None,
        code: str | None = None,
        limit: str | None = None,
        value: object = None,
    ) -> None:
        self.reason = reason
        self.field = field
        self.code = code
        self.limit = limit
        self.value = value
        super().__init__(f"{field}: {reason}" if field else reason)


class ParameterError(ProtocolError, ValueError):
    """An invalid argument or parameter, refused before anything ran: of a library call
    (``ldpfleet.run``'s options, ``detect_period``'s reports, ``read_results``'s
    ``run_dir``, ...) or of a mechanism or protocol being built (our own configuration).

    ``field`` names it (``"out_dir"``, ``"reports[7]"``), ``limit`` the rule it broke and
    ``value`` the value refused (for an array its shape or first bad entry; never key
    material or secrets); the message says them in one sentence."""


class LocalProtocolError(ProtocolError):
    """This side used a protocol machine incorrectly."""


class RemoteProtocolError(ProtocolError):
    """The peer sent a message that violates the protocol; it is refused, never used."""


class BudgetExhausted(ProtocolError):
    """A privacy-ledger charge would exceed the budget; the release must not happen."""
