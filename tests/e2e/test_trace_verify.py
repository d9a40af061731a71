"""``ldpfleet trace verify DIR [DIR ...]``: a clean run verifies (exit 0); a trace, ledger or
results.json tampered in each way is caught with the right reason and row (exit 1);
unreadable input exits 2.

One run of each kind (stream, GC-DP central release, CADR-LDP with a full and a control
trace, a sharded stream run, a separate collector side + two fleet shards) is made once per
module and copied for each tampering, so every case starts from a run that verifies."""

from __future__ import annotations

import asyncio
import json
import shutil
import sqlite3

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from ldpfleet.app.cli import app
from ldpfleet.app.trace_verify import verify_run
from ldpfleet.broker.trace import chain_next, genesis, row_bytes, signed_message
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import load_scenario, parse_scenario
from ldpfleet.scenarios.sides import collector_side, fleet_side
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
SHARDED = STREAM.replace("devices = 3", "devices = 4\nshards = 2")
CADR = """
[scenario]
name = "verify-degrees"
seed = 2
[graph]
source = "barabasi_albert:n=20,m=2,seed=5"
[cadr]
theta = 3
trace = "{trace}"
[broker]
url = "memory"
"""
SAFETY = 60.0


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("verify")

    async def make():
        await run_scenario(parse_scenario(STREAM), broker="memory", out_dir=base / "stream",
                           run_id="v1")  # fmt: skip
        release = load_scenario(ROOT / "scenarios" / "occupancy-release.toml")
        await run_scenario(release, broker="memory", out_dir=base / "gcdp", run_id="v2")
        for trace in ("all", "control"):
            await run_scenario(parse_scenario(CADR.format(trace=trace)), broker="memory",
                               out_dir=base / f"cadr-{trace}", run_id=f"v3{trace}")  # fmt: skip
        # the dp pipeline's θ search (no given θ): DSR gets (1 - alpha - extra) eps
        searched = CADR.format(trace="all").replace("theta = 3\n", "")
        await run_scenario(parse_scenario(searched), broker="memory", out_dir=base / "cadr-dp",
                           run_id="v3dp")  # fmt: skip
        await run_scenario(parse_scenario(SHARDED), broker="embedded", out_dir=base / "sharded",
                           run_id="v4")  # fmt: skip
        # a collector side and two fleet shards: shard 0 writes into the collector's
        # directory (the default runs/RUN/fleet-0-of-2), shard 1 elsewhere
        scenario, transport = parse_scenario(STREAM), MemoryTransport()
        sides = base / "sides"
        await asyncio.gather(
            fleet_side(scenario, transport, "v5", (0, 2), sides / "c" / "fleet-0-of-2",
                       wait_timeout=SAFETY),
            collector_side(scenario, transport, "v5", sides / "c", fleet_timeout=SAFETY),
            fleet_side(scenario, transport, "v5", (1, 2), sides / "f1", wait_timeout=SAFETY),
        )  # fmt: skip

    asyncio.run(make())
    return base


def copy(runs, kind, tmp_path):
    target = tmp_path / kind
    shutil.copytree(runs / kind, target)
    return target


def connect(directory):
    return sqlite3.connect(directory / "trace.sqlite")


def row_of(directory, kind: str, which: int = 0) -> tuple[int, dict]:
    """(id, decoded payload) of the ``which``-th recorded message of ``kind``."""
    with connect(directory) as db:
        row = db.execute(
            "SELECT id, payload FROM messages WHERE kind = ? ORDER BY id LIMIT 1 OFFSET ?",
            (kind, which),
        ).fetchone()
    return row[0], json.loads(row[1])


def edit_payloads(directory, kind: str, change, *, which: int = 0, duplicate: bool = False):
    """Rewrite (or add a changed copy of) the ``which``-th recorded message of ``kind``;
    returns the id of the row changed or added."""
    row_id, body = row_of(directory, kind, which)
    change(body)
    payload = json.dumps(body).encode()
    db = connect(directory)
    if duplicate:
        columns = [c[1] for c in db.execute("PRAGMA table_info(messages)") if c[1] != "id"]
        names = ", ".join(columns)
        db.execute(f"INSERT INTO messages({names}) SELECT {names} FROM messages WHERE id = ?",
                   (row_id,))  # fmt: skip
        db.execute("UPDATE messages SET payload = ? WHERE id = last_insert_rowid()", (payload,))
        row_id = db.execute("SELECT last_insert_rowid()").fetchone()[0]
    else:
        db.execute("UPDATE messages SET payload = ? WHERE id = ?", (payload, row_id))
    db.commit()
    db.close()
    return row_id


