"""A pytest plugin for the mutation run (``collector.audit.mutants``): with
``LDPFLEET_MUTANT=<name>`` in the environment, ``pytest -p
ldpfleet.collector.audit.mutant_plugin`` plants that mutant (in-process, no file edited)
before any test runs and keeps it planted for the whole session. Without the variable it
does nothing."""

from __future__ import annotations

import os

_patcher = None


def pytest_configure(config) -> None:
    """Plant the mutant named by ``LDPFLEET_MUTANT`` for the session."""
    global _patcher
    name = os.environ.get("LDPFLEET_MUTANT")
    if not name:
        return
    from ldpfleet.collector.audit.mutants import ENV_VAR, Patcher, mutant_named

    del ENV_VAR
    _patcher = Patcher()
    mutant_named(name).plant(_patcher)


def pytest_unconfigure(config) -> None:
    """Restore what was patched."""
    if _patcher is not None:
        _patcher.undo()
