"""``audit all --jobs N`` submits the costliest audits first (longest processing time
first): the dropout canary's audits, then the other whole-path entries, then the rest in
battery order, so the audits that start last are short."""

from ldpfleet.app.audit_cli import BATTERY_NAMES, audit_cost, submission_order


def test_costliest_first_then_battery_order():
    names = [m for m in BATTERY_NAMES for _ in (0.5, 1.0, 2.0)]
    order = [names[i] for i in submission_order(names)]
    assert order[:3] == ["cadr-theta-count-dropout"] * 3
    assert order[3:6] == ["degree-connected"] * 3
    costs = [audit_cost(name) for name in order]
    assert costs == sorted(costs, reverse=True)
    light = [name for name in order if audit_cost(name) == 1.0]
    assert light == [name for name in names if audit_cost(name) == 1.0]  # battery order
    assert sorted(submission_order(names)) == list(range(len(names)))


def test_an_unknown_entry_or_plugin_weighs_one():
    assert audit_cost("mypkg.mech:Mine") == 1.0
    assert audit_cost("secagg") > 1.0
