"""A hostile client against a CADR-LDP fleet run on the in-memory transport (helper W's
sweep, docs/reliability.md "Hostile input at every intake"): messages the collector's pump
and DSR intake must refuse, sent before θ exists (at the plan) and after (at θ). The run
releases exactly what the same seed releases without the attack, and the collector counts
every message sent."""

from __future__ import annotations

from ldpfleet.broker.transport import Delivery
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.protocol.cadr_messages import DsrReport
from ldpfleet.protocol.messages import BudgetRefused
from ldpfleet.protocol.peer_relay import RELAY_ID, PhaseReport

from tests.cadr_fixtures import GRAPH, clean_and_attacked

RUN = "cadr-hostile"


def before_theta() -> list[tuple[str, bytes]]:
    dsr, refused = (topics.up(RUN, "n0001", kind) for kind in ("dsr", "budget_refused"))
    refusal = BudgetRefused(run=RUN, sender="n0001", account="node", request="cadr_plan",
                            requested=1.0, remaining=0.0)  # fmt: skip
    release = DsrReport(run=RUN, sender="n0001", value=1.0, theta=3, eps=1.0)
    report = PhaseReport(run=RUN, sender=RELAY_ID, phase="ndoe", ok=False)
    return [
        (dsr, b"\xff\x00 garbage"),
        (dsr, codec.encode(release)),  # a release before θ exists
        (dsr, codec.encode(refusal)),  # a refusal on the release topic
        (dsr, codec.encode(report)),  # a failed phase "reported" by a device
        (refused, codec.encode(release)),  # a release on the refusal topic
    ]


def after_theta(theta: int, eps_dsr: float) -> list[tuple[str, bytes]]:
    dsr = topics.up(RUN, "n0002", "dsr")

    def release(**fields) -> bytes:
        base = dict(run=RUN, sender="n0002", value=1.0, theta=theta, eps=eps_dsr, seq=7)
        return codec.encode(DsrReport(**(base | fields)))

    return [
        (dsr, release(theta=theta + 1)),
        (dsr, release(eps=eps_dsr * 2)),
        (dsr, release(value=1e300)),
        (dsr, release(sender="n0003")),  # another device's release on this topic
        (topics.up(RUN, "n0002", "budget_refused"), release()),  # on the refusal topic
        (dsr, release()[:-9]),  # truncated
        (dsr, release().replace(b'"value":1.0', b'"value":NaN')),
    ]


def plant_at_plan_and_theta():
    """What the client plants: ``before_theta`` at the plan, ``after_theta`` at θ (with
    the DSR budget the plan implies)."""
    budget = None

    def plant(delivery: Delivery) -> list[tuple[str, bytes]]:
        nonlocal budget
        message = codec.decode(delivery.payload)
        if delivery.topic.endswith("/cadr_plan"):
            budget = CadrBudget.for_pipeline(message.eps, message.alpha, "dp", True, GRAPH.n)
            return before_theta()
        return after_theta(message.theta, budget.dsr)

    return plant


async def test_a_cadr_run_under_attack_releases_the_clean_runs_values():
    watched = [topics.ctl(RUN, "cadr_plan"), topics.ctl(RUN, "cadr_theta")]
    clean, attacked, sent = await clean_and_attacked(RUN, watched, plant_at_plan_and_theta())
    assert len(sent) == 12
    assert attacked["rejected_by_collector"] == len(sent)
    assert clean["rejected_by_collector"] == 0
    for key in ("theta", "released", "histogram", "estimate_histogram", "budget_refusals", "mae"):
        assert attacked[key] == clean[key], key
