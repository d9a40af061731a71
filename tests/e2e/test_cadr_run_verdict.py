"""``ldpfleet run`` of a CADR-LDP scenario says where the release stands against knowing
nothing (the constant true median, all zeros), under its summary table.

Helper B (2026-12-05) ran a karate-club copy of facebook-degrees.toml: the summary printed
"degree-sequence MAE / MSE 10.03 / 199.7" and nothing else, while all zeros score 4.59;
the report said so, the command did not. Fails on the code before (no sentence)."""

from __future__ import annotations

import json

import networkx as nx
from ldpfleet.app.cadr_report import released_verdict
from ldpfleet.app.cli import app
from typer.testing import CliRunner

SCENARIO = """
[scenario]
name = "karate-degrees"
seed = 0
[graph]
source = "{graph}"
[cadr]
method = "ll"
eps = 3.0
alpha = 0.1
theta = "auto-dev"
pipeline = "dp"
[broker]
url = "memory"
"""


def test_the_run_summary_places_the_release_against_its_baselines(tmp_path):
    graph = tmp_path / "karate.txt"
    graph.write_text("".join(f"{u} {v}\n" for u, v in nx.karate_club_graph().edges()))
    scenario = tmp_path / "karate.toml"
    scenario.write_text(SCENARIO.format(graph=graph))
    out = tmp_path / "out"
    result = CliRunner().invoke(app, ["run", str(scenario), "-o", str(out)])
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    sentence = released_verdict(results)
    assert sentence.startswith("The released sequence (MAE ")
    assert f"{results['postprocessed']['mae']:,.3f}" in sentence
    flat = " ".join(result.output.split())  # the console wraps long lines
    assert " ".join(sentence.split()) in flat


def test_released_verdict_reads_the_released_sequence_of_either_pipeline():
    figures = {
        "raw": {"mae": 3.0},
        "postprocessed": {"mae": 10.0},
        "baselines": {"constant_median_oracle": {"mae": 2.0}, "all_zero": {"mae": 4.0}},
    }
    assert "MAE 10.000" in released_verdict({**figures, "pipeline": "dp"})
    assert "MAE 3.000" in released_verdict({**figures, "pipeline": "paper"})
    assert released_verdict({"pipeline": "dp"}) == ""  # no baselines: no sentence
