"""Scenario refusals come on load and leave nothing behind (brief A).

- A generator spec's parameter errors (``erdos_renyi:n=30,p=2``, ``barabasi_albert:n=10,
  m=20``, a negative or non-integer n, an unknown parameter name...) were refused only
  when the run generated the graph, after ``ldpfleet run`` had made the output folder:
  each left an empty folder behind. ``m = nan`` ended in a bare ValueError traceback and
  ``n=30,...,n=40`` silently used the last n.
- ``[cadr] eps`` below the dp θ search's floor was refused only in the run (after the
  folder), as ``eps: ...``; the floor comes from ``protocol.cadr_budget``, the function
  the run uses (``theta_search_min_eps``, ``CadrBudget.for_pipeline``).
- A refusal the file cannot decide (θ above the generated graph's maximum degree) still
  comes in the run: ``ldpfleet run`` removes the folder it made for a refused run (exit 2).
"""

from __future__ import annotations

import pytest
from ldpfleet.app.cli import app
from ldpfleet.protocol.cadr_budget import CadrBudget, plan_theta, theta_search_min_eps
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario
from typer.testing import CliRunner

from tests.unit.test_scenario_heldout import CADR, _refused

# (graph.source, what the refusal must show: the limit and the value)
BAD_SOURCES = [
    ("erdos_renyi:n=30,p=2", ("p must lie in [0, 1]", "got 2")),
    ("barabasi_albert:n=10,m=20", ("m must be < n=10", "got 20")),
    ("erdos_renyi:n=-5,p=0.1", ("n must be a positive integer", "got -5")),
    ("erdos_renyi:n=0,p=0.1", ("n must be a positive integer", "got 0")),
    ("erdos_renyi:n=3.5,p=0.1", ("n must be an integer", "'3.5'")),
    ("erdos_renyi:n=1e3,p=0.1", ("n must be an integer", "'1e3'")),
    ("erdos_renyi:n=30,q=0.1", ("q is not a parameter of erdos_renyi", "takes n, p and seed")),
    ("erdos_renyi:n=30", ("p missing", "erdos_renyi:n=N,p=")),
    ("erdos_renyi:n=30,p=0.1,n=40", ("n given twice", "'40'")),
    ("erdos_renyi:n=30,p=0.1,seed=x", ("seed must be an integer", "'x'")),
    ("erdos_renyi:n=30,p=0.1,oops", ("'oops' is not name=value", "erdos_renyi:n=N")),
    ("erdos_renyi:n=30,p=zero", ("p must be a number", "'zero'")),
    ("barabasi_albert:n=30,m=nan", ("m must be a finite number", "'nan'")),
    ("barabasi_albert:n=30,m=inf", ("m must be a finite number", "'inf'")),
    ("barabasi_albert:n=30,m=2.5", ("m must be a positive integer", "got 2.5")),
    ("barabasi_albert:n=30,m=0", ("m must be a positive integer", "got 0")),
    ("watts_strogatz:n=30,k=40,p=0.1", ("k must be < n=30", "got 40")),
    ("powerlaw_cluster:n=30,m=2,p=1.5", ("p must lie in [0, 1]", "got 1.5")),
    ("erdos_renyi:n=30,p=0", ("has no edges", "p must be > 0", "got p = 0")),
    ("erdos_renyi:n=1,p=0.5", ("has no edges", "n must be >= 2", "got n = 1")),
    ("watts_strogatz:n=30,k=1,p=0.1", ("has no edges", "k must be >= 2", "got k = 1")),
    ("erdos_renyi:n=50000,p=0.0001", ("n must be <= 20,000", "got n = 50,000")),
]


@pytest.mark.parametrize(("source", "shown"), BAD_SOURCES, ids=[s for s, _ in BAD_SOURCES])
def test_a_bad_generator_parameter_is_refused_on_load(source, shown):
    """Old: each loaded (the run refused it later, or crashed: nan, inf; or ran: n twice)."""
    with pytest.raises(ScenarioError) as info:
        parse_scenario(CADR.format(source=source, cadr=""))
    message = str(info.value)
    assert message.startswith("graph.source:") and repr(source) in message, message
    for needle in shown:
        assert needle in message, message


# files refused on load: every bad source above, and a cadr eps below the θ search's floor
# (on 20,000 devices: a fleet of 30 takes no θ search there, protocol.cadr_budget.plan_theta)
REFUSED_FILES = [CADR.format(source=source, cadr="") for source, _ in BAD_SOURCES] + [
    CADR.format(source="erdos_renyi:n=20000,p=0.0005,seed=1", cadr="eps = 0.002\n"),
]


