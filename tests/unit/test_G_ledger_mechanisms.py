"""ledger.json says which mechanism spent each account's ε (helper G's user trial, round
4: the ledger counted its charges per mechanism label and never wrote the counts, so a
run's ledger named ε and w but not the mechanism that spent them)."""

from __future__ import annotations

import pytest
from ldpfleet.protocol.ledger import BudgetExhausted, PrivacyLedger, WindowAccount

import ldpfleet

SCENARIO = """
[scenario]
name = "g-ledger"
seed = 4
[fleet]
devices = 2
[stream]
steps = 12
eps = 2.0
w = 4
mechanism = "duchi"
[source]
kind = "synthetic"
bounds = [0.0, 1.0]
"""


def test_an_account_lists_its_accepted_charges_per_mechanism():
    ledger = PrivacyLedger("d0")
    ledger.open_account("stream", WindowAccount(eps=1.0, w=2))
    ledger.charge("stream", 0.5, t=0, mechanism="m:A")
    ledger.charge_run("stream", 0.5, t0=1, count=2, mechanism="m:B")
    with pytest.raises(BudgetExhausted):  # refused: not counted
        ledger.charge("stream", 0.9, t=3, mechanism="m:C")
    account = ledger.to_dict()["accounts"]["stream"]
    assert account["mechanisms"] == {"m:A": 1, "m:B": 2}
    assert account["charges"] == 3


def test_a_runs_ledger_names_the_mechanism(tmp_path):
    out = tmp_path / "run"
    ldpfleet.run(ldpfleet.parse_scenario(SCENARIO), broker="memory", out_dir=out)
    for device in ("d0000", "d0001"):
        stream = ldpfleet.read_ledger(out, device=device)["stream"]
        assert stream["mechanisms"] == {"duchi": 12}, stream
