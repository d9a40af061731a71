"""Private CADR-LDP baselines at equal DSR budget, and the θ / ε sweep tables."""

from __future__ import annotations

import itertools
import json

import ldpfleet.collector.cadr_reference as ref
import numpy as np
import pytest
import typer
from ldpfleet.app.cadr_sweep import (
    _pipeline_lines,
    _theta_accuracy_lines,
    bench_cadr_sweep,
    cadr_sweep,
    markdown,
    parse_eps,
    parse_methods,
    parse_thetas,
    shape_check,
    theta_accuracy,
)
from ldpfleet.collector.cadr_reference import (
    METHODS,
    choose_theta,
    private_run,
    sum_of_local_errors,
)
from ldpfleet.collector.theta_search import local_error
from ldpfleet.devices.graphs import generate
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.rr import WarnerRR
from scipy.stats import gamma
from typer.testing import CliRunner

EPS, ALPHA = 3.0, 0.5  # α = 1/2: a DSR at ε instead of (1-α)ε halves the noise (see below)


@pytest.fixture(scope="module")
def graph():
    return generate("barabasi_albert", 400, seed=3, m=6)


def _laplace_mean_abs_bounds(samples: int) -> tuple[float, float]:
    """Two-sided acceptance interval, false-failure probability 1e-6, for the mean of
    ``samples`` values |L_k| / b with L_k iid Laplace(0, b): each |L_k| / b is Exp(1), so
    their sum is Gamma(samples, 1) EXACTLY and the mean is Gamma(samples, 1/samples); the
    interval is its 5e-7 and 1 - 5e-7 quantiles. For 2,000 samples: about [0.90, 1.11]."""
    return (
        float(gamma.ppf(5e-7, samples, scale=1 / samples)),
        float(gamma.isf(5e-7, samples, scale=1 / samples)),
    )


# --- equal-DSR-budget baselines ---------------------------------------------------------------


