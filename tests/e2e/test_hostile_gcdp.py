"""The ``[faults] hostile_messages`` attacker (devices/hostile.py) against the GC-DP fleet
(scenarios/occupancy-release.toml: raw readings in the clear, ``eps0 = 0``; helper W's
sweep, docs/reliability.md "Hostile input at every intake"): every message of the flood is
refused under the reason the attacker planned for it, and the release is the clean run's."""

from __future__ import annotations

from ldpfleet.scenarios.runner import run_scenario
from ldpfleet.scenarios.schema import parse_scenario

from tests.conftest import ROOT

RELEASE = (ROOT / "scenarios" / "occupancy-release.toml").read_text()
FLOOD = 400


async def test_a_hostile_flood_against_a_raw_stream_is_refused_as_planned(tmp_path):
    """The flood was written for SW reports: its ``parameter_mismatch`` copies doubled
    ``eps0``, which for a raw report (``eps0 = 0``) left them identical to the genuine batch
    (duplicates, not rejections), and a batch whose first two readings are equal made it
    build a Square Wave at ``eps0 = 0`` (ParameterError: the attacker died). Either way the
    collector never counted the planned rejections and the flood was not handled."""
    clean = await run_scenario(
        parse_scenario(RELEASE), broker="memory", out_dir=tmp_path / "clean", run_id="h1"
    )
    scenario = parse_scenario(RELEASE + f"\n[faults]\nhostile_messages = {FLOOD}\n")
    attacked = await run_scenario(scenario, broker="memory", out_dir=tmp_path / "bad", run_id="h1")
    hostile = attacked["faults"]["injected"]["hostile"]
    assert hostile["handled_before_close"] is True
    assert attacked["rejections_by_reason"] == hostile["by_reason"]
    assert attacked["reports_rejected"] == sum(hostile["by_reason"].values())
    assert attacked["reports_lost"] == 0
    assert attacked["gcdp"]["released"] == clean["gcdp"]["released"]
