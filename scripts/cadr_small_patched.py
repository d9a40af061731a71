"""``ldpfleet ...`` with the small-fleet guard wired in, as the proposed patch would.

    python scripts/cadr_small_patched.py bench cadr --graph facebook --eps 3 --runs 3
    python scripts/cadr_small_patched.py bench cadr --graph FILE --transport memory --runs 1

The pipelines pass no ``theta_noise`` to ``degree_postprocess.post_process`` today
(``collector/cadr_reference.py`` and ``collector/cadr_fleet.py`` are outside helper B's
brief); this script rebinds the two call sites' ``post_process`` to one that adds the θ
search's noise law — the in-process ``_release_scores`` and the fleet's ``_post_process``
— exactly what the two-line patches in the report do, then runs the CLI with the given
arguments. Issue 20, helper B, 2026-12-05; docs/cadr-private.md "Small graphs: the limit
and the guard".
"""

from __future__ import annotations

import sys

import ldpfleet.collector.cadr_fleet as fleet
import ldpfleet.collector.cadr_reference as reference
from ldpfleet.collector.degree_postprocess import ThetaNoise, post_process

_noise: dict = {}
_search_theta = reference.dp_theta
_theta_prior = fleet._theta_prior


def _reference_dp_theta(degrees, budget, weight, rng, degree_bound=None):
    theta, search = _search_theta(degrees, budget, weight, rng, degree_bound)
    _noise["law"] = ThetaNoise(search["eps"], search["noise_parties"], len(search["bucket_sums"]))
    return theta, search


def _fleet_theta_prior(outcome, degree_bound, eps_theta, parties):
    for query in outcome.theta_queries:
        if "bucket_sums" in query:
            sums, survivors = query["bucket_sums"], query["survivors"]
            _noise["law"] = ThetaNoise(eps_theta, parties, len(sums), survivors)
    return _theta_prior(outcome, degree_bound, eps_theta, parties)


def _post_process(released, theta, eps_dsr, prior=None, histogram_prior=None):
    noise = _noise.pop("law", None) if prior is not None else None
    return post_process(released, theta, eps_dsr, prior, histogram_prior, theta_noise=noise)


def main() -> None:
    reference.dp_theta = _reference_dp_theta
    reference.post_process = _post_process
    fleet._theta_prior = _fleet_theta_prior
    fleet.post_process = _post_process
    from ldpfleet.app.cli import main as cli

    sys.argv = ["ldpfleet", *sys.argv[1:]]
    cli()


if __name__ == "__main__":
    main()
