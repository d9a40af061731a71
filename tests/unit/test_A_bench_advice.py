"""``bench secagg``'s advice on a degree comes from ``graphs.safer_degree`` (a doubling and
bisection search in floating point): the old scan, one odd degree at a time in exact
integers, took 193 s of CPU after ``--devices 10000 --dropout 0.45`` (and over 300 s at
0.49) to name the same ``--neighbors 1849``; now about 0.05 s.
"""

from __future__ import annotations

from ldpfleet.app.bench_secagg import abort_risk
from ldpfleet.protocol.secagg import graph as graphs


def test_the_largest_fleet_gets_its_advice() -> None:
    (sentence,) = abort_risk(10_000, 0.45, None, False)["warnings"]
    assert sentence.endswith("; --neighbors 1849 keeps it below 1%")  # the old scan's answer
    for k, fine in ((1849, True), (1847, False)):
        bound = graphs.session_abort_bound(10_000, k, graphs.default_threshold(k + 1), 4500)
        assert (bound <= 0.01) is fine


def test_only_the_full_graph_is_named_as_a_degree() -> None:
    # 12 devices, 5 leaving before their masked input: no odd degree below 11 keeps the
    # bound under 1 %, the full graph (t = 7, 7 left) does
    (sentence,) = abort_risk(12, 5 / 12, 3, False)["warnings"]
    assert sentence.endswith("; --neighbors 11 keeps it below 1%")