def edit_ledger(directory, change, name="ledger.json"):
    path = directory / name
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def edit_results(directory, change):
    edit_ledger(directory, change, "results.json")


def rechain(directory, key: Ed25519PrivateKey | None = None) -> str:
    """What a forger with the database does: recompute every row's chain and, with a key,
    sign the new head with it and store that key in the trace. Returns the key (hex)."""
    db = connect(directory)
    meta = dict(db.execute("SELECT key, value FROM meta"))
    head = genesis(meta["run"])
    rows = list(db.execute("SELECT id, time, topic, family, sender, recipient, kind, seq, "
                           "bytes, payload FROM messages ORDER BY id"))  # fmt: skip
    for n, row in enumerate(rows, 1):
        fixed = (n, *row[1:])
        head = chain_next(head, row_bytes(*fixed))
        db.execute("UPDATE messages SET id = ?, chain = ? WHERE id = ?", (n, head, row[0]))
    public = meta["public_key"]
    if key is not None:
        public = key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw).hex()
        message = signed_message(meta["run"], len(rows), head, meta["scenario_digest"])
        updates = {"rows": str(len(rows)), "head": head.hex(), "public_key": public,
                   "signature": key.sign(message).hex()}  # fmt: skip
        db.executemany("UPDATE meta SET value = ? WHERE key = ?",
                       [(v, k) for k, v in updates.items()])  # fmt: skip
    db.commit()
    db.close()
    return public


def cli(*args):
    return CliRunner().invoke(app, ["trace", "verify", *map(str, args)])


def caught(directory, reason, row=None, *, extra=(), public_key=None):
    """verify_run and the CLI both report ``reason`` (at ``row``) and the CLI exits 1."""
    report = verify_run([directory, *extra], public_key=public_key)
    found = [m for m in report.mismatches if m.reason == reason]
    assert found, report.mismatches
    if row is not None:
        assert row in {m.row for m in found}, found
    result = cli(directory, *extra, *(["--public-key", public_key] if public_key else []))
    assert result.exit_code == 1, result.output
    assert f": {reason}: " in result.output
    if row is not None:
        assert f"MISMATCH row {row} " in result.output
    return report


# ---- clean runs ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind", ["stream", "gcdp", "cadr-all", "cadr-dp", "cadr-control", "sharded"]
)
def test_a_clean_run_verifies(runs, kind):
    report = verify_run(runs / kind)
    assert report.ok, report.mismatches
    result = cli(runs / kind)
    assert result.exit_code == 0, result.output
    assert "0 mismatch" in result.output
    results = json.loads((runs / kind / "results.json").read_text())
    assert report.public_key == results["trace"]["public_key"]
    assert f"key: {report.public_key}" in result.output
    checked = report.checked
    assert checked["signature"] == 1 and checked["rows"] > 0
    if kind == "stream":
        assert checked["sw_reports"] == 3 * 6 and checked["values"] == 3 * 24
        assert checked["values_in_domain"] == 3 * 24 and checked["stored_reports"] == 3 * 6
        assert checked["ledger_accounts"] == 3
    elif kind == "sharded":
        assert checked["sw_reports"] == 4 * 6 and checked["stored_reports"] == 4 * 6
        assert any("shards" in path for path in report.ledgers)  # the shards' ledgers too
    elif kind == "gcdp":
        assert checked["gcdp_releases"] > 0 and checked["values"] > 0
    elif kind in ("cadr-all", "cadr-dp"):
        assert checked["dsr_reports"] >= 20 and checked["degree_release_values"] == 20
        assert checked["cadr_plans"] == 1 and checked["ledger_accounts"] == 20
    else:  # a control trace: what is not checked is said
        assert checked["dsr_reports"] == 0 and checked["degree_release_values"] == 20
        assert any("not recorded" in note for note in report.notes)
        assert "not checked: CADR-LDP" in result.output


