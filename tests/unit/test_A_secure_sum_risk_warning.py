"""A ``[secure_sum]`` whose SecAgg+ session may well abort says so in results.json's warnings.

Last session's user trials: a scenario with ``neighbors = 3`` on 100 devices, 10 leaving,
loaded and ran without a word, then aborted ("masked stage: cannot unmask ..."). The
arithmetic is ``protocol.secagg.graph``'s (``session_abort_bound``, ``safer_degree``,
``safer_dropping``: tests/unit/test_A_abort_risk.py); the sentence is
``scenarios.schema_checks.secure_sum_risk_warnings``, which ``runner.stream_warnings``
adds to a run's ``warnings`` (both runners), the way a period CPR cannot claim is told.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from ldpfleet.broker.transport import MemoryTransport
from ldpfleet.protocol.secagg import graph as graphs
from ldpfleet.scenarios.runner import run_scenario, stream_warnings
from ldpfleet.scenarios.schema import load_scenario, parse_scenario
from ldpfleet.scenarios.schema_checks import secure_sum_risk_warnings

from tests.virtual_time import VirtualTimeLoop

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = (ROOT / "scenarios" / "secure-sum.toml").read_text()


def _with(**keys: str) -> str:
    """scenarios/secure-sum.toml with ``[secure_sum]`` keys replaced or added."""
    text = SHIPPED
    for key, value in keys.items():
        lines = [line for line in text.splitlines() if not line.startswith(f"{key} =")]
        text = "\n".join(lines) + f"\n{key} = {value}\n"
    return text


def _warnings(text: str) -> list[str]:
    return secure_sum_risk_warnings(parse_scenario(text).spec)


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.toml")), ids=lambda p: p.name)
def test_shipped_scenarios_say_nothing(path: Path) -> None:
    # secure-sum.toml: 100 devices, the default 15 neighbours, 10 leaving: 2.6e-4
    assert secure_sum_risk_warnings(load_scenario(path).spec) == []


def test_a_degree_too_small_is_named_with_what_to_change() -> None:
    (sentence,) = _warnings(_with(neighbors="13"))
    bound = graphs.session_abort_bound(100, 13, 8, 10)
    assert 1e-3 < bound < 1e-2
    assert sentence == (
        "secure_sum: 10 of 100 devices leaving after_shares (dropout = 0.1) with neighbors "
        f"= 13 and t = 8: up to {bound:.2%} of such sessions abort before unmasking (over "
        "0.1%): a device left with fewer than t live share holders, which reveals no sum "
        "but gives none; raise secure_sum.neighbors to 15, or lower secure_sum.dropout to "
        '0.09 (9 leaving), or use graph = "full" (every pair: O(n^2) work)'
    )
    # each change it names is enough
    assert _warnings(_with(neighbors="15")) == []
    assert _warnings(_with(neighbors="13", dropout="0.09")) == []
    assert _warnings(_with(neighbors="99", graph='"full"')) == []


def test_a_set_threshold_and_a_cut_ring() -> None:
    (sentence,) = _warnings(_with(neighbors="3", threshold="3"))
    assert "such sessions may all abort before unmasking" in sentence
    assert "or the survivors' graph split in parts" in sentence
    assert "raise secure_sum.neighbors to 15 with threshold = 9" in sentence
    assert 'use graph = "full" without a threshold' in sentence


def test_leaving_after_the_masked_input_cannot_split_the_graph() -> None:
    (sentence,) = _warnings(_with(dropout="0.3", dropout_stage='"after_masked"'))
    assert "neighbors = 15 (the default) and t = 9" in sentence
    assert "split" not in sentence
    assert "raise secure_sum.neighbors to 51" in sentence


def test_the_full_graph_never_warns() -> None:
    assert _warnings(_with(graph='"full"', dropout="0.45")) == []


def test_a_run_lists_it_in_its_warnings(tmp_path: Path) -> None:
    # the 6-device ring of tests/e2e/test_A_masked_abort_counts.py: it aborts every time
    text = _with(neighbors="2", dropout="0.34").replace("devices = 100", "devices = 6")
    loaded = parse_scenario(text)
    (sentence,) = secure_sum_risk_warnings(loaded.spec)
    assert sentence in stream_warnings(loaded, loaded.source_spec(), None)

    async def run() -> dict:
        return await run_scenario(loaded, broker=MemoryTransport(), out_dir=tmp_path, run_id="w")

    results = VirtualTimeLoop.run(run())
    assert sentence in results["warnings"]
    assert results["secure_sum"]["aborted"].startswith("masked stage: cannot unmask: ")
