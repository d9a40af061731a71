"""``ldpfleet ...`` with the small-fleet guard wired in, as the proposed patch would.

    python scripts/cadr_small_patched.py bench cadr --graph facebook --eps 3 --runs 3
    python scripts/cadr_small_patched.py bench cadr --graph FILE --transport memory --runs 1

The pipelines pass no ``theta_noise`` to ``degree_postprocess.post_process`` today
(``collector/cadr_reference.py`` and ``collector/cadr_fleet.py`` are outside helper B's
brief); this script rebinds, in ``degree_postprocess``, the ``search_priors`` and
``post_process`` that ``post_process_release`` (where both pipelines post-process) looks
up: the first records the θ search's noise law (ε_θ, parties, buckets, the devices in the
sums), the second passes it as ``theta_noise`` — what the two-line patches in the report
do — then runs the CLI with the given arguments. Issue 20, helper B, 2026-12-05;
docs/cadr-private.md "Small graphs: the limit and the guard". (Helper K, 2026-12-06: the
two call sites' rebinding moved to the one place they now share.)
"""

from __future__ import annotations

import sys

import ldpfleet.collector.degree_postprocess as dpp

_noise: dict = {}
_search_priors, _post_process_unguarded = dpp.search_priors, dpp.post_process


def _search_priors_noted(sums, thresholds, degree_bound, devices, eps_theta, parties, **kw):
    _noise["law"] = dpp.ThetaNoise(eps_theta, parties, len(sums), devices)
    return _search_priors(sums, thresholds, degree_bound, devices, eps_theta, parties, **kw)


def _post_process(released, theta, eps_dsr, prior=None, histogram_prior=None, **kw):
    noise = _noise.pop("law", None) if prior is not None else None
    return _post_process_unguarded(
        released, theta, eps_dsr, prior, histogram_prior, theta_noise=noise, **kw
    )


def main() -> None:
    dpp.search_priors = _search_priors_noted
    dpp.post_process = _post_process
    from ldpfleet.app.cli import main as cli

    sys.argv = ["ldpfleet", *sys.argv[1:]]
    cli()


if __name__ == "__main__":
    main()
