"""``ldpfleet watch``'s board (issue 22): the stage column names the stage of every kind of
run (stream stages, secure-aggregation rounds, CADR-LDP phases, GC-DP releases), and the
table shows whole run ids however narrow the terminal."""

from __future__ import annotations

import io

import pytest
from ldpfleet.app.watch import FleetWatch, stage_of
from rich.console import Console


@pytest.mark.parametrize(
    ("kind", "payload", "stage"),
    [
        ("stage", b'{"type":"stage","stage":"stream","state":"open"}', "stream open"),
        ("stage", b'{"type":"stage","stage":"run","state":"closed"}', "run closed"),
        ("sa_shares", b"{}", "secagg round 1: ShareKeys"),
        ("sa_unmask_request", b"{}", "secagg round 3: Unmask"),
        ("relay_phase", b'{"type":"relay_phase","phase":"lpea","until_quiet":true}', "cadr: lpea"),
        ("cadr_query", b"{}", "cadr: θ search"),
        ("degree_release", b"{}", "cadr: degrees released"),
        ("gcdp_release", b"{}", "gcdp: releasing"),
        ("run_open", b"{}", "announced"),
    ],
)
def test_the_stage_of_every_kind_of_run(kind, payload, stage):
    assert stage_of(kind, payload) == stage


def test_data_messages_and_garbage_leave_the_stage_alone():
    assert stage_of("sw_report", b"{}") is None
    assert stage_of("stage", b"\xff not json") is None
    assert stage_of("relay_phase", b"{}") is None
    board = FleetWatch()
    board.observe("ldp/r1/ctl/stage", b'{"type":"stage","stage":"stream","state":"open"}', 1.0)
    board.observe("ldp/r1/up/d0001/sw_report", b'{"type":"sw_report"}', 2.0)
    assert board.summary()["r1"]["stage"] == "stream open"


def test_whole_run_ids_on_a_narrow_terminal():
    board = FleetWatch()
    long_ids = ["occupancy-release-bd142d", "facebook-degrees-5da555"]
    for run in long_ids:
        board.observe(f"ldp/{run}/ctl/cadr_plan", b'{"type":"cadr_plan"}', 1.0)
    text = io.StringIO()
    Console(file=text, width=80, color_system=None).print(board.render())
    rendered = text.getvalue()
    for run in long_ids:
        assert run in rendered, rendered
    assert "cadr: plan" in rendered
