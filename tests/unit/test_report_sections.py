"""The report's ledger and scenario sections on runs nobody looked at closely: a GC-DP run
whose devices stream raw readings (they spend nothing; the collector's release spends
ε_rel per window), and scenario keys whose value is null."""

from __future__ import annotations

import re

import pytest
from ldpfleet.app.report import _ledger_section, _scenario_section


def _raw_account() -> dict:
    return {"kind": "raw", "eps": 0.0, "spent": 0.0, "total_spent": 0.0,
            "max_window_spent": 0.0, "charges": 0, "refusals": 0,
            "curator_account": "gcdp_release"}  # fmt: skip


def _gcdp_run() -> tuple[dict, dict]:
    """results.json / ledger.json of scenarios/occupancy-release.toml, trimmed: the
    ledger's top-level eps/w are the central release's (gcdp.eps_rel, gcdp.window)."""
    results = {
        "stream": {"mechanism": "raw", "eps": 1.0, "w": 30, "eps0": 0.0},
        "gcdp": {"method": "gcdp", "window": 30, "eps_rel": 1.0, "eps_cal": 0.0},
    }
    ledger = {
        "eps": 1.0, "w": 30, "max_window_spent": 0.0, "within_budget": True, "refusals": 0,
        "devices": {f"d{i:04d}": {"owner": f"d{i:04d}", "accounts": {"stream": _raw_account()}}
                    for i in range(3)},
        "collector": {"owner": "collector", "accounts": {"gcdp_release": {
            "kind": "w-event", "eps": 1.0, "w": 1, "charges": 60, "total_spent": 60.0,
            "max_window_spent": 1.0, "refusals": 0}},
            "eps_cal": 0.0, "eps_rel": 1.0, "per_record_loss": 1.0},
    }  # fmt: skip
    return results, ledger


def _rows(page: str) -> dict[str, str]:
    return dict(re.findall(r"<tr><td>([^<]*)</td><td[^>]*>([^<]*)</td></tr>", page))


def test_a_raw_gcdp_ledger_states_the_devices_spent_nothing_and_the_central_release():
    """The ledger section of a GC-DP run said "budget ε 1" and "every device spent ε = 0
    in its worst window (budget ε = 1)": the devices had no budget (a raw account, 0);
    the 1 is the collector's ε_rel per window."""
    results, ledger = _gcdp_run()
    page = _ledger_section(results, ledger)
    rows = _rows(page)
    assert "budget ε" not in rows, rows
    assert rows["device budget ε"] == "0 (raw readings: nothing privatised on the devices)"
    assert rows["central release ε_rel per window"] == "1"
    assert rows["release window (steps)"] == "30"
    assert rows["calibration ε_cal"] == "0"
    assert rows["per-record loss (ε_cal + ε_rel)"] == "1"
    assert rows["windows released (charges)"] == "60"
    assert "budget ε = 1" not in page, page


def test_an_ldp_ledger_keeps_its_budget_row():
    results, ledger = _gcdp_run()
    results = {"stream": {"mechanism": "sw", "eps": 2.0, "w": 10}}
    account = {"kind": "w-event", "eps": 2.0, "w": 10, "max_window_spent": 2.0,
               "total_spent": 8.0, "refusals": 0}  # fmt: skip
    ledger = {"eps": 2.0, "w": 10, "devices": {"d0": {"accounts": {"stream": account}}}}
    rows = _rows(_ledger_section(results, ledger))
    assert rows["budget ε"] == "2" and rows["window w"] == "10"


def test_scenario_keys_with_a_null_value_are_shown():
    """A key whose value is None (e.g. [stream] eps of a raw run, [source] path unset) was
    dropped from the scenario-keys table, so the table was not the scenario as run."""
    results = {"scenario": {"name": "x", "spec": {
        "stream": {"mechanism": "raw", "eps": None, "w": None},
        "broker": {"url": "embedded"},
    }}}  # fmt: skip
    page = _scenario_section(results)
    rows = _rows(page)
    assert rows["[stream] eps"] == "none" and rows["[stream] w"] == "none", rows
    assert "Scenario keys (4," in page


# ---- results.json / ledger.json of a shape the page cannot read: one sentence -----------


def _run_dir(tmp_path, results: dict, ledger: dict | None = None):
    import json

    (tmp_path / "results.json").write_text(json.dumps(results))
    if ledger is not None:
        (tmp_path / "ledger.json").write_text(json.dumps(ledger))
    return tmp_path