@pytest.mark.parametrize("method", METHODS)
def test_every_method_charges_exactly_what_it_uses(graph, method):
    budget = CadrBudget(EPS, ALPHA)
    run = private_run(graph, method, 15, EPS, ALPHA, seed=1)
    expected = {"laplace": budget.dsr}
    if method in ("ll", "lh", "ra"):
        expected["warner_rr"] = budget.lpea
    if method in ("ll", "lh"):
        expected["exponential"] = budget.ndoe
    assert run.spent == pytest.approx(expected, rel=1e-12)
    # ra spends ε_lpea + ε_dsr = (1 - α/2) ε and leaves the NDOE share unspent; er (1 - α) ε
    total = {"ll": EPS, "lh": EPS, "ra": (1 - ALPHA / 2) * EPS, "er": (1 - ALPHA) * EPS}
    assert sum(run.spent.values()) == pytest.approx(total[method], rel=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_mechanisms_receive_the_budget_that_is_charged(graph, method, monkeypatch):
    # spies on the mechanism constructors / the DSR call as cadr_reference sees them: the
    # ledger entries above must be the ε the mechanisms actually run with
    seen: dict[str, list[float]] = {"exponential": [], "warner_rr": [], "laplace": []}
    real_em, real_rr, real_dsr = ref.ExponentialMechanism, ref.WarnerRR, ref.dsr_release

    def em(eps, sensitivity):
        seen["exponential"].append(eps)
        return real_em(eps, sensitivity)

    def rr(eps):
        seen["warner_rr"].append(eps)
        return real_rr(eps)

    def dsr(kept, theta, eps, rng):
        seen["laplace"].append(eps)
        return real_dsr(kept, theta, eps, rng)

    monkeypatch.setattr(ref, "ExponentialMechanism", em)
    monkeypatch.setattr(ref, "WarnerRR", rr)
    monkeypatch.setattr(ref, "dsr_release", dsr)
    run = private_run(graph, method, 15, EPS, ALPHA, seed=2)
    assert {k: v for k, v in seen.items() if v} == {k: [v] for k, v in run.spent.items()}


@pytest.mark.parametrize("method", METHODS)
def test_released_noise_has_the_dsr_scale(graph, method, monkeypatch):
    # The released value minus the kept degree is Laplace(θ / ((1-α)ε)) for every method.
    # 400 nodes × 5 seeds = 2,000 samples of |noise| / b, whose mean must fall in the 1e-6
    # interval of _laplace_mean_abs_bounds (~[0.90, 1.11]). A DSR at the whole ε would give
    # b (1-α) = b / 2 (mean ~0.5) and fail by ~20 standard deviations.
    noise: list[np.ndarray] = []
    real_dsr = ref.dsr_release

    def dsr(kept, theta, eps, rng):
        out = real_dsr(kept, theta, eps, rng)
        noise.append(out - np.clip(kept, 0, theta))
        return out

    monkeypatch.setattr(ref, "dsr_release", dsr)
    theta = 15
    for seed in range(5):
        private_run(graph, method, theta, EPS, ALPHA, seed)
    scaled = np.abs(np.concatenate(noise)) / (theta / ((1 - ALPHA) * EPS))
    lo, hi = _laplace_mean_abs_bounds(scaled.size)
    assert scaled.size == 2000 and lo < scaled.mean() < hi


def test_edge_remove_at_the_max_degree_is_pure_dsr_noise(graph):
    # End to end, no spy: ER at θ = max degree deletes nothing, so each run's MAE is the mean
    # of 400 |Laplace(θ/ε_dsr)| and the mean over 5 seeds is b × Gamma(2000, 1/2000): the
    # same 1e-6 interval applies. A DSR at ε (b halved) would land near 0.5.
    theta = int(graph.degrees().max())
    runs = [private_run(graph, "er", theta, EPS, ALPHA, seed) for seed in range(5)]
    assert all(r.kept_edge_ratio == 1.0 for r in runs)
    scaled = np.mean([r.mae for r in runs]) / (theta / ((1 - ALPHA) * EPS))
    lo, hi = _laplace_mean_abs_bounds(5 * graph.n)
    assert lo < scaled < hi


def test_theta_searches_use_the_same_dsr_budget_for_every_method(graph):
    degrees = graph.degrees()
    eps_dsr = CadrBudget(EPS, ALPHA).dsr
    want = choose_theta(degrees, "auto-dev", eps_dsr)[0]
    assert want != choose_theta(degrees, "auto-dev", EPS)[0]  # so the check can fail
    for method in METHODS:
        assert private_run(graph, method, "auto-dev", EPS, ALPHA, seed=0).theta == want
        assert private_run(graph, method, "auto-sum", EPS, ALPHA, seed=0).theta == want


def test_fast_paths_are_bit_identical_to_the_published_functions(graph):
    degrees = graph.degrees()
    for theta in (1, 7, 30, int(degrees.max())):
        slow = float(sum(local_error(int(d), theta, 2.7) for d in degrees))
        assert sum_of_local_errors(degrees, theta, 2.7) == slow
    rr = WarnerRR(0.15)
    em1 = np.expm1(rr.eps)
    for yes, asked in ((0, 1), (3, 7), (40, 41), (0, 200)):
        # negotiate()'s count: the same arithmetic as WarnerRR.debias_count
        assert (yes * (em1 + 2.0) - asked) / em1 == rr.debias_count(yes, asked)


def test_ra_is_the_negotiation_without_codes(graph, monkeypatch):
    # private RA never samples NDOE codes and still negotiates (kept degrees ≤ θ, RR rounds)
    def no_codes(*args, **kwargs):
        raise AssertionError("ra must not run the exponential mechanism")

    monkeypatch.setattr(ref, "ExponentialMechanism", no_codes)
    run = private_run(graph, "ra", 10, EPS, ALPHA, seed=4)
    assert 0 < run.kept_edge_ratio < 1 and run.bound_mean > 0


# --- sweep -------------------------------------------------------------------------------------


def test_parsers():
    assert parse_thetas("1..5, 10..20:5,3") == [1, 2, 3, 4, 5, 10, 15, 20]
    assert parse_eps("3,1,1.5") == [1.0, 1.5, 3.0] and parse_eps("") == []
    assert parse_methods("ra, ll") == ("ra", "ll")
    for bad in ("0..3", "5..1", "1..4:0", "x"):
        with pytest.raises(ParameterError):
            parse_thetas(bad)
    with pytest.raises(ParameterError):
        parse_methods("ll,xx")
    with pytest.raises(ParameterError):
        parse_eps("1,-2")


def test_shape_check():
    s = shape_check([1, 2, 3, 4, 5], [9.0, 5.0, 5.5, 3.0, 6.0])
    assert (s["argmin"], s["rise_before"], s["drop_after"]) == (4, 0.5, 0.0)
    s = shape_check([1, 2, 3, 4], [4.0, 2.0, 3.0, 2.5])
    assert (s["argmin"], s["rise_before"], s["drop_after"], s["violation"]) == (2, 0, 0.5, 0.5)
    assert shape_check([1, 2], [1.0, 2.0])["violation"] == 0.0


@pytest.fixture(scope="module")
def sweep(graph):
    return cadr_sweep(graph, thetas=[1, 4, 10, 40], eps_list=[2.0, 3.0], runs=2, workers=1)


def test_sweep_structure(sweep, graph):
    ts = sweep["theta_sweep"]
    c = ts["choices"]
    # both searches minimise sum_i max(0, d_i - θ) + n θ / ε_dsr: the same θ
    assert c["by_sum"] == c["by_deviation"] and c["eps_dsr"] == pytest.approx(2.7)
    assert ts["thetas"] == sorted({1, 4, 10, 40, c["by_deviation"]}) and ts["grid"] == [
        1,
        4,
        10,
        40,
    ]
    assert len(ts["rows"]) == len(METHODS) * len(ts["thetas"])
    for row in ts["rows"]:
        assert {"method", "theta", "mae", "mae_se", "mse", "mse_se", "spent"} <= set(row)
        assert row["mse"] >= row["mae"] ** 2 - 1e-9 and row["mae_se"] >= 0
    for m in METHODS:
        v = ts["methods"][m]
        maes = {r["theta"]: r["mae"] for r in ts["rows"] if r["method"] == m}
        assert v["argmin_mae"] == min(maes, key=maes.get)
        assert v["mae_at_by_deviation"] == maes[c["by_deviation"]]
        lo, hi = v["near_min_thetas"]
        assert lo <= v["argmin_mae"] <= hi
    assert len(ts["lowest"]) == len(ts["thetas"])
    assert ts["reference_lowest_count"] + len(ts["reference_not_lowest"]) == len(ts["thetas"])
    es = sweep["eps_sweep"]
    assert es["fixed_theta"] == {m: ts["methods"][m]["argmin_mae"] for m in METHODS}
    assert len(es["rows"]) == 2 * len(METHODS) * 2
    for row in es["rows"]:
        choice = next(x for x in es["choices"] if x["eps"] == row["eps"])
        if row["rule"] == "by_deviation":
            assert row["theta"] == choice["by_deviation"]
        else:
            assert row["theta"] == es["fixed_theta"][row["method"]]
    json.dumps(sweep, allow_nan=False)  # JSON-ready
    text = markdown(sweep, "cmd")
    assert "θ sweep at ε = 3" in text and "MAE / MSE vs ε" in text


def test_sweep_shape_on_a_small_graph(sweep):
    # Projection loss dominates at θ = 1 and noise at θ = 40 (b = 40/2.7 ≈ 15 against a
    # mean degree of 12): both ends are far above θ by Deviation for every method. The gap
    # is > 3 here, against cell standard errors of ~0.1-0.4 (two runs of 400 nodes).
    ts = sweep["theta_sweep"]
    dev = ts["choices"]["by_deviation"]
    for m in METHODS:
        maes = {r["theta"]: r["mae"] for r in ts["rows"] if r["method"] == m}
        assert maes[1] > maes[dev] + 1 and maes[40] > maes[dev] + 1


def test_sweep_does_not_depend_on_the_worker_count(graph):
    kwargs = dict(methods=("ll", "ra"), thetas=[5, 12], eps_list=[], runs=2)
    one, two = cadr_sweep(graph, workers=1, **kwargs), cadr_sweep(graph, workers=2, **kwargs)
    assert one["theta_sweep"]["rows"] == two["theta_sweep"]["rows"]


def test_command_is_typer_compatible(tmp_path, graph):
    path = tmp_path / "g.txt"
    path.write_text("\n".join(f"{i} {j}" for i, j in graph.edge_array().tolist()))
    app = typer.Typer()
    app.command("cadr-sweep")(bench_cadr_sweep)
    app.command("other")(lambda: None)  # a group, as bench_app is
    args = ["cadr-sweep", "--graph", str(path), "--methods", "ll,er", "--thetas", "3,9"]
    out = CliRunner().invoke(app, [*args, "--eps-list", "3", "--runs", "1", "--workers", "1"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert result["nodes"] == graph.n and result["methods"] == ["ll", "er"]
    bad = CliRunner().invoke(app, ["cadr-sweep", "--graph", str(path), "--methods", "xx"])
    assert bad.exit_code == 2 and "xx" in bad.output
    missing = CliRunner().invoke(app, ["cadr-sweep", "--graph", str(tmp_path / "none.txt")])
    assert (
        missing.exit_code == 2
        and "none.txt" in missing.output
        and "Traceback" not in missing.output
    )


def test_pipeline_tables_show_paper_dp_and_the_trivial_baselines():
    small = generate("barabasi_albert", 150, seed=4, m=3)
    seen: list[tuple[int, int]] = []
    result = cadr_sweep(
        small, methods=("ll", "ra"), thetas=None, eps_list=(1.0, 3.0), runs=2, workers=1,
        pipelines=True, theta_draws=5, progress=lambda done, total: seen.append((done, total)),
    )  # fmt: skip
    # progress counts cells: ε sweep 2 methods x 2 ε x 2 runs, pipelines 2 x 2 x 2 x 2 runs,
    # θ accuracy 2 ε x 4 fractions (0.33, 0.6, 0.8, the dp rule); done never decreases and
    # ends at the total
    assert seen[-1] == (8 + 16 + 8, 8 + 16 + 8)
    assert all(a[0] <= b[0] and a[0] <= a[1] for a, b in itertools.pairwise(seen))
    rows = result["pipelines"]["rows"]
    assert {(r["eps"], r["method"], r["pipeline"]) for r in rows} == {
        (e, m, p) for e in (1.0, 3.0) for m in ("ll", "ra") for p in ("paper", "dp")
    }
    paper = next(r for r in rows if (r["eps"], r["method"], r["pipeline"]) == (3.0, "ll", "paper"))
    # the paper cell's raw release is the θ-by-Deviation private_run's
    again = [private_run(small, "ll", "auto-dev", 3.0, 0.1, s, "paper").mae for s in (0, 1)]
    assert paper["raw_mae"] == pytest.approx(np.mean(again))
    acc = result["theta_accuracy"]["rows"]
    assert len(acc) == 2 * 4 and all(r["theta_exact"] >= 1 for r in acc)
    assert [r["fraction"] for r in acc][:4] == [1 / 3, 0.6, 0.8, None]  # None: the dp rule
    text = markdown(result, "cmd")
    assert "Trivial baselines" in text and "non-private oracle" in text
    assert "| 3 | LL |" in text and "DP θ search: chosen θ vs the non-private optimum" in text


def test_theta_accuracy_refuses_a_fixed_fraction_below_the_theta_search_floor(graph):
    """The fixed-fraction rows built ``CadrBudget(eps, alpha, f)`` directly: at ε = 0.1 the
    1/3 row's ε_θ = 0.0033 is below THETA_EPS_MIN = 0.005, a budget every real run
    refuses, yet it was measured as if it ran. Now the row says so; the others still run."""
    result = theta_accuracy(graph, [0.1], 0.1, draws=2)
    third, *others = result["rows"]
    assert third["fraction"] == 1 / 3 and "ε_θ >= 0.005" in third["refused"]
    assert "median_ratio" not in third
    assert all("refused" not in r and r["theta_exact"] >= 1 for r in others)
    text = "\n".join(_theta_accuracy_lines(result))
    assert "| 0.1 | 0.33 | refused: eps: must give the dp pipeline's θ search" in text


def _table(text: str, header_start: str) -> tuple[list[str], list[list[str]]]:
    """The header cells and body rows (cells) of the markdown table whose header begins so."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    body = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        body.append([c.strip() for c in line.strip("|").split("|")])
    return header, body


def test_tables_give_mse_with_and_without_post_processing_and_baselines_beside_each_row():
    """Issue 20 asks for MAE and MSE with and without post-processing, the trivial
    baselines beside every release: the pipeline table lacked the paper + pp MSE and the
    baselines' MSE, the ε sweep table both baselines."""
    small = generate("barabasi_albert", 150, seed=4, m=3)
    result = cadr_sweep(
        small, methods=("ll",), thetas=None, eps_list=(3.0,), runs=1, workers=1,
        pipelines=True, theta_draws=2,
    )  # fmt: skip
    text = markdown(result, "cmd")
    base = result["baselines"]
    median, zero = base["constant_median_oracle"], base["all_zero"]
    paper = next(r for r in result["pipelines"]["rows"] if r["pipeline"] == "paper")
    header, rows = _table(text, "| ε | method | θ paper |")
    (row,) = rows
    cell = dict(zip(header, row, strict=True))
    assert cell["MSE paper + pp"] == f"{paper['postprocessed_mse']:,.0f}"
    assert cell["MSE median (oracle) / zero"] == f"{median['mse']:,.0f} / {zero['mse']:,.0f}"
    header, rows = _table(text, "| ε | θ |")
    (row,) = rows
    cell = dict(zip(header, row, strict=True))
    assert cell["MAE median (oracle) / zero"] == f"{median['mae']:,.2f} / {zero['mae']:,.2f}"
    assert cell["MSE median (oracle) / zero"] == f"{median['mse']:,.0f} / {zero['mse']:,.0f}"


def test_histogram_caption_names_the_dp_histogram_as_the_theta_search_counts_read_by_boot():
    """The dp release's histogram is the θ search's noisy counts read by ``boot``
    (``degree_postprocess.search_priors``), not the deconvolved distribution's (that is
    'paper + pp'): the caption said otherwise."""
    sweep = {
        "eps": [], "rows": [], "runs": 1, "seconds": 0.0,
        "baselines": {"constant_median_oracle": {"mae": 1.0}, "all_zero": {"mae": 2.0}},
    }  # fmt: skip
    text = "\n".join(_pipeline_lines(sweep, ("ll",)))
    assert "'dp': the consistent histogram of the deconvolved distribution" not in text
    assert "read by `boot`" in text and "'paper + pp': the consistent histogram" in text


def test_theta_accuracy_searches_over_the_dp_pipelines_public_bound(graph):
    """The dp pipeline's θ search buckets [0, D] with the PUBLIC bound D = n − 1
    (``resolve_degree_bound("auto", "dp", ...)``); the accuracy table called ``dp_theta``
    without a bound, i.e. over the graph's maximum degree (not private), another bucket
    grid: its "exact θ" was not the pipeline's (on this graph 15 against 16)."""
    acc = theta_accuracy(graph, [EPS], 0.1, draws=1)
    rule = next(r for r in acc["rows"] if r["fraction"] is None)
    run = private_run(graph, "ll", "auto-dev", EPS, 0.1, 0, "dp")
    assert run.theta_chosen_by == "search"
    assert rule["theta_exact"] == run.theta_search["theta_exact"]
    assert acc["degree_bound"] == graph.n - 1


def test_theta_accuracy_caption_gives_the_small_eps_branch_of_the_rule():
    """At ε ≤ 0.5 the rule's ε_θ is (1 − 0.4 α − 0.1) ε (0.43 for ego-Facebook at 0.5),
    not max(0.6 α ε, min(ε/2, 0.5, 1200/n)) (0.25) as the caption said."""
    text = "\n".join(_theta_accuracy_lines({"draws": 1, "degree_bound": 9, "rows": []}))
    assert "(1 − 0.4 α − 0.1) ε at ε ≤ 0.5, linear in between" in text
    assert "from ε = 1 up" in text and "D = 9" in text
