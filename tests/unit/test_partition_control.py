"""What partition workers and their coordinator take from each other
(``protocol.partition_control``), driven directly, without asyncio or a broker: the
coordinator-only check of a worker's control topics, a stream worker's reading of the
stage messages (the decisions ``collector/partition.py``'s ``PartitionLink`` took itself)
and the CADR coordinator's gathering of its workers' chunks (``ReleaseGatherer.receive``'s
checks in ``collector/cadr_partition.py``)."""

from __future__ import annotations

import pytest
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_messages import CadrTheta
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.events import reason_key
from ldpfleet.protocol.messages import Stage
from ldpfleet.protocol.partition import CadrRefusal, CadrReleases, PartitionStatus
from ldpfleet.protocol.partition_control import (
    CLOSE,
    OPEN,
    LinkOrder,
    ReleaseGathering,
    check_from_coordinator,
    link_order,
)
from ldpfleet.protocol.stream import STAGE

RUN = "pc"


def stage(state: str, *, stage_name: str = STAGE, run: str = RUN,
          sender: str = topics.COLLECTOR_ID, detail: str = "") -> Stage:  # fmt: skip
    return Stage(run=run, sender=sender, stage=stage_name, state=state, detail=detail)


def status(partition: int = 0, partitions: int = 2, run: str = RUN) -> PartitionStatus:
    return PartitionStatus(run=run, sender=topics.COLLECTOR_ID, partition=partition,
                           partitions=partitions, state="ready")  # fmt: skip


def chunk(partition: int, devices, values, *, final=True, theta=7, partitions=2, run=RUN,
          refusals=(), rejected=0, duplicates=0) -> CadrReleases:  # fmt: skip
    return CadrReleases(run=run, sender=topics.COLLECTOR_ID, partition=partition,
                        partitions=partitions, theta=theta, devices=list(devices),
                        values=list(values), refusals=list(refusals), final=final,
                        rejected=rejected, duplicates=duplicates)  # fmt: skip


# ---- a worker's control topics: the coordinator's messages of this run only --------------


@pytest.mark.parametrize(
    ("message", "field", "reason"),
    [
        (status(), "type", "'partition_status' on the stage topic, not a stage message"),
        (stage("closed", sender="d0001"), "sender",
         "a stage message from 'd0001': only the coordinator ('collector') speaks on the "
         "stage topic"),
        (stage("closed", run="other"), "run",
         "a stage message of run 'other' on run 'pc''s stage topic"),
    ],
    ids=["type", "sender", "run"],
)  # fmt: skip
def test_a_stage_topic_message_not_from_this_runs_coordinator_is_refused(message, field, reason):
    """The field, reason and key ``PartitionLink._check_control`` gave (unchanged)."""
    for check in (lambda: check_from_coordinator(message, RUN, (Stage,)),
                  lambda: link_order(message, RUN)):  # fmt: skip
        with pytest.raises(RemoteProtocolError) as caught:
            check()
        assert (caught.value.field, caught.value.reason) == (field, reason)
        assert reason_key(caught.value) == "schema"


def test_the_accepted_types_and_the_wording_are_the_callers():
    theta = CadrTheta(run=RUN, sender=topics.COLLECTOR_ID, theta=5)
    accepted = (CadrTheta, Stage)
    check_from_coordinator(theta, RUN, accepted)
    check_from_coordinator(stage("open"), RUN, accepted)
    with pytest.raises(RemoteProtocolError, match="control topics, not a θ or stage message"):
        check_from_coordinator(status(), RUN, accepted, what="θ or stage message",
                               where="control topics")  # fmt: skip
    with pytest.raises(RemoteProtocolError) as caught:
        check_from_coordinator(theta, RUN, (Stage,))
    assert caught.value.field == "type"


# ---- a stream worker's reading of the coordinator's stage messages ------------------------


def test_the_coordinators_stage_messages_open_or_close_the_workers_stage():
    assert link_order(stage("open"), RUN) == LinkOrder(OPEN)
    assert link_order(stage("closed", detail="deadline"), RUN) == LinkOrder(
        CLOSE, "deadline", "deadline"
    )
    # no detail: the close reason says who closed; the detail stays what was said
    assert link_order(stage("closed"), RUN) == LinkOrder(
        CLOSE, "", "the coordinator closed the stage"
    )
    run_closed = "the coordinator closed the run"
    assert link_order(stage("closed", stage_name="run"), RUN) == LinkOrder(
        CLOSE, run_closed, run_closed
    )
    assert link_order(stage("closed", stage_name="run", detail="no workers"), RUN) == LinkOrder(
        CLOSE, "no workers", "no workers"
    )


@pytest.mark.parametrize(
    "message",
    [
        stage("open", stage_name="run"),
        stage("open", stage_name="dsr"),
        stage("closed", stage_name="dsr"),
    ],
    ids=["run open", "another stage open", "another stage closed"],
)
def test_the_coordinators_other_stage_messages_are_no_order(message):
    assert link_order(message, RUN) is None


# ---- the CADR coordinator's gathering of its workers' chunks ------------------------------


def test_misplaced_chunks_are_refused_naming_the_field_and_counted():
    gathering = ReleaseGathering(RUN, 2)
    gathering.receive(chunk(0, ["n0"], [1.5], final=False))
    cases = [
        (chunk(1, ["n1"], [2.0], run="other"), "type"),
        (status(run="other"), "type"),
        (stage("open"), "type"),
        (chunk(1, ["n1"], [2.0], partitions=3), "partition"),
        (status(partition=2, partitions=3), "partition"),
        (chunk(1, ["n0"], [2.0]), "devices"),  # n0 came from partition 0 already
        (chunk(1, ["n1", "n1"], [2.0, 2.0]), "devices"),
        (chunk(1, ["n1"], [2.0], refusals=[CadrRefusal(device="n1", request="dsr")]),
         "devices"),
    ]  # fmt: skip
    for message, field in cases:
        with pytest.raises(RemoteProtocolError) as caught:
            gathering.receive(message)
        assert caught.value.field == field
    gathering.receive(chunk(0, ["n2"], [3.0], rejected=2, duplicates=1))  # the final one
    with pytest.raises(RemoteProtocolError) as caught:
        gathering.receive(chunk(0, ["n3"], [3.0]))
    assert caught.value.field == "final"
    gathering.refuse_undecodable()
    assert gathering.refused == len(cases) + 2
    assert gathering.values == {"n0": 1.5, "n2": 3.0} and gathering.final == {0}
    assert (gathering.rejected, gathering.duplicates) == (2, 1)
    # partition 1's refused chunks were well placed: it listens, but sent nothing valid
    assert gathering.ready == {0, 1} and gathering.all_ready and not gathering.all_final


def test_statuses_and_final_chunks_of_every_partition_complete_the_gathering():
    gathering = ReleaseGathering(RUN, 2)
    gathering.receive(status(1))
    assert gathering.ready == {1} and not gathering.all_ready
    refusal = CadrRefusal(device="n9", request="dsr", requested=1.0, remaining=0.5)
    gathering.receive(chunk(0, ["n0"], [1.0], refusals=[refusal]))
    gathering.receive(chunk(1, [], [], theta=8))
    assert gathering.all_ready and gathering.all_final and gathering.thetas == {7, 8}
    assert gathering.refusals == {
        "n9": {"request": "dsr", "round": refusal.round, "requested": 1.0,
               "remaining": 0.5, "reason": refusal.reason}
    }  # fmt: skip
    assert gathering.refused == 0
