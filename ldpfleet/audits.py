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
    ``trials``, ``gamma``, ``seed``): an unknown name, an instance instead of its class,
    a class that breaks the contract, an option outside its range."""
    from ldpfleet.app import audit_fleet  # noqa: F401  (registers the end-to-end entry)
    from ldpfleet.collector.audit.battery import (
        refuse_a_plugin_named_like_an_entry,
    )
    from ldpfleet.collector.audit.battery import (
        run_audit as run_battery_entry,
    )

    if not isinstance(mechanism, str):  # the class itself: audited by its import path
        from ldpfleet.protocol.mechanisms import class_import_path

        mechanism = class_import_path(mechanism)
    refuse_a_plugin_named_like_an_entry(mechanism)  # the plugin, not the entry, would run
    return run_battery_entry(mechanism, eps, delta=delta, trials=trials, gamma=gamma, seed=seed)