@pytest.mark.parametrize(
    ("results", "needle"),
    [
        ({"scenario": "x"}, "'scenario' must be an object, got a str"),
        ({"stream": 5}, "'stream' must be an object, got a int"),
        ({"per_device": [1]}, "'per_device' must be an object, got a list"),
        ({"devices": "x", "devices_complete": 1}, "'devices' must be a number, got a str"),
        ({"clipped_share": {}}, "'clipped_share' must be a number"),
        ({"scenario": {"spec": None, "name": "n"}, "stages": {"stream": "x"}},
         "'stages.stream' must be an object"),
        ({"secure_sum": {"dim": 2, "dropped_devices": -1}},
         "'secure_sum.dropped_devices' must be a list"),
    ],
)  # fmt: skip
def test_a_results_json_of_another_shape_is_one_sentence(tmp_path, results, needle):
    """Each was an AttributeError or TypeError traceback from deep inside a section."""
    from ldpfleet.app.report import build_report
    from ldpfleet.broker.trace import TraceError

    with pytest.raises(TraceError, match=re.escape(needle)):
        build_report(_run_dir(tmp_path, results))


def test_null_sections_are_absent_sections(tmp_path):
    """``"scenario": null`` (and any other null section) was a traceback; it is now read as
    an absent section."""
    from ldpfleet.app.report import build_report

    nulls = dict.fromkeys(("scenario", "stream", "stages", "accuracy", "warnings"))
    page = build_report(_run_dir(tmp_path, {**nulls, "run": "r1", "clipped_share": 0.0}))
    assert "run r1" in page


@pytest.mark.parametrize(
    ("ledger", "needle"),
    [
        ({"eps": "x"}, "'eps' must be a number, got a str"),
        ({"devices": "x"}, "'devices' must be an object"),
        ({"devices": {"d0": None}}, "'devices.d0' must be an object, got a NoneType"),
        ({"devices": {"d0": {"accounts": {"stream": {"max_window_spent": "1"}}}}},
         "'devices.d0.accounts.stream.max_window_spent' must be a number"),
        ({"collector": {"accounts": "x"}}, "'collector.accounts' must be an object"),
    ],
)  # fmt: skip
def test_a_ledger_json_of_another_shape_is_one_sentence(tmp_path, ledger, needle):
    from ldpfleet.app.report import build_report
    from ldpfleet.broker.trace import TraceError

    results, _ = _gcdp_run()
    with pytest.raises(TraceError, match=re.escape(needle)):
        build_report(_run_dir(tmp_path, results, ledger))


def test_a_report_html_that_cannot_be_written_is_one_sentence(tmp_path):
    """A folder named report.html in the run directory was an IsADirectoryError traceback."""
    from ldpfleet.app.report import write_report
    from ldpfleet.broker.trace import TraceError

    run = _run_dir(tmp_path, {"run": "r1"})
    (run / "report.html").mkdir()
    with pytest.raises(TraceError, match=r"cannot write .*report\.html"):
        write_report(run)


def test_a_collector_side_secure_sum_is_not_called_inexact():
    """The collector side of a split run does not know the devices' vectors: its
    ``exact`` is null, and the headline said "secure sum NOT exact over 6 survivors"."""
    from ldpfleet.app.report import _accuracy_figures

    secure = {"dim": 4, "graph": "harary", "devices": 8, "survivors": 6, "aborted": None}
    (figure,) = _accuracy_figures({"secure_sum": {**secure, "exact": None}})
    assert "NOT exact" not in figure and "exactness" in figure, figure
    assert _accuracy_figures({"secure_sum": {**secure, "exact": False}}) == [
        "secure sum NOT exact over 6 survivors"
    ]


def test_a_partition_coordinator_says_what_it_ran():
    """A partitioned collector's coordinator writes counters, not a stream section: the
    headline read "aclrun: — devices × — steps, ?, ε = — over any — steps"."""
    from ldpfleet.app.report import _headline

    counters = {"devices": 12, "devices_complete": 12, "reports_expected": 120,
                "reports_received": 120, "reports_lost": 0, "reports_rejected": 0}  # fmt: skip
    results = {"run": "r1", "partitions": 2, "counters": counters, "complete": True,
               "close_reason": "every device delivered every report",
               "scenario": {"name": "aclrun"}, "seconds": 1.79,
               "broker": {"kind": "mqtt", "url": "mqtt://127.0.0.1:42003"}}  # fmt: skip
    page = _headline(results, None)
    assert "—" not in page and "?" not in page, page
    assert "coordinator of 2 collector partitions" in page
    assert "12 / 12" in page and "0</span> of 120" in page


@pytest.mark.parametrize("content", [b"x\n", b"PK\x03\x04 truncated zip"])
def test_an_unreadable_reconstructions_npz_is_one_sentence(tmp_path, content):
    """A reconstructions.npz that is not one (a run stopped while writing it, a stray
    file) was a numpy ValueError/BadZipFile traceback ("contains pickled data")."""
    from ldpfleet.app.report import build_report
    from ldpfleet.broker.trace import TraceError

    run = _run_dir(tmp_path, {"run": "r1", "reconstruction": {"method": "cpr"}})
    (run / "reconstructions.npz").write_bytes(content)
    with pytest.raises(TraceError, match=r"reconstructions\.npz cannot be read"):
        build_report(run)


