"""The audit battery as the public API sees it: every entry, the end-to-end ones included."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ldpfleet.collector.audit.core import AuditResult


def run_audit(
    mechanism: str | type,
    eps: float,
    *,
    delta: float = 0.0,
    trials: int | None = None,
    gamma: float = 0.05,
    seed: int = 0,
) -> AuditResult:
    """Audit ``mechanism`` black-box at its claimed ``eps`` (as ``ldpfleet audit``).

    ``mechanism``: a battery entry by name (``ldpfleet audit all`` lists them,
    ``fleet-stream`` included), or any contract mechanism: ``"package.module:Class"``, an
    entry point's name, or the class itself (a module-level class; one defined in a
    notebook is audited as ``"__main__:Class"``). ``eps``: the claim, a finite number
    >= 0. ``delta``: in [0, 1). ``trials``: runs per world, an integer in [2, 10,000,000]
    (default the entry's own). ``gamma``: in (0, 1), the confidence level's complement.
    ``seed``: an integer in [0, 2^63 - 1]; the same seed gives the same result.

    Returns an ``AuditResult``: ``eps_lb`` (the certified lower bound), ``verdict``
    (``"violation"`` when ``eps_lb`` exceeds the claim, else ``"inconclusive"``),
    ``eps_lb_max`` (the largest bound these trials could certify at all), the witness and
    its counts.

    Raises ``ParameterError`` naming the option (``mechanism``, ``eps``, ``delta``,
    ``trials``, ``gamma``, ``seed``): an unknown name (with a "did you mean" for a name
    in other case or with spaces, or a near battery entry), an instance instead of its
    class, a class that breaks the contract, an option outside its range."""
    from ldpfleet.app import audit_fleet  # noqa: F401  (registers the end-to-end entry)
    from ldpfleet.collector.audit.battery import (
        check_mechanism,
        refuse_a_plugin_named_like_an_entry,
    )
    from ldpfleet.collector.audit.battery import (
        run_audit as run_battery_entry,
    )
    from ldpfleet.protocol.errors import ParameterError

    if not isinstance(mechanism, str):  # the class itself: audited by its import path
        from ldpfleet.protocol.mechanisms import class_import_path

        if not (isinstance(mechanism, type) or callable(mechanism) or _has_methods(mechanism)):
            # None, a number, a list: the audit's own sentence (battery entries, import
            # paths), not get_mechanism's list of the stream mechanisms (helper H)
            check_mechanism(mechanism)
        mechanism = class_import_path(mechanism)
    try:
        refuse_a_plugin_named_like_an_entry(mechanism)  # the plugin, not the entry, would run
        return run_battery_entry(mechanism, eps, delta=delta, trials=trials, gamma=gamma, seed=seed)
    except ParameterError as error:
        hint = _did_you_mean(mechanism) if error.field == "mechanism" else None
        if hint is None or error.value != mechanism:
            raise
        raise ParameterError(
            f"{error.reason}; did you mean {hint!r}?",
            field=error.field,
            limit=error.limit,
            value=error.value,
        ) from None


def _has_methods(value: object) -> bool:
    """Whether ``value`` looks like a mechanism instance (``class_import_path`` says to pass
    its class)."""
    return all(hasattr(value, m) for m in ("perturb", "in_domain", "estimate_mean"))


def _did_you_mean(name: str) -> str | None:
    """A name ``run_audit`` would take for a refused ``name``, or None: the name without
    surrounding spaces or in lower case (``"Laplace"``, ``"rr "``), a close battery entry
    (``"pieceweise"``). Each used to be answered with the list of all 30 entries only
    (helper H, 2026-12-06); a dotted ``"package.module.Class"`` has its own hint
    (``protocol.mechanisms._colon_hint``)."""
    import difflib

    from ldpfleet.collector.audit.battery import BATTERY

    stripped = name.strip()
    for guess in (stripped, stripped.lower()):
        if guess != name and guess in BATTERY:
            return guess
    if stripped != name and ":" in stripped:
        return stripped
    close = difflib.get_close_matches(stripped.lower(), list(BATTERY), n=1, cutoff=0.8)
    return close[0] if close and close[0] != name else None
