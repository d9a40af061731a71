"""``bench cadr-sweep`` shows the default method clip beside ER/RA/LH/LL (issue 20, D12):
its own rows, labelled as not the equal-budget comparison, equal to ``private_run(g,
"clip", ...)`` for the same seeds; the projections' figures unchanged by its presence."""

from __future__ import annotations

import json

import numpy as np
import pytest
import typer
from ldpfleet.app.cadr_sweep import (
    CLIP_LABEL,
    SWEEP_METHODS,
    bench_cadr_sweep,
    cadr_sweep,
    markdown,
    parse_methods,
)
from ldpfleet.collector.cadr_reference import choose_theta, private_run
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

EPS_LIST = (1.0, 3.0)
SEEDS = (0, 1)


@pytest.fixture(scope="module")
def graph():
    return generate("barabasi_albert", 150, seed=4, m=3)


@pytest.fixture(scope="module")
def both(graph):
    """The same sweep with and without clip (θ sweep, ε sweep, pipelines)."""
    kwargs = dict(thetas=[2, 6, 15], eps=3.0, eps_list=EPS_LIST, runs=len(SEEDS), workers=1,
                  pipelines=True, theta_draws=3)  # fmt: skip
    with_clip = cadr_sweep(graph, methods=("ll", "er", "clip"), **kwargs)
    without = cadr_sweep(graph, methods=("ll", "er"), **kwargs)
    return with_clip, without


def _mean(graph, rule, eps, metric="mae", pipeline="paper", part=None):
    runs = [private_run(graph, "clip", rule, eps, 0.1, s, pipeline) for s in SEEDS]
    return float(np.mean([getattr(r, part)[metric] if part else getattr(r, metric) for r in runs]))


def test_clip_is_accepted_and_in_the_default_list():
    assert parse_methods("ll,clip") == ("ll", "clip")
    assert SWEEP_METHODS == ("ll", "lh", "ra", "er", "clip")
    assert cadr_sweep.__kwdefaults__["methods"] == SWEEP_METHODS


def test_the_refusal_of_an_unknown_method_names_clip():
    with pytest.raises(ParameterError) as err:
        parse_methods("ll,clp")
    assert "clip" in err.value.limit and err.value.value == "clp"
    assert "clip" in str(err.value)  # the near miss or the allowed list


@pytest.mark.slow  # the sweep fixture / a CLI sweep: ~1 s each (tests/tiers.py)
def test_the_projections_figures_do_not_change_with_clip(both):
    with_clip, without = both
    for key in ("theta_sweep", "eps_sweep", "pipelines"):
        a, b = dict(with_clip[key]), dict(without[key])
        for d in (a, b):
            d.pop("seconds"), d.pop("cpu_seconds")
        assert a == b, key
    assert without["clip"] is None and with_clip["clip"] is not None
    assert all(r["method"] != "clip" for r in with_clip["theta_sweep"]["rows"])


@pytest.mark.slow  # the sweep fixture / a CLI sweep: ~1 s each (tests/tiers.py)
def test_clip_rows_equal_private_run_for_the_same_seeds(both, graph):
    clip = both[0]["clip"]
    # θ sweep: a given θ (clip's DSR at the whole ε, no θ search)
    for row in clip["theta_sweep"]["rows"]:
        assert row["method"] == "clip"
        assert row["mae"] == pytest.approx(_mean(graph, row["theta"], 3.0))
    # ε sweep: its own θ by Deviation, searched at its own ε_dsr = ε (not (1-α)ε)
    for row in (r for r in clip["eps_sweep"]["rows"] if r["rule"] == "by_deviation"):
        own, _ = choose_theta(graph.degrees(), "auto-dev", row["eps"])
        assert row["theta"] == own
        assert row["mae"] == pytest.approx(_mean(graph, "auto-dev", row["eps"]))
        assert row["mse"] == pytest.approx(_mean(graph, "auto-dev", row["eps"], "mse"))
    # pipelines: the paper and dp pipelines' raw and post-processed releases
    for row in clip["pipelines"]["rows"]:
        e, p = row["eps"], row["pipeline"]
        for part in ("raw", "postprocessed"):
            for metric in ("mae", "mse", "histogram_l1", "histogram_emd"):
                want = _mean(graph, "auto-dev", e, metric, p, part)
                assert row[f"{part}_{metric}"] == pytest.approx(want), (e, p, part, metric)
    assert {(r["eps"], r["pipeline"]) for r in clip["pipelines"]["rows"]} == {
        (e, p) for e in EPS_LIST for p in ("paper", "dp")
    }


def _rows_starting(text: str, prefix: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith(prefix)]


@pytest.mark.slow  # the sweep fixture / a CLI sweep: ~1 s each (tests/tiers.py)
def test_markdown_shows_clip_labelled_in_every_table_and_keeps_the_others(both):
    with_clip, without = both
    text, old = markdown(with_clip, "cmd"), markdown(without, "cmd")
    new_lines = set(text.splitlines())
    # every table row of the sweep without clip is still there, unchanged (the ones that
    # carry wall-clock seconds are captions, not rows)
    assert {x for x in old.splitlines() if x.startswith("|")} <= new_lines
    assert f"MAE {CLIP_LABEL}" in text  # the θ table
    assert _rows_starting(text, f"| {CLIP_LABEL} | ")  # chosen θ and shape tables
    assert len(_rows_starting(text, f"| {CLIP_LABEL} | MAE |")) == 1
    for e in EPS_LIST:  # pipelines and histograms: one row per ε in each
        assert len(_rows_starting(text, f"| {e:g} | {CLIP_LABEL} |")) == 2
    assert f"**{CLIP_LABEL}: MAE / MSE vs ε, its own θ by Deviation" in text
    assert "NOT part of the equal-DSR-budget comparison" in text
    # never in the projections' winner counts
    assert "Winner counts: LL" in text and "CLIP " not in text.split("Winner counts:")[1][:40]
    json.dumps(with_clip, allow_nan=False)


def test_clip_alone_renders(graph):
    result = cadr_sweep(graph, methods=("clip",), thetas=[3, 8], eps_list=(2.0,), runs=1,
                        workers=1, pipelines=True, theta_draws=2)  # fmt: skip
    assert result["theta_sweep"] is None and result["clip"]["pipelines"]["rows"]
    text = markdown(result, "cmd")
    assert f"| 2 | {CLIP_LABEL} |" in text and f"MAE {CLIP_LABEL}" in text


@pytest.mark.slow  # the sweep fixture / a CLI sweep: ~1 s each (tests/tiers.py)
def test_cli_refuses_an_unknown_method_naming_clip(tmp_path, graph):
    path = tmp_path / "g.txt"
    path.write_text("\n".join(f"{i} {j}" for i, j in graph.edge_array().tolist()))
    app = typer.Typer()
    app.command("cadr-sweep")(bench_cadr_sweep)
    app.command("other")(lambda: None)
    bad = CliRunner().invoke(app, ["cadr-sweep", "--graph", str(path), "--methods", "ll,xx"])
    assert bad.exit_code == 2 and "xx" in bad.output and "clip" in bad.output
    ok = CliRunner().invoke(app, ["cadr-sweep", "--graph", str(path), "--methods", "clip",
                                  "--thetas", "", "--eps-list", "3", "--runs", "1"])  # fmt: skip
    assert ok.exit_code == 0, ok.output
    assert json.loads(ok.stdout)["clip"]["eps_sweep"]["rows"][0]["method"] == "clip"