def test_a_separate_process_run_verifies_with_the_fleet_directories(runs):
    collector, elsewhere = runs / "sides" / "c", runs / "sides" / "f1"
    results = json.loads((collector / "results.json").read_text())
    assert results["trace"]["public_key"]
    report = verify_run([collector, elsewhere])
    assert report.ok, report.mismatches
    assert report.checked["sw_reports"] == 3 * 6 and report.checked["stored_reports"] == 3 * 6
    assert len(report.ledgers) == 2  # fleet-0-of-2/ found by itself, f1 given
    assert cli(collector, elsewhere).exit_code == 0
    # without the shard written elsewhere, its devices have no ledger
    caught(collector, "no_ledger")


def test_the_run_prints_the_public_key(tmp_path):
    path = tmp_path / "s.toml"
    path.write_text(STREAM)
    result = CliRunner().invoke(
        app, ["run", str(path), "--broker", "memory", "--out", str(tmp_path / "out")]
    )
    assert result.exit_code == 0, result.output
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    assert f"trace public key: {results['trace']['public_key']}" in result.output


# ---- forged traces (issue 21) -------------------------------------------------------------


def test_deleting_a_report_row_is_caught(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    row_id, _ = row_of(d, "sw_report", 3)
    with connect(d) as db:
        db.execute("DELETE FROM messages WHERE id = ?", (row_id,))
    caught(d, "row_missing", row_id)
    caught(d, "untraced_report")  # the collector stored it


def test_changing_a_value_inside_the_domain_is_caught(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    row_id = edit_payloads(d, "sw_report", lambda b: b["values"].__setitem__(0, b["values"][1]))
    caught(d, "chain_broken", row_id)
    caught(d, "stored_differs", row_id)


def test_a_value_outside_the_output_domain_is_caught(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    row_id = edit_payloads(d, "sw_report", lambda b: b["values"].__setitem__(0, 100.0))
    caught(d, "chain_broken", row_id)
    caught(d, "out_of_domain", row_id)


def test_duplicating_a_row_is_caught(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    row_id = edit_payloads(d, "sw_report", lambda b: None, duplicate=True)
    caught(d, "chain_broken", row_id)
    caught(d, "unsigned_rows", row_id)


def test_a_garbled_payload_is_caught(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    row_id, _ = row_of(d, "sw_report", 2)
    with connect(d) as db:
        db.execute("UPDATE messages SET payload = ? WHERE id = ?", (b"\x00garbled{", row_id))
    report = caught(d, "chain_broken", row_id)
    assert report.checked["undecodable"] == 1


def test_swapping_a_senders_report_is_caught(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    row_id, body = row_of(d, "sw_report", 0)
    other = "d0001" if body["sender"] != "d0001" else "d0002"
    topic = f"ldp/v1/dev/{other}/up/sw_report"
    body["sender"] = other
    with connect(d) as db:
        db.execute("UPDATE messages SET payload = ?, sender = ?, topic = ? WHERE id = ?",
                   (json.dumps(body).encode(), other, topic, row_id))  # fmt: skip
    caught(d, "chain_broken", row_id)
    caught(d, "untraced_report")  # the real sender's stored batch
    caught(d, "conflicting_values")  # the other device's batch, twice


def _five_times(d):
    """eps0 of every report, eps of the hellos and the first device's ledger, all 5x."""
    db = connect(d)
    for row_id, payload in list(db.execute(
            "SELECT id, payload FROM messages WHERE kind IN ('hello', 'sw_report')")):  # fmt: skip
        body = json.loads(payload)
        body["eps0"] *= 5
        if body["type"] == "hello":
            body["eps"] *= 5
        db.execute("UPDATE messages SET payload = ? WHERE id = ?",
                   (json.dumps(body).encode(), row_id))  # fmt: skip
    db.commit()
    db.close()

    def ledger(doc):
        doc["eps"] *= 5
        for entry in doc["devices"].values():
            account = entry["accounts"]["stream"]
            account["eps"] *= 5
            account["window_spent"] = [x * 5 for x in account["window_spent"]]
            account["max_window_spent"] *= 5

    edit_ledger(d, ledger)


def test_raising_eps_in_the_trace_and_the_ledger_together_is_caught(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    _five_times(d)
    first_hello, _ = row_of(d, "hello")
    caught(d, "hello_scenario", first_hello)
    caught(d, "ledger_scenario")
    caught(d, "chain_broken", first_hello)
    # even with the chain recomputed and the trace re-signed, the key and the scenario say so
    rechain(d, Ed25519PrivateKey.generate())
    caught(d, "hello_scenario", first_hello)
    caught(d, "signature")


def test_deleting_an_inner_row_is_not_reported_as_truncation(runs, tmp_path):
    """One row deleted from the middle: the last row is still there, so the trace is not
    truncated (it was reported as "rows N-N were dropped", N the last row, present)."""
    d = copy(runs, "stream", tmp_path)
    row_id, _ = row_of(d, "sw_report", 3)
    with connect(d) as db:
        db.execute("DELETE FROM messages WHERE id = ?", (row_id,))
    report = caught(d, "row_missing", row_id)
    assert not [m for m in report.mismatches if m.reason == "truncated"], report.mismatches
    (missing,) = [m for m in report.mismatches if m.reason == "row_missing"]
    assert missing.detail == f"row(s) {row_id} deleted"  # not "; 1 more": the same deletion


def test_dropping_the_last_rows_is_caught(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    with connect(d) as db:
        (n,) = db.execute("SELECT MAX(id) FROM messages").fetchone()
        db.execute("DELETE FROM messages WHERE id > ?", (n - 5,))
    caught(d, "truncated", n - 4)


def test_a_replaced_signature_is_caught(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    with connect(d) as db:
        (signature,) = db.execute("SELECT value FROM meta WHERE key = 'signature'").fetchone()
        forged = Ed25519PrivateKey.generate().sign(b"anything").hex()
        assert forged != signature
        db.execute("UPDATE meta SET value = ? WHERE key = 'signature'", (forged,))
    caught(d, "signature")


def test_a_missing_signature_is_caught(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    with connect(d) as db:
        db.execute("DELETE FROM meta WHERE key = 'signature'")
    caught(d, "unsigned")


def test_a_chain_rewritten_without_the_key_is_caught_at_the_head(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    edit_payloads(d, "sw_report", lambda b: b["values"].__setitem__(0, b["values"][1]))
    rechain(d)  # consistent rows, the old signature
    (n,) = connect(d).execute("SELECT MAX(id) FROM messages").fetchone()
    caught(d, "chain_head", n)


def test_a_whole_trace_rewritten_with_a_new_key_is_caught_by_the_results_key(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    original = json.loads((d / "results.json").read_text())["trace"]["public_key"]
    edit_payloads(d, "sw_report", lambda b: b["values"].__setitem__(0, b["values"][1]))
    forger = rechain(d, Ed25519PrivateKey.generate())
    caught(d, "public_key")
    caught(d, "signature")
    # under the forger's key the chain and the signature hold: the key IS the anchor
    report = verify_run(d, public_key=forger)
    assert {m.reason for m in report.mismatches} == {"stored_differs"}
    # a forger who also rewrites results.json's key is caught by the key printed at the run
    edit_results(d, lambda doc: doc["trace"].update(public_key=forger))
    caught(d, "public_key", public_key=original)
    caught(d, "signature", public_key=original)


def test_a_rewritten_scenario_is_caught(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    edit_results(d, lambda doc: doc["scenario"]["spec"]["stream"].update(eps=5.0))
    caught(d, "scenario_digest")


def test_no_public_key_is_a_mismatch_unless_given(runs, tmp_path):
    d = copy(runs, "stream", tmp_path)
    key = json.loads((d / "results.json").read_text())["trace"]["public_key"]
    edit_results(d, lambda doc: doc["trace"].pop("public_key"))
    caught(d, "no_public_key")
    assert verify_run(d, public_key=key).ok
    assert cli(d, "--public-key", key).exit_code == 0


def test_a_conflicting_shard_ledger_is_caught(runs, tmp_path):
    d = copy(runs, "sharded", tmp_path)
    shard = next((d / "shards").glob("fleet-0-of-*"))
    edit_ledger(shard, lambda doc: next(iter(doc["devices"].values()))["accounts"]["stream"]
                .update(charges=0))  # fmt: skip
    caught(d, "ledger_conflict")


# ---- trace against ledger (each kind of run) ----------------------------------------------


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
    caught(directory, reason)


GCDP_TAMPERING = {
    # a window charged twice (or not at all) in the collector's ledger
    "ledger_charges": lambda d: edit_ledger(d, lambda doc: next(iter(
        doc["collector"]["accounts"].values()))["window_spent"].__setitem__(0, 99.0)),
    "eps_rel": lambda d: edit_payloads(d, "gcdp_release",
                                       lambda b: b.update(eps_rel=b["eps_rel"] * 2)),
    "double_release": lambda d: edit_payloads(
        d, "gcdp_release", lambda b: b["values"].__setitem__(0, b["values"][0] + 1.0),
        duplicate=True),
    "ledger_scenario": lambda d: edit_ledger(d, lambda doc: next(iter(
        doc["collector"]["accounts"].values())).update(eps=9.0)),
}  # fmt: skip


@pytest.mark.parametrize("reason", sorted(GCDP_TAMPERING))
def test_a_tampered_central_release_is_caught(runs, tmp_path, reason):
    directory = copy(runs, "gcdp", tmp_path)
    GCDP_TAMPERING[reason](directory)
    caught(directory, reason)


def _cadr_five_times(doc):
    for entry in doc.values():
        if not isinstance(entry, dict):  # ledger.json's "run"
            continue
        entry["accounts"]["node"]["eps"] *= 5
        entry["accounts"]["node"]["spent"] *= 5


CADR_TAMPERING = {
    "eps": lambda d: edit_payloads(d, "dsr_report", lambda b: b.update(eps=b["eps"] / 2)),
    "ledger_undercharged": lambda d: edit_ledger(
        d, lambda doc: doc[sorted(doc)[0]]["accounts"]["node"].update(spent=0.1)),
    "ledger_overspent": lambda d: edit_ledger(
        d, lambda doc: doc[sorted(doc)[0]]["accounts"]["node"].update(spent=9.0)),
    "conflicting_values": lambda d: edit_payloads(
        d, "degree_release", lambda b: b["values"].__setitem__(0, b["values"][0] + 1.0)),
    "ledger_scenario": lambda d: edit_ledger(d, _cadr_five_times),
    "plan_scenario": lambda d: edit_payloads(d, "cadr_plan", lambda b: b.update(eps=b["eps"] * 5)),
}  # fmt: skip


@pytest.mark.parametrize("reason", sorted(CADR_TAMPERING))
def test_a_tampered_degree_release_is_caught(runs, tmp_path, reason):
    directory = copy(runs, "cadr-all", tmp_path)
    CADR_TAMPERING[reason](directory)
    caught(directory, reason)


def test_a_control_trace_is_chained_and_signed(runs, tmp_path):
    d = copy(runs, "cadr-control", tmp_path)
    row_id = edit_payloads(d, "cadr_plan", lambda b: b.update(eps=b["eps"] * 5))
    caught(d, "chain_broken", row_id)
    caught(d, "plan_scenario", row_id)


@pytest.mark.parametrize("damage", ["no_ledger", "bad_ledger", "no_trace", "bad_trace",
                                    "no_results", "store_is_a_directory",
                                    "results_trace_not_an_object",
                                    "results_public_key_not_a_string"])  # fmt: skip
def test_unreadable_input_exits_2(runs, tmp_path, damage):
    directory = copy(runs, "stream", tmp_path)
    if damage == "no_ledger":
        (directory / "ledger.json").unlink()
    elif damage == "bad_ledger":
        (directory / "ledger.json").write_text("{not json")
    elif damage == "no_trace":
        (directory / "trace.sqlite").unlink()
    elif damage == "no_results":
        (directory / "results.json").unlink()
    elif damage == "store_is_a_directory":  # was a traceback (sqlite3.connect raised)
        (directory / "collector.sqlite").unlink()
        (directory / "collector.sqlite").mkdir()
    elif damage == "results_trace_not_an_object":  # was an AttributeError traceback
        edit_results(directory, lambda r: r.update(trace="x"))
    elif damage == "results_public_key_not_a_string":  # was an AttributeError traceback
        edit_results(directory, lambda r: r["trace"].update(public_key={"k": 1}))
    else:
        (directory / "trace.sqlite").write_bytes(b"this is not sqlite" * 100)
    result = cli(directory)
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: "), result.output


@pytest.mark.parametrize("key", ["zz", "00", "87" * 33])
def test_a_public_key_that_is_not_one_exits_2(runs, key):
    """--public-key zz was two mismatches (exit 1, "... under key zz... (ValueError)"): a
    malformed option, not a forged trace."""
    result = cli(runs / "stream", "--public-key", key)
    assert result.exit_code == 2, result.output
    assert "public-key" in result.output and "64 hex digits" in result.output, result.output


@pytest.mark.parametrize("name", ["run#1", "a?b", "p%41"])
def test_a_run_directory_with_uri_characters_verifies_and_reads(runs, tmp_path, name):
    """'#', '?' and '%' in the path: the read-only SQLite URI cut the path there, so a clean
    trace was "not an ldpfleet trace" (or a traceback for '%') and an empty database file
    was created beside the run directory by the read-only open."""
    target = tmp_path / name
    shutil.copytree(runs / "stream", target)
    before = sorted(p.name for p in tmp_path.iterdir())
    result = cli(target)
    assert result.exit_code == 0, result.output
    stats = CliRunner().invoke(app, ["trace", "stats", str(target)])
    assert stats.exit_code == 0, stats.output
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing created


@pytest.mark.parametrize("command", ["verify", "stats", "show", "export"])
def test_a_trace_that_is_a_directory_exits_2(runs, tmp_path, command):
    directory = copy(runs, "stream", tmp_path)
    (directory / "trace.sqlite").unlink()
    (directory / "trace.sqlite").mkdir()
    result = CliRunner().invoke(app, ["trace", command, str(directory)])
    assert result.exit_code == 2, result.output
    assert "trace.sqlite is not a file" in result.output, result.output


@pytest.mark.parametrize(
    "edit",
    ["payload = 'abc'", "payload = 42", "bytes = 'big'", "sender = x'ff00'", "topic = x'00ff'",
     "time = 'abc'", "seq = 'x'"],
)  # fmt: skip
def test_a_row_edited_to_another_column_type_is_shown_and_caught(runs, tmp_path, edit):
    """SQLite keeps any type in any column: a TEXT payload, a TEXT size, a BLOB sender or
    topic ended `trace show`, `stats`, `export` and `follow` in a traceback, and `verify`
    in "error: required argument is not an integer" (exit 1, the chain not checked)."""
    d = copy(runs, "stream", tmp_path)
    row_id, body = row_of(d, "hello")
    with connect(d) as db:
        db.execute(f"UPDATE messages SET {edit} WHERE id = ?", (row_id,))
    for args in (["show", d], ["stats", d], ["export", d], ["export", "--format", "csv", d],
                 ["follow", d, body["sender"]]):  # fmt: skip
        result = CliRunner().invoke(app, ["trace", *map(str, args)])
        assert result.exit_code == 0, (args, result.output, result.exception)
    caught(d, "chain_broken", row_id)


def test_ldpfleet_merge_makes_one_run_that_reports_and_verifies(runs, tmp_path):
    """`ldpfleet merge C F0 F1 --out M`: M holds what `ldpfleet run` writes (results,
    ledger, trace, store, report.html) and verifies by itself."""
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    collector = copy(runs, "sides", tmp_path) / "c"
    merged = tmp_path / "merged"
    done = CliRunner().invoke(
        app,
        ["merge", str(collector), str(collector / "fleet-0-of-2"), str(tmp_path / "sides" / "f1"),
         "--out", str(merged)],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    results = json.loads((merged / "results.json").read_text())
    assert results["devices_complete"] == 3 and results["reports_lost"] == 0
    assert results["accuracy"] is not None and (merged / "report.html").exists()
    assert len(json.loads((merged / "ledger.json").read_text())["devices"]) == 3
    report = verify_run(merged)
    assert report.ok, report.mismatches
    missing = CliRunner().invoke(app, ["merge", str(collector), str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "no outcomes.json" in missing.output