@pytest.mark.parametrize("text", REFUSED_FILES, ids=[*(s for s, _ in BAD_SOURCES), "eps"])
def test_run_of_a_refused_file_exits_2_and_makes_no_folder(text, tmp_path):
    """Old: ``ldpfleet run FILE -o DIR`` made DIR, then refused (the graph's parameters and
    the θ floor were checked only in the run)."""
    scenario = tmp_path / "s.toml"
    scenario.write_text(text)
    out = tmp_path / "runs" / "out"
    result = CliRunner().invoke(app, ["run", str(scenario), "-o", str(out), "-b", "memory"])
    assert result.exit_code == 2, result.output
    assert "error:" in result.output, result.output
    assert not (tmp_path / "runs").exists(), result.output


def test_a_refusal_in_the_run_removes_the_folder_it_made(tmp_path):
    """A given θ above the graph's maximum degree (degree_bound = "graph-max") is known
    only once the graph is generated: the run refuses it (exit 2) and leaves no folder;
    an existing output folder and what was in it are kept."""
    scenario = tmp_path / "s.toml"
    cadr = 'theta = 1000\ndegree_bound = "graph-max"\n'
    scenario.write_text(CADR.format(source="barabasi_albert:n=30,m=2,seed=1", cadr=cadr))
    parse_scenario(scenario.read_text())  # loads: D is the generated graph's maximum
    out = tmp_path / "new" / "out"
    result = CliRunner().invoke(app, ["run", str(scenario), "-o", str(out), "-b", "memory"])
    assert result.exit_code == 2 and "degree bound" in result.output, result.output
    assert not (tmp_path / "new").exists(), result.output
    kept = tmp_path / "kept"
    kept.mkdir()
    (kept / "mine.txt").write_text("x")
    result = CliRunner().invoke(app, ["run", str(scenario), "-o", str(kept), "-b", "memory"])
    assert result.exit_code == 2, result.output
    assert (kept / "mine.txt").read_text() == "x"


def test_a_small_random_graph_without_an_edge_is_refused_on_load():
    """Old: loaded; the run refused it once generated, and on the embedded broker (a
    collector process) exited 1 leaving its folder. A small erdos_renyi graph likely to
    draw no edge is now built on load (seed 1 draws none of the 3 pairs at p = 0.01)."""
    message = str(_refused(CADR.format(source="erdos_renyi:n=3,p=0.01,seed=1", cadr="")))
    assert message.startswith("graph.source:") and "has no edges" in message, message
    parse_scenario(CADR.format(source="erdos_renyi:n=3,p=0.9,seed=1", cadr=""))


def test_a_cadr_eps_is_refused_on_load_exactly_where_the_run_refuses_it():
    """The load check is the run's own (``CadrBudget.for_pipeline``): at the floor
    ``theta_search_min_eps(alpha)`` the file loads and the run's budget is accepted; 1e-6
    below, both refuse, naming cadr.eps, the floor and the value. On 20,000 devices: a
    fleet small enough for the small-fleet rule searches no θ and has no floor
    (tests/unit/test_review_tiny_fleet_schema.py)."""
    source = "erdos_renyi:n=20000,p=0.0005,seed=1"
    for alpha in (0.01, 0.1, 0.5, 0.9, 0.95):
        floor = theta_search_min_eps(alpha)
        below = round(floor - 1e-6, 6)
        cadr = f"alpha = {alpha}\neps = {{eps}}\n"
        parse_scenario(CADR.format(source=source, cadr=cadr.format(eps=floor)))
        CadrBudget.for_pipeline(floor, alpha, "dp", True, 20000)
        assert plan_theta("auto-dev", "dp", below, alpha, 20000, 19999).searched
        with pytest.raises(ScenarioError) as info:
            parse_scenario(CADR.format(source=source, cadr=cadr.format(eps=below)))
        message = str(info.value)
        assert message.startswith("cadr.eps:") and f"eps = {below!r}" in message, message
        assert f"use eps >= {floor}" in message, message
        with pytest.raises(ParameterError):
            CadrBudget.for_pipeline(below, alpha, "dp", True, 20000)
    assert theta_search_min_eps(0.1) == 0.005814  # 0.005 / 0.86, rounded up


def test_a_cadr_eps_refused_only_for_a_large_fleet_is_refused_on_load():
    """From eps = 1 up ε_θ = max(f α ε, 1,200 / n): above 240,000 devices a small alpha x
    eps is refused by the run; the node count comes from the generator spec (nothing is
    generated) and the refusal says which alpha x eps works."""
    cadr = "alpha = 0.001\neps = 3.0\n"
    large = CADR.format(source="barabasi_albert:n=300000,m=1,seed=1", cadr=cadr)
    with pytest.raises(ScenarioError) as info:
        parse_scenario(large)
    message = str(info.value)
    assert message.startswith("cadr.eps:") and "alpha x eps to >= 0.00833333" in message
    assert "eps >= 8.333334" in message, message
    parse_scenario(CADR.format(source="barabasi_albert:n=200000,m=1,seed=1", cadr=cadr))
    parse_scenario(large.replace("eps = 3.0", "eps = 8.333334"))
