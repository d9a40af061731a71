"""``ldpfleet.read_ledger``: each privacy ledger of a run, one layout for every kind of run.

Found (helper E's user trial, round 4): the API read results.json, the trace and the
reports, but the ledgers only as raw JSON of two layouts (a stream run's ``devices`` map
beside run-level figures, a CADR-LDP run's nodes at the top level beside ``run``), which
docs/api.md did not describe.
"""

from __future__ import annotations

import json

import pytest

import ldpfleet

STREAM = {
    "run": "r-1",
    "eps": 2.0,
    "w": 2,
    "max_window_spent": 2.0,
    "within_budget": True,
    "refusals": 0,
    "devices": {
        "d0001": {"owner": "d0001", "accounts": {"stream": {"kind": "w-event", "eps": 2.0}}},
        "d0000": {"owner": "d0000", "accounts": {"stream": {"kind": "w-event", "eps": 2.0}}},
    },
    "collector": {"owner": "collector", "accounts": {"gcdp_release": {"kind": "w-event"}}},
}
CADR = {
    "run": "c-1",
    "n0000": {"owner": "n0000", "accounts": {"node": {"kind": "total", "eps": 3.0}}},
    "n0001": {"owner": "n0001", "accounts": {"node": {"kind": "total", "eps": 3.0}}},
}


@pytest.mark.parametrize(
    ("ledger", "owners", "account"),
    [(STREAM, ["collector", "d0000", "d0001"], "stream"), (CADR, ["n0000", "n0001"], "node")],
)
def test_one_layout_for_every_run(tmp_path, ledger, owners, account):
    (tmp_path / "ledger.json").write_text(json.dumps(ledger))
    read = ldpfleet.read_ledger(tmp_path)
    assert list(read) == owners
    one = ldpfleet.read_ledger(tmp_path, device=owners[-1])
    assert list(one) == [account] and one[account]["kind"]
    assert ldpfleet.read_ledger(tmp_path / "ledger.json") == read
    assert ldpfleet.read_ledger(tmp_path / "results.json") == read  # as read_results takes


def test_refusals_name_the_field(tmp_path):
    with pytest.raises(FileNotFoundError):
        ldpfleet.read_ledger(tmp_path)
    (tmp_path / "ledger.json").write_text(json.dumps(CADR))
    with pytest.raises(ldpfleet.ParameterError) as refused:
        ldpfleet.read_ledger(tmp_path, device="n9")
    assert refused.value.field == "device" and refused.value.value == "n9"
    assert "n0000" in str(refused.value)
    (tmp_path / "ledger.json").write_text("{not json")
    with pytest.raises(ldpfleet.ParameterError) as broken:
        ldpfleet.read_ledger(tmp_path)
    assert broken.value.field == "run_dir" and broken.value.limit
    with pytest.raises(ldpfleet.ParameterError) as none:
        ldpfleet.read_ledger(None)
    assert none.value.field == "run_dir"


def test_a_run_on_the_memory_broker(tmp_path):
    text = """
[scenario]
name = "ledger"
seed = 2
[fleet]
devices = 3
[stream]
steps = 8
eps = 2.0
w = 4
[source]
kind = "synthetic"
period = 4
bounds = [-1.0, 1.0]
"""
    out = tmp_path / "run"
    ldpfleet.run(ldpfleet.parse_scenario(text), broker="memory", out_dir=out)
    ledgers = ldpfleet.read_ledger(out)
    assert list(ledgers) == ["d0000", "d0001", "d0002"]
    stream = ledgers["d0001"]["stream"]
    assert stream["charges"] == 8 and stream["max_window_spent"] == pytest.approx(2.0)
