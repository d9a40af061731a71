"""A SecAgg+ session must never let the collector learn a sum of fewer devices than the
survivors (held-out user QA, helper F, 2026-12-05).

In SecAgg+ a pairwise mask joins only neighbours. Once the collector has removed the
self masks b_u of the survivors U3 and the masks shared with dropped devices (what it
does to unmask), what is left of each survivor's masked input is its input plus masks
shared with surviving neighbours only: summed over one connected part of the survivors'
graph these cancel, so each part's own sum is in the clear. Before the fix a graph of
degree 1 (a perfect matching: every pair's sum) and a ring that two dropouts cut in two
were unmasked without a word.
"""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.secagg.server import Aborted, SecAggServer, SumReady

from tests.unit.test_secagg_machines import FIXED, RUN, SESSION, TIMEOUT, make_session


def _cut_ring(seed: int = 3) -> tuple[object, set[str], list[set[int]]]:
    """A 6-device ring (degree 2, t = 2) and two opposite devices that drop after sharing
    their keys: the four survivors form two arcs of two, each still unmaskable."""
    session = make_session(n=6, graph="harary", degree=2, seed=seed)
    server = session.server
    assert server.threshold == 2
    start = 1
    ring = [start]
    while len(ring) < 6:  # walk the cycle
        ring.append(min(server.neighbours[ring[-1]] - set(ring)))
    gone = {ring[0], ring[3]}
    arcs = [{ring[1], ring[2]}, {ring[4], ring[5]}]
    dropped = {server.device_of[v] for v in gone}
    session.net.drops = dict.fromkeys(dropped, "after_shares")
    return session, dropped, arcs


def test_a_ring_cut_in_two_by_dropouts_aborts_before_anything_is_unmasked() -> None:
    """Fails before the fix: the session summed the two arcs (SumReady)."""
    session, _dropped, arcs = _cut_ring()
    assert all(len(arc) == 2 for arc in arcs)
    session.net.run()
    assert not session.net.only(SumReady)
    (aborted,) = session.net.only(Aborted)
    assert aborted.stage == "masked"
    assert "splits into 2 parts" in aborted.reason and "(sizes 2, 2)" in aborted.reason
    # nobody was asked for a share: nothing of the survivors' seeds left a device
    assert not any(
        m.type_name() == "sa_unmask_request"
        for messages in session.net.received.values()
        for m in messages
    )


@pytest.mark.parametrize("n", [4, 6, 200])
def test_degree_one_on_more_than_two_devices_is_refused(n: int) -> None:
    """Fails before the fix: degree 1 paired the devices off and the session unmasked
    every pair's sum."""
    devices = [f"d{i}" for i in range(n)]
    with pytest.raises(ParameterError) as error:
        SecAggServer(RUN, SESSION, devices, 3, FIXED, graph="harary", degree=1,
                     stage_timeout=TIMEOUT, now=0.0)  # fmt: skip
    assert error.value.field == "degree"
    assert "got 1" in str(error.value) and "pair" in str(error.value)


def test_degree_one_on_two_devices_is_the_full_graph_and_sums() -> None:
    session = make_session(n=2, graph="harary", degree=1, seed=1)
    session.net.run()
    (result,) = session.net.only(SumReady)
    assert len(result.survivors) == 2


def test_dropouts_that_keep_the_survivors_connected_still_sum() -> None:
    """The control: one dropout leaves the ring's survivors a path, summed exactly."""
    session = make_session(n=6, graph="harary", degree=2, seed=3)
    server = session.server
    session.net.drops = {server.device_of[1]: "after_shares"}
    session.net.run()
    (result,) = session.net.only(SumReady)
    assert len(result.survivors) == 5
    np.testing.assert_array_equal(result.encoded_total, session.encoded_sum(result.survivors))


def test_bench_refuses_neighbors_one_naming_the_option() -> None:
    """``ldpfleet bench secagg --neighbors 1`` (the command maps ``degree`` to it)."""
    import asyncio

    from ldpfleet.app.bench_secagg import bench_secagg

    with pytest.raises(ParameterError) as error:
        asyncio.run(bench_secagg(20, 3, neighbors=1))
    assert error.value.field == "neighbors" and "pairs the devices off" in str(error.value)


def test_every_sum_of_a_sparse_graph_covers_one_connected_survivors_graph() -> None:
    """The invariant over random dropouts on sparse graphs (degree 2 and 3, 12 devices, 1
    to 4 dropping after their shares, 40 seeded sessions): a sum is released only when the
    survivors' graph is in one part; some sessions are refused for a split (on the old
    code those summed)."""
    from ldpfleet.protocol.secagg.graph import components

    from tests.unit.test_secagg_machines import pick

    outcomes = {"sum": 0, "split": 0, "other abort": 0}
    for seed in range(40):
        degree, count = 2 + seed % 2, 1 + seed % 4
        session = make_session(n=12, graph="harary", degree=degree, seed=300 + seed)
        server = session.server
        dropped = pick(sorted(session.inputs), count, seed=seed)
        session.net.drops = dict.fromkeys(dropped, "after_shares")
        session.net.run()
        results = session.net.only(SumReady)
        if results:
            survivors = {server.label_of[d] for d in results[0].survivors}
            assert len(components(server.neighbours, survivors)) == 1, seed
            outcomes["sum"] += 1
        else:
            (aborted,) = session.net.only(Aborted)
            outcomes["split" if "splits into" in aborted.reason else "other abort"] += 1
    assert outcomes["sum"] and outcomes["split"], outcomes
