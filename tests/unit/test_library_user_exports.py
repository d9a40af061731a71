"""What a public function returns can be named from ``import ldpfleet`` (held-out
library-user QA, helper D, 2026-12-05): ``detect_period`` returned a ``PeriodEstimate``
that ``ldpfleet`` did not export (to annotate ``estimate: ldpfleet.PeriodEstimate`` a user
imported ``ldpfleet.collector.period``, a module docs/api.md does not promise). Fails on
the code before the fix."""

from __future__ import annotations

import numpy as np

import ldpfleet


def test_every_returned_type_is_public():
    rng = np.random.default_rng(3)
    sw = ldpfleet.SquareWave(2.0)
    reports = sw.perturb(np.tile(rng.random(12), 12), rng)
    assert isinstance(ldpfleet.detect_period(reports), ldpfleet.PeriodEstimate)
    assert isinstance(ldpfleet.cpr(reports, sw), ldpfleet.CprResult)
    assert isinstance(ldpfleet.parse_scenario({"scenario": {"name": "x"},
                                               "fleet": {"devices": 1},
                                               "stream": {"steps": 8, "eps": 1.0, "w": 4},
                                               "source": {"kind": "synthetic",
                                                          "bounds": [0.0, 1.0]}}),
                      ldpfleet.LoadedScenario)  # fmt: skip
    assert isinstance(ldpfleet.get_mechanism("duchi", 1.0), ldpfleet.Mechanism)
    assert "PeriodEstimate" in ldpfleet.__all__
