"""``ldpfleet trace verify DIR``: a clean run verifies (exit 0); a trace or ledger.json
tampered in each way is caught with the right reason (exit 1); unreadable input exits 2.

One run of each kind (stream, GC-DP central release, CADR-LDP) is made once per module and
copied for each tampering, so every case starts from a trace that verifies."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest
from ldpfleet.app.cli import app
from ldpfleet.app.trace_verify import verify_run
from ldpfleet.devices.graphs import generate
from ldpfleet.scenarios.cadr_run import run_cadr_fleet
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import load_scenario, parse_scenario
from typer.testing import CliRunner

from tests.conftest import ROOT

STREAM = """
[scenario]
name = "verify"
seed = 3
[fleet]
devices = 3
[stream]
steps = 24
eps = 1.0
w = 4
[source]
kind = "synthetic"
shape = "square"
period = 6
amplitude = 1.0
bounds = [-1.0, 1.0]
"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    import asyncio

    base = tmp_path_factory.mktemp("verify")

    async def make():
        await run_scenario(parse_scenario(STREAM), broker="memory", out_dir=base / "stream",
                           run_id="v1")  # fmt: skip
        release = load_scenario(ROOT / "scenarios" / "occupancy-release.toml")
        await run_scenario(release, broker="memory", out_dir=base / "gcdp", run_id="v2")
        (base / "cadr").mkdir()
        result = await run_cadr_fleet(generate("barabasi_albert", 20, seed=5, m=2), theta=3,
                                      seed=2, run="v3", trace_path=base / "cadr" / "trace.sqlite",
                                      trace="all")  # fmt: skip
        (base / "cadr" / "ledger.json").write_text(json.dumps(result["ledgers"]))

    asyncio.run(make())
    return base


def copy(runs, kind, tmp_path):
    target = tmp_path / kind
    shutil.copytree(runs / kind, target)
    return target


def edit_payloads(directory, kind: str, change, *, which: int = 0, duplicate: bool = False):
    """Rewrite (or add a changed copy of) the ``which``-th recorded message of ``kind``."""
    db = sqlite3.connect(directory / "trace.sqlite")
    row = db.execute(
        "SELECT id, payload FROM messages WHERE kind = ? ORDER BY id LIMIT 1 OFFSET ?",
        (kind, which),
    ).fetchone()
    body = json.loads(row[1])
    change(body)
    payload = json.dumps(body).encode()
    if duplicate:
        columns = [c[1] for c in db.execute("PRAGMA table_info(messages)") if c[1] != "id"]
        names = ", ".join(columns)
        db.execute(f"INSERT INTO messages({names}) SELECT {names} FROM messages WHERE id = ?",
                   (row[0],))  # fmt: skip
        db.execute("UPDATE messages SET payload = ? WHERE id = last_insert_rowid()", (payload,))
    else:
        db.execute("UPDATE messages SET payload = ? WHERE id = ?", (payload, row[0]))
    db.commit()
    db.close()


def edit_ledger(directory, change):
    path = directory / "ledger.json"
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def cli(directory):
    return CliRunner().invoke(app, ["trace", "verify", str(directory)])


@pytest.mark.parametrize("kind", ["stream", "gcdp", "cadr"])
def test_a_clean_run_verifies(runs, kind):
    report = verify_run(runs / kind)
    assert report.ok, report.mismatches
    result = cli(runs / kind)
    assert result.exit_code == 0, result.output
    assert "0 mismatch" in result.output
    checked = report.checked
    if kind == "stream":
        assert checked["sw_reports"] == 3 * 6 and checked["values"] == 3 * 24
    elif kind == "gcdp":
        assert checked["gcdp_releases"] > 0 and checked["values"] > 0
    else:
        assert checked["dsr_reports"] >= 20 and checked["degree_release_values"] == 20


def _first_device(document):
    return sorted(document["devices"])[0]


