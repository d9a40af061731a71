"""`trace show` / `trace follow` print a report's values readably whatever their scale
(helper U3, 2026-12-07).

A mechanism whose reports live on a small scale (a plugin reporting on [0, 1e-6], about
1e-8 each) was shown as ``[-0.000, 0.000]``: the one-line summary formatted every value
with ``.3f``, so the trace said every report was zero. Values of ordinary size keep their
three decimals."""

from __future__ import annotations

import pytest
from ldpfleet.broker.trace import TraceRow, summarize
from ldpfleet.protocol import codec
from ldpfleet.protocol.messages import SwReport


def _row(values: list[float]) -> TraceRow:
    report = SwReport(
        run="r1", sender="d0001", seq=0, t0=0, mechanism="pkg.mod:Tiny", eps0=1.0, w=2,
        values=values,
    )  # fmt: skip
    payload = codec.encode(report)
    return TraceRow(
        1, 0.0, 0.0, "ldp/r1/dev/d0001/up/sw_report", "up", "d0001", "collector", "sw_report",
        0, len(payload), payload,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("values", "shown"),
    [
        ([-3e-09, 7.3e-08], "[-3e-09, 7.3e-08]"),
        ([0.0004, -0.0123], "[0.0004, -0.0123]"),
        ([0.0, 1e-300], "[0.000, 1e-300]"),
    ],
)
def test_small_reports_are_not_shown_as_zero(values, shown):
    assert summarize(_row(values)).endswith(shown)


def test_ordinary_reports_keep_three_decimals():
    line = summarize(_row([0.5, -1.25, 109.0, -2140.0, 7.0]))
    assert line.endswith("n=5 [0.500, -1.250, 109.000, -2140.000, ...]")
