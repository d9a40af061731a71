"""The seeded SecAgg+ labelling of tests/seeded_secagg.py makes the shipped secure-sum
scenario's session deterministic, and this seed's session cannot abort for want of share
holders (tier 1: the server machine only, no transport).

With ``os.urandom`` the run of ``scenarios/secure-sum.toml`` (the documented
``ldpfleet run scenarios/secure-sum.toml``, run twice by tests/e2e/test_docs_commands.py)
aborts with probability at most 2.65e-4 (``abort_probability_bound``). Seeded, the graph
and the dropping devices are fixed, so the holder rule is checked here once, exactly.
"""

from __future__ import annotations

import asyncio

import pytest
from ldpfleet.protocol.secagg.graph import abort_probability_bound, components
from ldpfleet.protocol.secagg.server import SecAggServer
from ldpfleet.scenarios.runner import secure_sum_dropouts

import ldpfleet
from tests import seeded_secagg


def _server(scenario, random_bytes) -> SecAggServer:
    section = scenario.spec.secure_sum
    return SecAggServer(
        "r", "s", scenario.device_ids(), section.dim, scenario.fixed_point(),
        graph=section.graph, degree=section.neighbors, threshold=section.threshold,
        random_bytes=random_bytes,
    )  # fmt: skip


def unmaskable(server: SecAggServer, dropped: set[str]) -> bool:
    """Whether a session over ``server``'s graph unmasks when ``dropped`` leave after
    sharing: every survivor keeps t live holders counting itself, every dropped device t
    live neighbours, and the survivors' graph is in one part (``SecAggServer``'s rules)."""
    gone = {server.label_of[d] for d in dropped}
    for label, neighbours in server.neighbours.items():
        live = len(neighbours - gone) + (label not in gone)
        if live < server.threshold:
            return False
    survivors = [label for label in server.neighbours if label not in gone]
    return len(components(server.neighbours, survivors)) == 1


SHIPPED = ldpfleet.load_scenario("secure-sum")


def _dropping(scenario) -> set[str]:
    return secure_sum_dropouts(scenario, scenario.device_ids(), scenario.spec.scenario.seed)


def test_the_shipped_scenario_can_abort_by_chance_with_urandom():
    server = _server(SHIPPED, seeded_secagg.seeded_random_bytes())
    k = max(len(v) for v in server.neighbours.values())
    bound = abort_probability_bound(server.n, k, server.threshold, len(_dropping(SHIPPED)))
    assert (server.n, k, server.threshold, len(_dropping(SHIPPED))) == (100, 15, 9, 10)
    assert 1e-6 < bound <= 3e-4  # why the documented runs need the seeded labelling


def test_the_seeded_labelling_is_fixed_and_lets_the_shipped_session_unmask():
    first = _server(SHIPPED, seeded_secagg.seeded_random_bytes())
    again = _server(SHIPPED, seeded_secagg.seeded_random_bytes())
    assert first.neighbours == again.neighbours
    assert unmaskable(first, _dropping(SHIPPED))


def test_the_holder_check_can_fail():
    """A dropping set that is one device and its whole neighbourhood leaves it no holder."""
    server = _server(SHIPPED, seeded_secagg.seeded_random_bytes())
    label = next(iter(server.neighbours))
    gone = {server.device_of[v] for v in server.neighbours[label] | {label}}
    assert not unmaskable(server, gone)


def test_seeded_passes_a_fresh_source_per_session_and_keeps_an_explicit_one():
    seen = []

    async def fake(*args, random_bytes, **options):
        seen.append(random_bytes(16))

    wrapped = seeded_secagg.seeded(fake, seed=3)
    asyncio.run(wrapped("t", "run", "s"))
    asyncio.run(wrapped("t", "run", "s"))
    asyncio.run(wrapped("t", "run", "s", random_bytes=lambda n: b"\0" * n))
    assert seen[0] == seen[1] == seeded_secagg.seeded_random_bytes(3)(16)
    assert seen[2] == b"\0" * 16


def test_install_wraps_every_scenario_path(monkeypatch):
    from ldpfleet.collector import secure_sum as collector_sum
    from ldpfleet.scenarios import runner, secure_sum_stage, sides

    # ldpfleet run and the split run call the session through this one module
    assert not hasattr(runner, "secure_sum") and not hasattr(sides, "secure_sum")
    monkeypatch.setattr(secure_sum_stage, "secure_sum", secure_sum_stage.secure_sum)
    seeded_secagg.install()
    assert secure_sum_stage.secure_sum.__wrapped__ is collector_sum.secure_sum
    assert secure_sum_stage.secure_sum.__name__ == "secure_sum"


@pytest.mark.parametrize("seed", [1, 2])
def test_another_seed_gives_another_labelling(seed):
    assert (
        _server(SHIPPED, seeded_secagg.seeded_random_bytes(seed)).neighbours
        != _server(SHIPPED, seeded_secagg.seeded_random_bytes()).neighbours
    )


def test_the_ring_run_of_test_exit_codes_aborts_whatever_the_labelling():
    """tests/e2e/test_exit_codes.py expects the ring session (12 devices, neighbors = 2,
    3 dropping after their shares) to abort, and keeps os.urandom: every 3 of the 12 ring
    positions (any labelling puts the seeded 3 at one such set) fail the holder rule or
    cut the survivors' ring, so the abort is certain, not likely."""
    from itertools import combinations

    quick = ldpfleet.load_scenario("quickstart").path.read_text()
    text = quick.replace("devices = 50", "devices = 12").replace("steps = 200", "steps = 20")
    text += (  # the section of test_exit_codes.py's scenario
        "\n[secure_sum]\ndim = 4\nclip = [5.0, 35.0]\nneighbors = 2\ndropout = 0.25\n"
        'dropout_stage = "after_shares"\nstage_timeout = 3.0\n'
    )
    ring = ldpfleet.parse_scenario(text)
    server = _server(ring, seeded_secagg.seeded_random_bytes())
    assert server.threshold == 2 and len(_dropping(ring)) == 3
    assert not any(unmaskable(server, set(gone)) for gone in combinations(ring.device_ids(), 3))
