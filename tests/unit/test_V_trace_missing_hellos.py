"""A trace whose recorder missed hellos says so (helper V): 10,000 devices through
gateways in 4 shards on a shared, loaded Mosquitto (default ``max_queued_messages 1000``)
ended with 0 lost, ``trace_complete`` true, ``missing_reports`` 0 and no warning, while
Mosquitto's log said "Outgoing messages are being dropped for client ...-recorder" and
``ldpfleet trace verify`` found 550 mismatches: 55 devices' reports ``no_hello``. The same
command alone: clean. results.json ``trace.missing_hellos`` now counts them, and
``warnings`` names the cause."""

import shutil
import sqlite3

from ldpfleet.broker.trace import hellos_missing_from_trace
from ldpfleet.scenarios.stream_document import trace_gap_warnings

import ldpfleet


def test_hellos_the_recorder_missed_are_counted_and_warned(tmp_path):
    results = ldpfleet.run("quickstart", broker="memory", out_dir=tmp_path / "run")
    assert results["trace"]["missing_hellos"] == 0 and results["warnings"] == []
    trace = tmp_path / "lossy.sqlite"
    shutil.copy(tmp_path / "run" / "trace.sqlite", trace)
    with sqlite3.connect(trace) as db:
        gone = db.execute(
            "DELETE FROM messages WHERE kind = 'hello' AND sender IN ('d0003', 'd0017', 'd0042')"
        ).rowcount
    assert gone >= 3
    assert hellos_missing_from_trace(trace, tmp_path / "run" / "collector.sqlite") == 3
    (said,) = trace_gap_warnings({"missing_hellos": 3, "missing_reports": 0})
    assert "lacks 3 devices' hellos" in said and "max_queued_messages" in said
    assert trace_gap_warnings({"missing_hellos": 0, "missing_reports": None}) == []
