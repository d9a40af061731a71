"""Helper X (issue 20): ``ldpfleet run``'s table for the default CADR run (method clip)
said ``kept-edge ratio 0.784 (max kept degree 79)`` although clip negotiates no edge and
keeps none: the figure is Σ min(d, θ) / Σ d of the clipped degree vector (docs/cadr.md,
"Method clip", "What it gives up"). The row now names what it is under clip; the negotiated
methods keep their row. Fails on the old code (no ``_kept_row``; the clip run's table
printed "kept-edge ratio")."""

from __future__ import annotations

from ldpfleet.app import cli
from typer.testing import CliRunner

from tests.cadr_fixtures import TINY_SCENARIO

RESULTS = {"kept_edge_ratio": 0.7837851621823787, "max_kept_degree": 79}


def test_clip_row_names_the_clipped_degrees():
    label, value = cli._kept_row({**RESULTS, "method": "clip"})
    assert label == "clipped-degree ratio"
    assert value == "0.784 (Σ min(d, θ) / Σ d, largest 79)"


def test_negotiated_methods_keep_the_kept_edge_row():
    for method in ("ll", "lh", "ra"):
        label, value = cli._kept_row({**RESULTS, "method": method})
        assert label == "kept-edge ratio"
        assert value == "0.784 (max kept degree 79)"


def _table(tmp_path, method_line: str) -> str:
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(TINY_SCENARIO.format(method=method_line))
    result = CliRunner().invoke(
        cli.app, ["run", str(scenario), "-o", str(tmp_path / "out")], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output
    return result.output


def test_the_default_run_table_has_no_kept_edge_row(tmp_path):
    out = _table(tmp_path, "")  # method "auto": clip under the dp pipeline
    assert "│ method, eps, alpha" in out and "clip, 3, 0.1" in out
    assert "clipped-degree ratio" in out
    assert "kept-edge ratio" not in out


def test_an_ll_run_table_keeps_the_kept_edge_row(tmp_path):
    out = _table(tmp_path, 'method = "ll"')
    assert "ll, 3, 0.1" in out
    assert "kept-edge ratio" in out
    assert "clipped-degree ratio" not in out
