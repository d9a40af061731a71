"""The audit battery as the public API sees it: every entry, the end-to-end ones included."""

from __future__ import annotations

from typing import Any


def run_audit(mechanism: str, eps: float, **options: Any):
    """Audit ``mechanism`` black-box at its claimed ``eps`` (as ``ldpfleet audit``): a
    battery entry by name (``ldpfleet audit all`` lists them, ``fleet-stream`` included),
    or any contract mechanism (``"package.module:Class"``, an entry-point name).

    ``options``: ``delta``, ``trials`` (runs per world, default the entry's own), ``gamma``
    (the confidence level's complement), ``seed``. Returns an ``AuditResult``."""
    from ldpfleet.app import audit_fleet  # noqa: F401  (registers the end-to-end entry)
    from ldpfleet.collector.audit.battery import (
        refuse_a_plugin_named_like_an_entry,
    )
    from ldpfleet.collector.audit.battery import (
        run_audit as run_battery_entry,
    )

    refuse_a_plugin_named_like_an_entry(mechanism)  # the plugin, not the entry, would run
    return run_battery_entry(mechanism, eps, **options)
