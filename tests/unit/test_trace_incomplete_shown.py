"""A run whose trace is incomplete says so where a user looks: the summary table, a
``warning:`` line, and report.html's outcome.

Before: a run whose recorder missed the collector's final 'run closed' (results.json
``trace_complete: false``, ``trace_incomplete_reason`` set) printed "trace messages 232"
beside "devices complete 100 / 100" and nothing else (seen after a SIGINT reached the
collector side of an embedded run whose parent ignored it); report.html said "complete".
"""

import io

from ldpfleet.app import cli, cli_summary, report
from rich.console import Console

REASON = (
    "the collector's final 'run closed' message did not reach the recorder within "
    "finish_grace (5 s)"
)


def _results(**over) -> dict:
    results = {
        "run": "r1",
        "broker": {"kind": "embedded"},
        "stages": {"stream": {"status": "complete", "seconds": 1.0}},
        "devices": 4,
        "devices_complete": 4,
        "reports_received": 8,
        "reports_expected": 8,
        "reports_lost": 0,
        "reports_rejected": 0,
        "trace": {"messages": 5},
        "trace_complete": False,
        "trace_incomplete_reason": REASON,
        "warnings": [],
    }
    return {**results, **over}


def _render(renderable) -> str:
    console = Console(file=io.StringIO(), width=300, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def test_the_summary_table_marks_an_incomplete_trace():
    assert "5 (incomplete)" in _render(cli._summary_table(_results()))
    complete = _results(trace_complete=True, trace_incomplete_reason=None)
    assert "incomplete" not in _render(cli._summary_table(complete))


def test_a_warning_line_gives_the_reason(monkeypatch):
    out = Console(file=io.StringIO(), width=400, color_system=None)
    # the console _print_warnings prints on is app/cli_summary.py's (patched where looked up)
    monkeypatch.setattr(cli_summary, "console", out)
    cli._print_warnings(_results())
    text = out.file.getvalue()
    assert text.startswith("warning: the trace is incomplete: ")
    assert REASON in text and "results.json trace_complete" in text
    out.file.truncate(0)
    out.file.seek(0)
    # no recorder ([collector] trace = "none"): trace_complete is false with no reason
    cli._print_warnings(_results(trace_incomplete_reason=None))
    cli._print_warnings(_results(trace_complete=True, trace_incomplete_reason=None))
    assert out.file.getvalue() == ""


def test_report_outcome_is_a_warning():
    css, text = report._status(_results())
    assert css == "warn" and text.startswith("the trace is incomplete: ") and REASON in text
    assert report._status(_results(trace_complete=True, trace_incomplete_reason=None)) == (
        "ok",
        "complete",
    )
    # lost reports stay the headline
    assert report._status(_results(reports_lost=3))[1].startswith("incomplete: 3 reports lost")
