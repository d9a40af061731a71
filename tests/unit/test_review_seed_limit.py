"""Review (helper G): one seed limit. ``[scenario] seed`` (scenarios.schema.SEED_MAX),
``ldpfleet.run``'s ``seed`` (scenarios.runner, today's new check), ``ldpfleet run --seed``
(app/cli.py) and the audits' seed (collector.audit.stats, today's new check) accept
2^63 - 1 and refuse 2^63: the number is written in the CLI and the audits only because
they cannot import the schema (the CLI starts without it; collector is a lower layer)."""

from __future__ import annotations

import pytest
from ldpfleet.app import audit_cli, cli
from ldpfleet.collector.audit import stats
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios import runner, schema

SCENARIO = '[scenario]\nname = "s"\nseed = {seed}\n[fleet]\ndevices = 2\n[stream]\nsteps = 4\n'
SCENARIO += 'eps = 1.0\nw = 2\n[source]\nkind = "synthetic"\nbounds = [0.0, 1.0]\n'


def test_every_seed_limit_is_the_scenarios():
    assert schema.SEED_MAX == 2**63 - 1
    assert runner.SEED_MAX is schema.SEED_MAX  # one definition, imported
    assert cli.SEED_MAX == audit_cli.SEED_MAX == stats.SEED_MAX == schema.SEED_MAX


def test_the_scenario_and_the_library_agree_at_the_boundary():
    top = schema.SEED_MAX
    assert schema.parse_scenario(SCENARIO.format(seed=top)).spec.scenario.seed == top
    with pytest.raises(schema.ScenarioError, match=r"scenario\.seed"):
        schema.parse_scenario(SCENARIO.format(seed=top + 1))
    assert runner.checked_run_options(None, "out", top, None) == top
    with pytest.raises(ParameterError) as refused:
        runner.checked_run_options(None, "out", top + 1, None)
    assert refused.value.field == "seed"
    assert stats.check_seed(top) == top
    with pytest.raises(ParameterError):
        stats.check_seed(top + 1)