STREAM_TAMPERING = {
    "eps0": lambda d: edit_payloads(d, "sw_report", lambda b: b.update(eps0=b["eps0"] * 2)),
    "mechanism": lambda d: edit_payloads(d, "sw_report", lambda b: b.update(mechanism="sw01")),
    "conflicting_values": lambda d: edit_payloads(
        d, "sw_report", lambda b: b["values"].__setitem__(0, b["values"][1] + 0.25),
        duplicate=True),
    "no_hello": lambda d: _drop_hellos(d),
    "ledger_params": lambda d: edit_ledger(d, lambda doc: doc["devices"][_first_device(doc)]
                                           ["accounts"]["stream"].update(eps=0.5)),
    "ledger_kind": lambda d: edit_ledger(d, lambda doc: doc["devices"][_first_device(doc)]
                                         ["accounts"]["stream"].update(kind="raw")),
    "ledger_undercharged": lambda d: edit_ledger(d, lambda doc: doc["devices"][_first_device(doc)]
                                                 ["accounts"]["stream"].update(
                                                     window_spent=[0.0] * 30)),
    "no_ledger": lambda d: edit_ledger(d, lambda doc: doc["devices"].pop(_first_device(doc))),
}  # fmt: skip


def _drop_hellos(directory):
    db = sqlite3.connect(directory / "trace.sqlite")
    db.execute("DELETE FROM messages WHERE kind = 'hello' AND sender = 'd0000'")
    db.commit()
    db.close()


@pytest.mark.parametrize("reason", sorted(STREAM_TAMPERING))
def test_a_tampered_stream_trace_or_ledger_is_caught(runs, tmp_path, reason):
    directory = copy(runs, "stream", tmp_path)
    STREAM_TAMPERING[reason](directory)
    report = verify_run(directory)
    assert reason in {m.reason for m in report.mismatches}, report.mismatches
    result = cli(directory)
    assert result.exit_code == 1, result.output
    assert f": {reason}: " in result.output


GCDP_TAMPERING = {
    # a window charged twice (or not at all) in the collector's ledger
    "ledger_charges": lambda d: edit_ledger(d, lambda doc: next(iter(
        doc["collector"]["accounts"].values()))["window_spent"].__setitem__(0, 99.0)),
    "eps_rel": lambda d: edit_payloads(d, "gcdp_release",
                                       lambda b: b.update(eps_rel=b["eps_rel"] * 2)),
    "double_release": lambda d: edit_payloads(
        d, "gcdp_release", lambda b: b["values"].__setitem__(0, b["values"][0] + 1.0),
        duplicate=True),
}  # fmt: skip


@pytest.mark.parametrize("reason", sorted(GCDP_TAMPERING))
def test_a_tampered_central_release_is_caught(runs, tmp_path, reason):
    directory = copy(runs, "gcdp", tmp_path)
    GCDP_TAMPERING[reason](directory)
    assert reason in {m.reason for m in verify_run(directory).mismatches}
    assert cli(directory).exit_code == 1


CADR_TAMPERING = {
    "eps": lambda d: edit_payloads(d, "dsr_report", lambda b: b.update(eps=b["eps"] / 2)),
    "ledger_undercharged": lambda d: edit_ledger(
        d, lambda doc: doc[sorted(doc)[0]]["accounts"]["node"].update(spent=0.1)),
    "ledger_overspent": lambda d: edit_ledger(
        d, lambda doc: doc[sorted(doc)[0]]["accounts"]["node"].update(spent=9.0)),
    "conflicting_values": lambda d: edit_payloads(
        d, "degree_release", lambda b: b["values"].__setitem__(0, b["values"][0] + 1.0)),
}  # fmt: skip


@pytest.mark.parametrize("reason", sorted(CADR_TAMPERING))
def test_a_tampered_degree_release_is_caught(runs, tmp_path, reason):
    directory = copy(runs, "cadr", tmp_path)
    CADR_TAMPERING[reason](directory)
    assert reason in {m.reason for m in verify_run(directory).mismatches}
    assert cli(directory).exit_code == 1


@pytest.mark.parametrize("damage", ["no_ledger", "bad_ledger", "no_trace", "bad_trace"])
def test_unreadable_input_exits_2(runs, tmp_path, damage):
    directory = copy(runs, "stream", tmp_path)
    if damage == "no_ledger":
        (directory / "ledger.json").unlink()
    elif damage == "bad_ledger":
        (directory / "ledger.json").write_text("{not json")
    elif damage == "no_trace":
        (directory / "trace.sqlite").unlink()
    else:
        (directory / "trace.sqlite").write_bytes(b"this is not sqlite" * 100)
    result = cli(directory)
    assert result.exit_code == 2, result.output
