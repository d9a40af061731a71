"""Privacy review V2: the CADR-LDP claim must not exclude the collector from the peer graph
its own side can read.

Under a negotiated method (ll, lh, ra: the paper pipeline's default ll) each device sends
its negotiation items on its own ``ldp/{run}/dev/{me}/up/peer_batch`` (``CadrDevice``),
each item naming, in the clear, the neighbour it is for. The claim's row for them read
"relay and broker (message layer)", covered "trust", "never the collector's operator",
and the NDOE row "neighbours (relay)" (docs/cadr.md: "the collector sees none"). Yet:

* the collector's login may subscribe ``ldp/{run}/dev/+/up/#`` and receive every
  ``up/peer_batch`` (``broker.auth``: only ``ctl/peer_step`` is denied to it);
* the collector side runs the relay and the trace recorder in every layout
  (``scenarios.cadr_run.collect_cadr``); with ``[cadr] trace = "all"`` the edge list lands
  in OUT/trace.sqlite: 171 of 171 edges, none spurious, read back from a 60-node
  paper-pipeline run (``barabasi_albert:n=60,m=3,seed=1``, memory transport).

The graph is the protected data of node-LDP, so the row must be covered by no ε and name
the collector. Fails before the fix (the row said "trust", not in ``not_covered``)."""

from __future__ import annotations

import pytest
from ldpfleet.broker.auth import AccessPolicy
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_budget import THETA_FRACTION, CadrBudget, privacy_claim

RUN = "r1"


def _collector_reads_peer_batches() -> bool:
    """What the collector's login may do on a run's broker (the fact the claim states)."""
    policy = AccessPolicy(RUN, frozenset({"n0000", "n0001"}))
    who = ("collector", f"{RUN}-collector")
    return policy.allowed(*who, "subscribe", topics.all_up(RUN)) and policy.allowed(
        *who, "receive", topics.up(RUN, "n0001", "peer_batch")
    )


def _row(claim: dict, start: str) -> dict:
    return next(p for p in claim["parts"] if p["part"].startswith(start))


BUDGETS = {
    "dp": CadrBudget(3.0, 0.1, THETA_FRACTION),
    "paper": CadrBudget(3.0, 0.1),
}


@pytest.mark.parametrize("method", ["ll", "lh", "ra"])
@pytest.mark.parametrize("pipeline", sorted(BUDGETS))
def test_the_peer_graph_row_names_the_collector_and_is_not_covered(method, pipeline):
    claim = privacy_claim(BUDGETS[pipeline], method)
    row = _row(claim, "peer graph")
    if _collector_reads_peer_batches():
        assert row["covered"] == "no"
        assert row["part"] in claim["not_covered"]
        assert "collector" in row["seen_by"]
        assert "never the collector" not in row["note"]
        assert "NOT established" in claim["statement"]
    # the items' privatised contents keep their ε, but whoever reads them is named
    for start in ("NDOE codes", "LPEA"):
        if any(p["part"].startswith(start) for p in claim["parts"]):
            assert "collector" in _row(claim, start)["seen_by"]


def test_the_default_clip_claim_has_no_peer_rows():
    """Method clip runs no relay phase: no peer_batch is sent, so no such row."""
    claim = privacy_claim(BUDGETS["dp"], "clip")
    assert not any(p["part"].startswith("peer graph") for p in claim["parts"])
    assert claim["not_covered"] == []
