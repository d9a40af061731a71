"""A run into an ``--out`` folder that holds a previous run (helper S, new-user trial).

Found: ``ldpfleet run quickstart --out X`` (embedded broker: the collector side and the
fleet in processes, their pieces in ``X/collector/`` and ``X/fleet-0-of-1/``) and then
``ldpfleet run occupancy-light --broker memory --out X`` left quickstart's
``X/fleet-0-of-1/ledger.json``; ``ldpfleet trace verify X`` read it as this run's and
reported 51 mismatches (ledger_scenario: eps 2 against the scenario's 5) on a clean run.
Now the in-process run removes those pieces (as the run in processes already did), and
``trace verify`` leaves out, with a note, a ``fleet-*/ledger.json`` naming another run.
"""

from __future__ import annotations

import asyncio
import json
import shutil

import pytest
from ldpfleet.app.trace_verify import verify_run
from ldpfleet.broker.trace import TraceError
from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

STREAM = """
[scenario]
name = "reuse"
seed = 3
[fleet]
devices = 3
[stream]
steps = 12
eps = {eps}
w = 4
[source]
kind = "synthetic"
shape = "square"
period = 6
bounds = [-1.0, 1.0]
"""


def _run(out, eps: float, run_id: str) -> dict:
    scenario = parse_scenario(STREAM.format(eps=eps))
    return asyncio.run(run_scenario(scenario, broker="memory", out_dir=out, run_id=run_id))


@pytest.fixture(scope="module")
def first(tmp_path_factory):
    """A finished run A (eps 1), whose ledger.json stands in for a fleet shard's."""
    out = tmp_path_factory.mktemp("reuse") / "a"
    _run(out, 1.0, "run-a")
    return out


def _plant_previous_pieces(first, out):
    """``out`` as a run in separate processes left it: fleet and collector pieces."""
    for piece in ("fleet-0-of-1", "shards/fleet-1-of-2"):
        (out / piece).mkdir(parents=True)
        shutil.copy(first / "ledger.json", out / piece / "ledger.json")
    (out / "collector").mkdir()
    shutil.copy(first / "results.json", out / "collector" / "results.json")


def test_a_run_removes_the_pieces_a_previous_run_left(first, tmp_path):
    out = tmp_path / "x"
    _plant_previous_pieces(first, out)
    (out / "notes.txt").write_text("mine")
    _run(out, 2.0, "run-b")
    assert not (out / "fleet-0-of-1").exists()
    assert not (out / "collector").exists()
    assert not (out / "shards" / "fleet-1-of-2").exists()
    assert (out / "notes.txt").read_text() == "mine"  # not a run's file: left
    report = verify_run([out])
    assert report.ok, [m.line() for m in report.mismatches]


def test_verify_leaves_out_another_runs_fleet_ledger_with_a_note(first, tmp_path):
    out = tmp_path / "y"
    _run(out, 2.0, "run-b")
    _plant_previous_pieces(first, out)  # as if left by a version that did not remove them
    report = verify_run([out])
    assert report.ok, [m.line() for m in report.mismatches]
    assert report.ledgers == [str((out / "ledger.json").resolve())]
    skipped = [n for n in report.notes if "run-a" in n]
    assert len(skipped) == 2 and all("not of this run run-b" in n for n in skipped)


def test_a_fleet_ledger_of_this_run_is_still_read_and_checked(first, tmp_path):
    out = tmp_path / "z"
    _run(out, 2.0, "run-b")
    (out / "fleet-0-of-1").mkdir()
    document = json.loads((out / "ledger.json").read_text())
    device = sorted(document["devices"])[0]
    document["devices"][device]["accounts"]["stream"]["charges"] = 0
    (out / "fleet-0-of-1" / "ledger.json").write_text(json.dumps(document))
    report = verify_run([out])
    assert [m.reason for m in report.mismatches] == ["ledger_conflict"]


def test_a_given_directorys_ledger_of_another_run_is_not_left_out(first, tmp_path):
    out = tmp_path / "w"
    _run(out, 2.0, "run-b")
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(first / "ledger.json", other / "ledger.json")
    report = verify_run([out, other])  # given, so meant: read, and it disagrees
    assert not report.ok
    assert str((other / "ledger.json").resolve()) in report.ledgers


def test_only_other_runs_ledgers_is_refused_naming_the_run(first, tmp_path):
    out = tmp_path / "v"
    _run(out, 2.0, "run-b")
    side = tmp_path / "side"
    side.mkdir()
    for name in ("trace.sqlite", "results.json"):
        shutil.copy(out / name, side / name)
    (side / "fleet-0-of-1").mkdir()
    shutil.copy(first / "ledger.json", side / "fleet-0-of-1" / "ledger.json")
    with pytest.raises(TraceError, match=r"no ledger\.json of run run-b"):
        verify_run([side])


def test_a_users_own_folder_of_a_piece_name_is_left_whole(first, tmp_path):
    """``ldpfleet run quickstart --out .`` in a folder with the user's own ``collector/``
    (this repository's package, in a checkout) or ``fleet-1-of-3/``: a folder holding
    anything but a run's files is not a run's piece and is never removed."""
    out = tmp_path / "here"
    (out / "collector").mkdir(parents=True)
    (out / "collector" / "service.py").write_text("x = 1\n")
    (out / "collector" / "results.json").write_text("{}")  # a run's name among them
    (out / "fleet-1-of-3" / "sub").mkdir(parents=True)
    (out / "fleet-1-of-3" / "sub" / "notes.txt").write_text("mine")
    (out / "shards" / "fleet-0-of-2").mkdir(parents=True)
    shutil.copy(first / "ledger.json", out / "shards" / "fleet-0-of-2" / "ledger.json")
    _run(out, 2.0, "run-b")
    assert (out / "collector" / "service.py").read_text() == "x = 1\n"
    assert (out / "fleet-1-of-3" / "sub" / "notes.txt").read_text() == "mine"
    assert not (out / "shards" / "fleet-0-of-2").exists()  # only a run's files: removed
    assert verify_run([out]).ok


CADR = """
[scenario]
name = "reuse-degrees"
seed = 2
[graph]
source = "erdos_renyi:n=30,p=0.3,seed=1"
[cadr]
eps = 3.0
"""


def test_a_cadr_run_removes_a_stream_runs_pieces_too(first, tmp_path):
    out = tmp_path / "c"
    _plant_previous_pieces(first, out)
    asyncio.run(run_scenario(parse_scenario(CADR), broker="memory", out_dir=out))
    assert not (out / "fleet-0-of-1").exists() and not (out / "collector").exists()
    assert verify_run([out]).ok
