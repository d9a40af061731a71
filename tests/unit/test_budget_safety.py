"""Budget safety, tier 1: a request a device's ledger cannot afford is answered with ONE typed
``BudgetRefused`` (never silence), nothing is privatised for it, the ledger's spend is
unchanged, and the collector side records the refusal and stops waiting for that device."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_collect import DsrIntake
from ldpfleet.protocol.cadr_device import CadrDevice
from ldpfleet.protocol.events import Rejected
from ldpfleet.protocol.messages import Ack, BudgetRefused, SwReport
from ldpfleet.protocol.peer_relay import PeerRelay, PhaseFinished
from ldpfleet.protocol.stream import (
    LEDGER_ACCOUNT,
    BudgetRefusal,
    ReadingsRefused,
    StageClosed,
    StreamReporter,
)

from tests.unit.test_cadr_device import GRAPH, RUN, build, ctl, plan, pump, theta_msg
from tests.unit.test_stream_machines import COLLECTOR, Fleet, make_config, readings
from tests.unit.test_stream_machines import RUN as STREAM_RUN


def refusals(outbound) -> list[BudgetRefused]:
    return [o.message for o in outbound if isinstance(o.message, BudgetRefused)]


# ---- stream ------------------------------------------------------------------------------------


def _spent_reporter(t: int) -> StreamReporter:
    """A reporter whose ledger already spent a whole window at step ``t`` (e.g. a ledger
    shared with another release): step ``t`` cannot be afforded."""
    config = make_config()
    reporter = StreamReporter(config, "d0", np.random.default_rng(0))
    reporter.ledger.charge(LEDGER_ACCOUNT, config.eps, t=t, mechanism="other")
    reporter.start(0.0)
    reporter.pop_outbound()
    return reporter


@pytest.mark.parametrize("t", [0, 7, 12, 22])
def test_a_stream_step_the_ledger_cannot_afford_is_refused_once_and_never_privatised(t):
    reporter = _spent_reporter(t)
    config = reporter.config
    account = reporter.ledger.account(LEDGER_ACCOUNT)
    before = (account.total_spent, account.charges)
    reporter.receive(topics.parse(topics.inbox(STREAM_RUN, "d0", COLLECTOR)),
                     Ack(run=STREAM_RUN, sender=COLLECTOR, credit=5), 0.0)  # fmt: skip
    reporter.add_readings(readings(config, 0), 0.0)
    t = max(0, t - config.w + 1)  # the first step whose windows no longer fit
    out = reporter.pop_outbound()
    [refusal] = refusals(out)  # exactly one, a valid wire message on up/budget_refused
    assert codec.decode(codec.encode(refusal)) == refusal
    assert out[0].topic == topics.up(STREAM_RUN, "d0", "budget_refused")
    assert (refusal.account, refusal.request, refusal.round) == ("stream", "sw_report", t)
    assert refusal.requested == config.eps0 and refusal.remaining == 0.0
    assert np.isnan(reporter.values[t:]).all()  # nothing privatised from t on
    assert reporter.privatised == t
    # the ledger spent exactly the t granted steps, nothing for the refused one
    assert account.total_spent == pytest.approx(before[0] + t * config.eps0)
    assert account.charges == before[1] + t and account.refusals == 1
    assert [e.t for e in reporter.pop_events() if isinstance(e, ReadingsRefused)] == [t]
    sent = [o.message for o in out if isinstance(o.message, SwReport)]
    assert all(m.t0 + len(m.values) <= t for m in sent)
    if not reporter.finished:  # (t = 0: nothing to send, the device is already finished)
        reporter.add_readings([1.0], 1.0)
    reporter.handle_timer(100.0)
    assert refusals(reporter.pop_outbound()) == []  # never a second refusal


@pytest.mark.parametrize("t", [0, 12])
def test_the_collector_records_a_stream_refusal_and_closes_without_waiting(t):
    fleet = Fleet(3, deadline=1e9)
    fleet.reporters["d1"].ledger.charge(LEDGER_ACCOUNT, fleet.config.eps, t=t, mechanism="x")
    fleet.start()
    fleet.run()
    t = max(0, t - fleet.config.w + 1)  # the first step whose windows no longer fit
    # the stage closed by itself (no deadline, no timer), complete: nothing is awaited
    [closed] = fleet.events(StageClosed)
    assert closed.complete and fleet.collector.state == "closed"
    [refusal] = fleet.events(BudgetRefusal)
    assert (refusal.device, refusal.t) == ("d1", t)
    assert fleet.reporters["d1"].state == "refused"
    assert all(fleet.reporters[d].state == "done" for d in ("d0", "d2"))
    summary = fleet.collector.summary()
    n = fleet.config.n_batches
    assert summary["reports_refused"] == n - t // fleet.config.batch_steps
    assert summary["reports_lost"] == 0 and summary["reports_rejected"] == 0
    assert summary["budget_refusals"]["d1"]["step"] == t
    assert fleet.collector.missing() == {}


def _refusal(**changes) -> tuple[topics.Topic, BudgetRefused]:
    fields = {"run": STREAM_RUN, "sender": "d0", "account": "stream", "request": "sw_report",
              "round": 12, "requested": make_config().eps0, "remaining": 0.0}  # fmt: skip
    fields.update(changes)
    return topics.parse(topics.up(STREAM_RUN, "d0", "budget_refused")), BudgetRefused(**fields)


@pytest.mark.parametrize(
    ("changes", "field", "code"),
    [
        ({"requested": 1.0}, "requested", "parameter_mismatch"),
        ({"account": "node"}, "request", "parameter_mismatch"),
        ({"round": 23}, "round", "out_of_range"),
        ({"sender": "d9"}, "sender", "wrong_sender"),
    ],
)
def test_the_collector_rejects_refusals_that_do_not_fit_the_run(changes, field, code):
    fleet = Fleet(2)
    topic, message = _refusal(**changes)
    fleet.collector.receive(topic, message, 0.0)
    [rejected] = [e for e in fleet.collector.pop_events() if isinstance(e, Rejected)]
    assert (rejected.field, rejected.code) == (field, code)
    assert fleet.collector.budget_refusals == {}


def test_a_refusal_contradicting_received_batches_or_an_earlier_refusal_is_rejected():
    fleet = Fleet(2)
    fleet.start(feed=False)
    fleet.feed("d0")
    fleet.run()  # d0 delivered everything, d1 nothing yet: the stage is open
    assert fleet.collector.state == "open"
    fleet2 = Fleet(2)
    fleet2.collector.receive(*_refusal(round=12), 0.0)
    fleet2.collector.receive(*_refusal(round=12), 0.0)  # the same again: idempotent
    fleet2.collector.receive(*_refusal(round=5), 0.0)
    codes = [e.code for e in fleet2.collector.pop_events() if isinstance(e, Rejected)]
    assert codes == ["replay"]
    fleet.collector.receive(*_refusal(round=3), 0.0)  # d0's batches past step 3 are in
    assert fleet.collector.rejections_by_reason == {"out_of_range": 1}


# ---- CADR-LDP ----------------------------------------------------------------------------------


def _cadr_run(*, capped: dict[str, float] | None = None, spent: dict[str, float] | None = None):
    """The pure CADR machines of test_cadr_device with some devices capped (``max_eps``)
    or with a ledger already partly spent before the DSR."""
    names, devices = build(GRAPH, seed=1)
    capped = capped or {}
    if capped:  # rebuild the capped devices with their own budget and replay the plan
        for name, cap in capped.items():
            old = devices[name]
            devices[name] = CadrDevice(RUN, name, old.neighbours, np.random.default_rng(5),
                                       max_eps=cap)  # fmt: skip
            devices[name].receive(ctl("cadr_plan"), plan(bound=int(GRAPH.degrees().max())), 0.0)
            devices[name].receive(ctl("cadr_theta"), theta_msg(3), 0.0)
    up = {name: device.pop_outbound() for name, device in devices.items()}
    seen = {name: refusals(out) for name, out in up.items()}
    for name, device in devices.items():  # keep every refusal sent during the phases

        def tee(pop=device.pop_outbound, name=name):
            out = pop()
            seen[name].extend(refusals(out))
            return [o for o in out if not isinstance(o.message, BudgetRefused)]

        device.pop_outbound = tee
    relay = PeerRelay(RUN, names)
    relay.start_phase("ndoe", 0.0)
    pump(relay, devices)
    for name, eps in (spent or {}).items():
        devices[name].ledger.account("node").spent += eps  # shared with another release
    relay.start_phase("lpea", 0.0, until_quiet=True, max_rounds=50)
    reports = pump(relay, devices)
    finished = [e.phase for e in relay.pop_events() if isinstance(e, PhaseFinished)]
    return names, devices, seen, reports, finished


def test_a_plan_beyond_the_device_budget_is_refused_and_the_run_still_completes():
    names, devices, seen, reports, finished = _cadr_run(capped={"n05": 1.0})
    device = devices["n05"]
    [refusal] = seen["n05"]  # answered at the plan, once (not again at NDOE, LPEA, DSR)
    assert (refusal.request, refusal.account, refusal.requested) == ("cadr_plan", "node", 3.0)
    assert refusal.remaining == 1.0
    assert device.spent() == 0.0 and device.ledger.account("node").charges == 0
    assert device.released is None and "n05" not in reports  # nothing privatised
    assert device.finished  # served the relay phases with data-independent content
    assert finished == ["ndoe", "lpea"]  # the relay never stalled
    assert set(reports) == set(names) - {"n05"}
    assert not any(seen[name] for name in set(names) - {"n05"})
    for name in set(names) - {"n05"}:
        assert math.isclose(devices[name].spent(), 3.0, rel_tol=1e-12)


def test_a_cap_that_fits_the_plan_changes_nothing():
    _, capped, _, reports, _ = _cadr_run(capped={"n05": 3.0})
    assert "n05" in reports and math.isclose(capped["n05"].spent(), 3.0, rel_tol=1e-12)


def test_a_stage_the_ledger_cannot_afford_is_refused_at_that_stage():
    _, devices, seen, reports, finished = _cadr_run(spent={"n07": 0.5})
    device = devices["n07"]
    [refusal] = seen["n07"]
    assert (refusal.request, refusal.requested) == ("dsr", pytest.approx(2.7))
    assert refusal.remaining == pytest.approx(3.0 - 0.8)
    assert finished == ["ndoe", "lpea"]
    assert "n07" not in reports and device.released is None
    account = device.ledger.account("node")
    # NDOE and LPEA were paid (0.15 each) on top of the 0.5; the DSR (2.7) no longer fits
    assert account.spent == pytest.approx(0.5 + 0.3)
    assert device.ledger.mechanisms("node") == {"exponential": 1, "warner_rr": 1}
    assert device.finished


def test_dsr_intake_stops_waiting_for_a_refused_device():
    intake = DsrIntake(RUN, ["a", "b"], 10, 2.7)
    topic = topics.parse(topics.up(RUN, "b", "budget_refused"))
    message = BudgetRefused(run=RUN, sender="b", account="node", request="cadr_plan",
                            requested=3.0, remaining=1.0)  # fmt: skip
    intake.receive(topic, message, 0.0)
    intake.receive(topic, message, 0.0)  # again: once is enough
    assert intake.refusals["b"]["request"] == "cadr_plan" and intake.missing() == ["a"]
    intake.receive(topics.parse(topics.up(RUN, "a", "dsr")), _dsr("a", 4.0), 0.0)
    assert intake.complete and intake.rejected == 0
    intake.receive(topics.parse(topics.up(RUN, "b", "dsr")), _dsr("b", 4.0), 0.0)
    assert intake.rejections_by_reason == {"refused": 1} and "b" not in intake.values
    bad = BudgetRefused(run=RUN, sender="a", account="stream", request="x", requested=1.0,
                        remaining=0.0)  # fmt: skip
    intake.receive(topics.parse(topics.up(RUN, "a", "budget_refused")), bad, 0.0)
    assert intake.rejections_by_reason == {"refused": 1, "parameter_mismatch": 1}


def _dsr(sender, value):
    from ldpfleet.protocol.cadr_messages import DsrReport

    return DsrReport(run=RUN, sender=sender, seq=5, value=value, theta=10, eps=2.7)


# ---- user mechanisms: the stated budget ----------------------------------------------------


def test_a_plugin_stating_another_eps_than_it_was_built_with_is_refused_at_load():
    """The ledger charges eps / w per report and the audit tests the claimed eps: a plugin
    whose ``self.eps`` says 2 eps0 (or that rescales its budget) ran and was labelled at a
    budget it was not built with. Refused when the scenario loads, naming both values."""
    from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

    scenario = (
        '[scenario]\nname = "plugin"\nseed = 1\n[fleet]\ndevices = 2\n[stream]\nsteps = 10\n'
        'eps = 2.0\nw = 5\nmechanism = "tests.unit.bad_mechanisms:{}"\n[source]\n'
        'kind = "synthetic"\nshape = "sine"\nperiod = 10\nbounds = [0.0, 10.0]\n'
    )
    with pytest.raises(ScenarioError) as info:
        parse_scenario(scenario.format("StatesDoubleEps"))
    text = str(info.value)
    assert text.startswith("stream.mechanism: ") and "states eps = 0.8" in text, text
    assert "built with eps = 0.4" in text and "relative difference above 1e-06" in text, text
    assert parse_scenario(scenario.format("StatesEpsRounded")) is not None
