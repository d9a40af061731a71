"""A refusal only the run can make leaves no output folder on every transport.

A given θ above the generated graph's maximum degree (``degree_bound = "graph-max"``) is
known only once the graph is generated. On ``-b memory`` the run refuses it: one line
``error: theta: ...``, exit 2, no output folder (tests/unit/test_scenario_refused_on_load).
On a real broker the collector runs as its own process (scenarios/split_run.py): it
refused the same way (its exit 2), but ``ldpfleet run`` said "the collector process ...
ended (exit code 2) without writing its results: ...", exited 1 and left
``OUT/collector/`` and ``OUT/fleet-0-of-1/`` behind (after the fleet's finish_grace).
Now: the collector's own line, exit 2, nothing left (an existing folder keeps what it
held, and no piece of the refused run).
"""

from __future__ import annotations

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

from tests.unit.test_scenario_heldout import CADR

THETA_ABOVE_D = CADR.format(
    source="barabasi_albert:n=30,m=2,seed=1", cadr='theta = 1000\ndegree_bound = "graph-max"\n'
)
REFUSAL = (
    "error: theta: must be <= the degree bound D = 14 (graph-max), got 1000; raise "
    "degree_bound or lower theta"
)


def _run(tmp_path, out, broker: str):
    scenario = tmp_path / "s.toml"
    scenario.write_text(THETA_ABOVE_D)
    return CliRunner().invoke(app, ["run", str(scenario), "-o", str(out), "-b", broker])


def test_a_run_time_refusal_on_the_embedded_broker_is_the_memory_one(tmp_path):
    memory = _run(tmp_path, tmp_path / "m" / "out", "memory")
    assert memory.exit_code == 2 and memory.stderr.strip() == REFUSAL, memory.output
    embedded = _run(tmp_path, tmp_path / "e" / "out", "embedded")
    assert embedded.exit_code == 2, embedded.output
    assert embedded.stderr.strip() == REFUSAL, embedded.output
    assert not (tmp_path / "m").exists() and not (tmp_path / "e").exists()


def test_an_existing_folder_keeps_what_it_held_and_nothing_of_the_refused_run(tmp_path):
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "mine.txt").write_text("x")
    result = _run(tmp_path, kept, "embedded")
    assert result.exit_code == 2 and result.stderr.strip() == REFUSAL, result.output
    assert sorted(p.name for p in kept.iterdir()) == ["mine.txt"]


@pytest.mark.slow  # four processes: 7-9 s at load 9 on 2 cores
def test_the_same_on_mosquitto_and_with_collector_partitions(tmp_path, mosquitto_url):
    """Over a broker URL, and with a coordinator and partition workers (the coordinator
    refuses as the one collector does)."""
    result = _run(tmp_path, tmp_path / "q" / "out", mosquitto_url)
    assert result.exit_code == 2 and result.stderr.strip() == REFUSAL, result.output
    partitioned = tmp_path / "p.toml"
    partitioned.write_text(THETA_ABOVE_D + "[collector]\npartitions = 2\n")
    out = tmp_path / "pp" / "out"
    result = CliRunner().invoke(app, ["run", str(partitioned), "-o", str(out), "-b", "embedded"])
    assert result.exit_code == 2 and result.stderr.strip() == REFUSAL, result.output
    assert not (tmp_path / "q").exists() and not (tmp_path / "pp").exists()
