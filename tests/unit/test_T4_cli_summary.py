"""Gaps found by helper T4's planted-bug hunt in what ``ldpfleet run`` prints after a run
(app/cli_summary.py): every row of the summary table, the rejection sentence and the
device-error clause carry the figure of their own results.json key. The existing tests
rendered the table for its accuracy row and the trace mark only; each test below names
the mutants it kills."""

from __future__ import annotations

import io

import pytest
from ldpfleet.app import cli_summary
from rich.console import Console


def _render(renderable) -> str:
    console = Console(file=io.StringIO(), width=400, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def _rows(results: dict) -> dict[str, str]:
    """The summary table's rows as ``{label: value}``, whitespace collapsed."""
    rows = {}
    for line in _render(cli_summary._summary_table(results)).splitlines():
        cells = [c.strip() for c in line.strip("│┃| ").split("│")]
        if len(cells) == 2 and cells[0]:
            rows[" ".join(cells[0].split())] = " ".join(cells[1].split())
    return rows


def _results(**over) -> dict:
    """A stream run's results.json with a different number in every counter, so that a
    row reading another key shows it."""
    results = {
        "run": "r1",
        "broker": {"kind": "memory"},
        "stages": {"stream": {"status": "incomplete", "seconds": 2.5}},
        "devices": 7,
        "devices_complete": 6,
        "reports_received": 40,
        "reports_expected": 44,
        "reports_lost": 3,
        "reports_rejected": 1,
        "trace": {"messages": 99},
        "warnings": [],
    }
    return {**results, **over}


def test_the_delivery_rows_show_their_own_counts():
    """Kills CS1 (``reports lost`` showing ``reports_rejected``) and CS2 (``reports
    received`` out of ``devices`` instead of ``reports_expected``)."""
    rows = _rows(_results())
    assert rows["devices complete"] == "6 / 7"
    assert rows["reports received"] == "40 / 44"
    assert rows["reports lost"] == "3"
    assert rows["reports rejected"] == "1"
    assert rows["stream stage"] == "incomplete in 2.50 s"
    assert rows["trace messages"] == "99"


def test_the_period_accuracy_is_a_percentage():
    """Kills CS3: results.json ``reconstruction.period_accuracy`` is a share (0.75), the
    summary prints it as a percentage (75%), not 1%."""
    reconstruction = {"method": "cpr", "streams": 4, "seconds": 1.0, "period_accuracy": 0.75}
    rows = _rows(_results(reconstruction=reconstruction))
    assert rows["reconstruction (cpr)"] == "4 streams in 1.00 s, period accuracy 75%"


def test_the_central_release_row_gives_each_epsilon_its_own_value():
    """Kills CS4: the GC-DP row printed ε_rel where it says ``eps_cal``; the two budgets
    differ in every real run (a reading's loss is their sum)."""
    gcdp = {
        "method": "gcdp",
        "eps_rel": 1.5,
        "eps_cal": 0.25,
        "windows_released": 3,
        "windows_expected": 4,
        "accuracy": {"mae": 0.1, "mae_clipped": 0.09},
    }
    rows = _rows(_results(gcdp=gcdp))
    value = rows["central release (gcdp, eps_rel 1.5 per window)"]
    assert value.startswith("3/4 windows, eps_cal 0.25, MAE 0.1 (0.09 clipped")


def test_the_secure_sum_row_counts_the_survivors():
    """Kills CS10: ``survivors/devices`` printed ``devices/devices`` (a sum over fewer
    devices than joined read as a full one)."""
    secure = {"graph": "complete", "dim": 3, "aborted": None, "survivors": 5, "devices": 7,
              "exact": True, "seconds": 0.5}  # fmt: skip
    rows = _rows(_results(secure_sum=secure))
    assert rows["secure sum (complete, dim 3)"] == "5/7 survivors, exact=True, 0.50 s"


def _rejection(kind: str, seq: int) -> dict:
    return {"kind": kind, "seq": seq, "field": "values", "reason": "out of range",
            "code": "domain"}  # fmt: skip


def test_the_rejection_sentence_names_the_first_device_and_counts_the_others():
    """Kills CS6 (the last device named as the first, ``max``) and CS7 (the first device
    counted again among the "more")."""
    results = {"device_rejections": {"d0003": _rejection("sw_report", 4),
                                     "d0001": _rejection("sw_report", 2),
                                     "d0002": _rejection("hello", 0)}}  # fmt: skip
    sentence = cli_summary._rejection_sentence(results)
    assert sentence.startswith("device d0001 stopped: the collector rejected its sw_report #2")
    assert "; 2 more: d0002, d0003;" in sentence


def test_the_device_error_clause_counts_the_other_devices(monkeypatch):
    """Kills CS8: "the other N with --verbose" counted the first device too."""
    monkeypatch.setitem(cli_summary._state, "verbose", False)
    clause = cli_summary._device_errors_clause({"d0002": "E2", "d0001": "E1", "d0003": "E3"})
    assert clause == (
        "; 3 device(s) failed (the first, d0001: E1; the other 2 with --verbose and in "
        "results.json fleet.device_errors)"
    )


@pytest.mark.parametrize(
    ("close_reason", "said"),
    [(f"{cli_summary.STAGE_DEADLINE_REASON} after 30 s", True), ("all devices done", False)],
)
def test_the_deadline_clause_only_for_a_stage_its_deadline_closed(close_reason, said):
    """Kills CS9: the clause said for every run (or never)."""
    results = {"stages": {"stream": {"close_reason": close_reason}}}
    clause = cli_summary._deadline_clause(results, 30.0)
    assert (clause == "; the stage closed at its deadline, [collector] stage_timeout = 30 s "
            "(raise it if the fleet needs longer)") is said  # fmt: skip
    assert (clause == "") is not said
