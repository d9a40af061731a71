"""Wire refusals of ``protocol.messages`` that helper T3's planted-bug hunt (round 3) found
unpinned: each case names the mutant it kills. Every payload goes through
``codec.decode`` as a receiver's would; the valid base of each is decoded first."""

from __future__ import annotations

import msgspec
import pytest
from ldpfleet.protocol import codec
from ldpfleet.protocol.errors import RemoteProtocolError

REPORT = {
    "type": "sw_report", "run": "r1", "sender": "d0001", "seq": 0, "t0": 0,
    "mechanism": "sw", "eps0": 0.5, "w": 4, "values": [0.25, 0.75],
}  # fmt: skip
HELLO = {
    "type": "hello", "run": "r1", "sender": "d0001", "mechanism": "sw", "eps": 2.0, "w": 4,
    "eps0": 0.5, "steps": 100, "batch_steps": 10, "lo": 0.0, "hi": 1.0,
}  # fmt: skip
FLEET_DONE = {
    "type": "fleet_done", "run": "r1", "sender": "fleet-s0", "shard": 1, "shards": 2,
    "finished": 3,
}  # fmt: skip
RELEASE = {
    "type": "gcdp_release", "run": "r1", "sender": "collector", "seq": 0, "window": 0,
    "t0": 0, "steps": 4, "mechanism": "gcdp_laplace", "method": "gcdp", "eps_cal": 0.0,
    "eps_rel": 1.0, "adjacency": "edge", "values": [0.1, 0.2, 0.3],
    "budgets": [0.5, 0.25, 0.25], "scales": [1.0, 2.0, 2.0], "bounds": [1.0, 1.0, 1.0],
    "nodes": ["n0", "n1", "n2"], "edges": [[0, 1], [1, 2]],
}  # fmt: skip


def _decode(base: dict, **changes):
    return codec.decode(msgspec.json.encode({**base, **changes}))


@pytest.mark.parametrize(
    ("mutant", "base", "changes"),
    [
        # MS1: a raw report (central model, nothing spent on the device) claiming eps0 > 0
        ("MS1", REPORT, {"mechanism": "raw", "eps0": 0.5}),
        # MS2: an LDP mechanism's report claiming it spent nothing (eps0 = 0)
        ("MS2", REPORT, {"eps0": 0.0}),
        # MS3: shard k of k shards (shards are numbered 0 .. k-1)
        ("MS3", FLEET_DONE, {"shard": 2}),
        # MS5: an edge from a node to itself
        ("MS5", RELEASE, {"edges": [[0, 1], [1, 1]]}),
        # MS6: per-node budgets summing to more than the release's eps_rel
        ("MS6", RELEASE, {"budgets": [0.5, 0.5, 0.25]}),
        # MS7: a bound missing for one value
        ("MS7", RELEASE, {"bounds": [1.0, 1.0]}),
        # MS8: a node released at budget 0 (infinite noise, or a division by zero)
        ("MS8", RELEASE, {"budgets": [0.5, 0.0, 0.25]}),
        # MS9: an id with a '/' (ids are topic levels: it would name another topic)
        ("MS9", REPORT, {"sender": "d0001/up"}),
        # MS11: a report of no values
        ("MS11", REPORT, {"values": []}),
        # MS12: a hello announcing a raw stream that spends eps0 > 0 on the device
        ("MS12", HELLO, {"mechanism": "raw", "eps0": 0.5}),
    ],
)
def test_a_message_breaking_its_documented_rule_is_refused(mutant, base, changes):
    _decode(base)
    with pytest.raises(RemoteProtocolError):
        _decode(base, **changes)