def test_a_bulk_run_says_what_ran():
    """A bulk-gateway run's results.json (kind "bulk-stream") keeps its plan apart: the
    headline read "run: — devices × — steps, ?, ε = — over any — steps", and once the
    coordinator headline came, it took the list of partition summaries for a count."""
    from ldpfleet.app.report import _headline

    plan = {"run": "bench-bulk-1", "devices": 50, "steps": 10, "eps": 2.0, "w": 5,
            "mechanism": "sw", "partitions": 1}  # fmt: skip
    fleet = {"ledger_charges": 500, "ledger_refusals": 0, "max_window_spent": 2.0, "eps": 2.0}
    results = {"kind": "bulk-stream", "plan": plan, "fleet": fleet, "gateways": 1,
               "broker": "embedded", "reports_expected": 100, "reports_lost": 0,
               "reports_rejected": 0, "partitions": [{"partition": 0, "devices": 50}],
               "seconds": 6.0}  # fmt: skip
    page = _headline(results, None)
    assert "bench-bulk-1: 50 devices × 10 steps, sw, ε = 2 over any 5 steps" in page, page
    assert "1 bulk gateway" in page and "coordinator" not in page
    assert "ε = 2 per 5-step window; worst spend 2 (= the budget); 0 refusals" in page


def test_the_audit_table_reads_what_audit_all_prints(tmp_path):
    """``ldpfleet audit all > OUT/audit.json`` (README) prints a JSON list: the report
    refused it ("audit.json is not a run's results (a JSON object), got a list"); an
    ``audits`` entry that is not a list gave an empty table."""
    import json

    from ldpfleet.app.report import build_report
    from ldpfleet.broker.trace import TraceError

    row = {"mechanism": "rr", "eps_claimed": 1.0, "eps_lb": 0.8, "verdict": "inconclusive"}
    run = _run_dir(tmp_path, {"run": "r1"})
    (run / "audit.json").write_text(json.dumps([row, {**row, "mechanism": "laplace"}]))
    page = build_report(run)
    assert "Privacy audit" in page and "<td>laplace</td>" in page
    (run / "audit.json").write_text(json.dumps({"audits": "x"}))
    with pytest.raises(TraceError, match=r"audit\.json.*'audits' must be a list"):
        build_report(run)
    (run / "audit.json").write_text(json.dumps([1, 2]))
    with pytest.raises(TraceError, match=r"audit\.json.*audits \(JSON objects\)"):
        build_report(run)


def _side(path, run: str, **extra) -> None:
    import json

    path.mkdir(parents=True)
    document = {"run": run, "mean_estimates": {}, "collector_ledger": None, **extra}
    (path / "results.json").write_text(json.dumps(document))


def _shard(path, run: str) -> None:
    import json

    path.mkdir(parents=True)
    (path / "outcomes.json").write_text("{}")
    (path / "ledger.json").write_text(json.dumps({"run": run, "eps": 2.0, "w": 5}))


def test_a_collector_side_says_where_the_ledgers_are(tmp_path):
    """`ldpfleet report C` of a collector side (docs/separate-processes.md) said "no
    ledger", as if nothing had been accounted; the ledgers are the fleet shards' (helper
    Q, reproduced on a quickstart split run over Mosquitto). It now says so, and names the
    shard directories of its run found beside it and the command merging them."""
    from ldpfleet.app.report import build_report

    _side(tmp_path / "c", "r7")
    _shard(tmp_path / "f0", "r7")
    _shard(tmp_path / "f1", "r7")
    _shard(tmp_path / "other", "r8")  # another run's shard is not named
    page = build_report(tmp_path / "c")
    assert "privacy</dt><dd>no ledger</dd>" not in page
    assert "the privacy ledgers live with the devices" in page
    assert f"ldpfleet report {tmp_path / 'c'} {tmp_path / 'f0'} {tmp_path / 'f1'}`" in page
    assert "other" not in page.split("found 2 shard directories")[1].split("</")[0]
    assert "<h2>Privacy ledger</h2>" in page


def test_a_collector_side_alone_names_the_command(tmp_path):
    from ldpfleet.app.report import build_report

    _side(tmp_path / "c", "r7")
    page = build_report(tmp_path / "c")
    assert "live with the devices" in page and "FLEET_DIR..." in page


def test_a_whole_run_without_a_ledger_still_says_no_ledger(tmp_path):
    from ldpfleet.app.report import build_report

    page = build_report(_run_dir(tmp_path, {"run": "r1"}))
    assert "no ledger" in page and "live with the devices" not in page


def test_the_report_command_prints_the_collector_side_note(tmp_path):
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    _side(tmp_path / "c", "r7")
    _shard(tmp_path / "f0", "r7")
    result = CliRunner().invoke(app, ["report", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert "note: no ledger here" in result.output and "found 1 shard directory" in result.output
