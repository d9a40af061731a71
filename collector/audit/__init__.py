"""Black-box privacy audit (seed 001): canary pairs, witness statistics, threshold selection
on selection samples, Clopper-Pearson bounds on independent evaluation samples.

``stats`` has the bounds, ``selection`` the distinguishing-test search, ``core`` the audit
driver and its result object. Mechanism adapters and the battery live in ``battery``.
"""

from ldpfleet.collector.audit.core import AuditResult, Canary, WitnessResult, audit, audit_samples
from ldpfleet.collector.audit.selection import DistinguishingTest, select_test
from ldpfleet.collector.audit.stats import (
    clopper_pearson_lower,
    clopper_pearson_upper,
    eps_lower_bound,
)

__all__ = [
    "AuditResult",
    "Canary",
    "DistinguishingTest",
    "WitnessResult",
    "audit",
    "audit_samples",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "eps_lower_bound",
    "select_test",
]
