"""ldpfleet: fleets of IoT device agents running local differential privacy protocols
over a real MQTT broker.

The public API (docs/api.md). Everything below is imported on first use (PEP 562), so
``import ldpfleet`` and the ``ldpfleet`` command start in milliseconds:

- scenarios: ``load_scenario`` (a path or a built-in name), ``parse_scenario`` (TOML text
  or a dict of sections), ``run`` (synchronous, in a notebook too) and ``run_scenario`` (a
  coroutine), ``LoadedScenario``, ``ScenarioError``;
- outputs: ``read_results`` (results.json), ``read_trace`` (every recorded message,
  decoded), ``read_reports`` (each device's accepted reports, in step order),
  ``read_ledger`` (each device's privacy ledger, ledger.json);
- mechanisms: the per-report contract ``Mechanism``, ``get_mechanism`` (a built-in name,
  ``"package.module:Class"``, an entry point of the group ``ldpfleet.mechanisms`` or the
  class itself),
  ``mechanism_names``, and the built-in classes;
- audit: ``run_audit`` (a battery entry or any contract mechanism, black-box: an ε lower
  bound with a certified confidence), ``AuditResult``;
- stream analytics: ``detect_period`` (a ``PeriodEstimate``), ``cpr`` and ``cpr_many``
  (CPR's reconstruction, docs/cpr.md) with ``CprConfig`` and ``CprResult``;
- errors: ``ParameterError`` (a bad argument, naming it: ``.field``), besides
  ``ScenarioError``, ``BrokerUnavailable`` (a ``ConnectionError``: no broker answers at
  the URL) and ``TraceError`` (a ``ValueError``: no trace, or a damaged one).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# public name -> "module:attribute" (imported on first access)
_EXPORTS: dict[str, str] = {
    # scenarios
    "load_scenario": "ldpfleet.scenario_dict:load_scenario",
    "parse_scenario": "ldpfleet.scenario_dict:parse_scenario",
    "LoadedScenario": "ldpfleet.scenarios.schema:LoadedScenario",
    "ScenarioError": "ldpfleet.scenarios.schema_errors:ScenarioError",
    "run_scenario": "ldpfleet.scenarios.runner:run_scenario",
    "run": "ldpfleet.outputs:run",
    # outputs
    "read_results": "ldpfleet.outputs:read_results",
    "read_trace": "ldpfleet.outputs:read_trace",
    "read_reports": "ldpfleet.outputs:read_reports",
    "read_ledger": "ldpfleet.outputs:read_ledger",
    # mechanisms
    "Mechanism": "ldpfleet.protocol.mechanism_contract:StreamMechanism",
    "get_mechanism": "ldpfleet.protocol.mechanisms:stream_mechanism",
    "mechanism_names": "ldpfleet.protocol.mechanisms:mechanism_names",
    "SquareWave": "ldpfleet.protocol.sw:SquareWave",
    "LaplaceMechanism": "ldpfleet.protocol.laplace:LaplaceMechanism",
    "DuchiMechanism": "ldpfleet.protocol.duchi:DuchiMechanism",
    "PiecewiseMechanism": "ldpfleet.protocol.piecewise:PiecewiseMechanism",
    "HybridMechanism": "ldpfleet.protocol.hybrid:HybridMechanism",
    # audit
    "run_audit": "ldpfleet.audits:run_audit",
    "AuditResult": "ldpfleet.collector.audit.core:AuditResult",
    # stream analytics
    "detect_period": "ldpfleet.collector.period:detect_period",
    "PeriodEstimate": "ldpfleet.collector.period:PeriodEstimate",
    "cpr": "ldpfleet.collector.cpr:cpr",
    "cpr_many": "ldpfleet.collector.cpr:cpr_many",
    "CprConfig": "ldpfleet.collector.cpr:CprConfig",
    "CprResult": "ldpfleet.collector.cpr:CprResult",
    # errors
    "ParameterError": "ldpfleet.protocol.errors:ParameterError",
    "BrokerUnavailable": "ldpfleet.broker.select:BrokerUnavailable",
    "TraceError": "ldpfleet.broker.trace:TraceError",
}

# a literal list (type checkers read no other form); the same names as _EXPORTS
# (tests/unit/test_library_user_typing.py)
__all__ = [
    "AuditResult",
    "BrokerUnavailable",
    "CprConfig",
    "CprResult",
    "DuchiMechanism",
    "HybridMechanism",
    "LaplaceMechanism",
    "LoadedScenario",
    "Mechanism",
    "ParameterError",
    "PeriodEstimate",
    "PiecewiseMechanism",
    "ScenarioError",
    "SquareWave",
    "TraceError",
    "__version__",
    "cpr",
    "cpr_many",
    "detect_period",
    "get_mechanism",
    "load_scenario",
    "mechanism_names",
    "parse_scenario",
    "read_ledger",
    "read_reports",
    "read_results",
    "read_trace",
    "run",
    "run_audit",
    "run_scenario",
]

if TYPE_CHECKING:  # what type checkers see: the same names (`as`: re-exported)
    from ldpfleet.audits import run_audit as run_audit
    from ldpfleet.broker.select import BrokerUnavailable as BrokerUnavailable
    from ldpfleet.broker.trace import TraceError as TraceError
    from ldpfleet.collector.audit.core import AuditResult as AuditResult
    from ldpfleet.collector.cpr import CprConfig as CprConfig
    from ldpfleet.collector.cpr import CprResult as CprResult
    from ldpfleet.collector.cpr import cpr as cpr
    from ldpfleet.collector.cpr import cpr_many as cpr_many
    from ldpfleet.collector.period import PeriodEstimate as PeriodEstimate
    from ldpfleet.collector.period import detect_period as detect_period
    from ldpfleet.outputs import read_ledger as read_ledger
    from ldpfleet.outputs import read_reports as read_reports
    from ldpfleet.outputs import read_results as read_results
    from ldpfleet.outputs import read_trace as read_trace
    from ldpfleet.outputs import run as run
    from ldpfleet.protocol.duchi import DuchiMechanism as DuchiMechanism
    from ldpfleet.protocol.errors import ParameterError as ParameterError
    from ldpfleet.protocol.hybrid import HybridMechanism as HybridMechanism
    from ldpfleet.protocol.laplace import LaplaceMechanism as LaplaceMechanism
    from ldpfleet.protocol.mechanism_contract import StreamMechanism as Mechanism
    from ldpfleet.protocol.mechanisms import mechanism_names as mechanism_names
    from ldpfleet.protocol.mechanisms import stream_mechanism as get_mechanism
    from ldpfleet.protocol.piecewise import PiecewiseMechanism as PiecewiseMechanism
    from ldpfleet.protocol.sw import SquareWave as SquareWave
    from ldpfleet.scenario_dict import load_scenario as load_scenario
    from ldpfleet.scenario_dict import parse_scenario as parse_scenario
    from ldpfleet.scenarios.runner import run_scenario as run_scenario
    from ldpfleet.scenarios.schema import LoadedScenario as LoadedScenario
    from ldpfleet.scenarios.schema_errors import ScenarioError as ScenarioError


def __getattr__(name: str) -> Any:
    try:
        target = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'ldpfleet' has no attribute {name!r}") from None
    module, _, attribute = target.partition(":")
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
