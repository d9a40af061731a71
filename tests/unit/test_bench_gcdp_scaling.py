"""``ldpfleet bench gcdp-timing`` / ``gcdp-scaling`` (scenarios/bench_gcdp_scaling.py) on
small synthetic data: JSON shape, positive timings, GC-DP-Cache really reuses theta,
parameter refusals with their field, the plot file, the commands' exit status. No timing
thresholds (the machine is shared)."""

from __future__ import annotations

import json

import ldpfleet.app.bench_gcdp_scaling as scaling
import numpy as np
import pytest
import typer
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

WINDOW = 10


def frame(records: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    y = ((np.arange(records) // (3 * WINDOW)) % 2).astype(int)
    x = np.column_stack(
        [
            20 + 2 * y + rng.normal(0, 0.5, records),
            27 + rng.normal(0, 1.0, records),
            np.where(y == 1, 480.0, 0.0) + rng.uniform(0, 20, records),
            450 + 400 * y + rng.normal(0, 30, records),
            0.0045 + 0.0002 * y + rng.normal(0, 5e-5, records),
        ]
    )
    return x, y


@pytest.fixture(scope="module")
def data():
    return (*frame(300, 1), *frame(120, 2))


def timing(data, **kw):
    args = {"repeats": 2, "seed": 3, "tau": 0.15, "window": WINDOW, "data": data}
    args.update(kw)
    return scaling.bench_gcdp_timing(**args)


@pytest.fixture(scope="module")
def timed(data):
    return timing(data)


def test_timing_shape(timed):
    assert set(timed["runtime_s"]) == set(scaling.TIMED_METHODS)
    for method, cell in timed["runtime_s"].items():
        assert 0.0 < cell["min"] <= cell["median"] <= cell["max"]
        assert len(timed["runtime_samples_s"][method]) == 2
        assert timed["peak_mem_mb"][method] > 0.0
        assert timed["seed_runtime_s"][method] == scaling.SEED_TABLE12_S[method]
        assert timed["speedup_vs_seed"][method] > 0.0
        assert isinstance(timed["meets_target"][method], bool)
        cpu = timed["cpu_s"][method]
        assert 0.0 <= cpu["min"] <= cpu["median"] <= cpu["max"]
    assert timed["protocol"]["tau"] == 0.15 and not timed["protocol"]["tau_selected"]
    assert timed["protocol"]["test_windows"] == 12
    json.dumps(timed)  # serialisable


def test_progress_counts(data):
    calls = []
    timing(data, progress=lambda done, total: calls.append((done, total)))
    total = len(scaling.TIMED_METHODS) * (2 + 2)  # warm-up, 2 timed, traced
    assert calls == [(i, total) for i in range(1, total + 1)]
    steps = []
    scaling.bench_gcdp_scaling(
        (6, 8), 200, 2, 0, plot=None, progress=lambda done, total: steps.append((done, total))
    )
    assert steps == [(i, 6) for i in range(1, 7)]  # per M: one warm-up and 2 timed passes


def test_cache_pass_reuses_theta(timed):
    cache = timed["cache"]
    # warm-up + 2 timed + 1 traced pass, all reused from the one first calibration
    assert cache["calibrations"] == 1
    assert cache["cached_passes"] == 4
    assert cache["reasons"] == {"first": 1, "reuse": 4}
    assert cache["max_distance"] == 0.0


def test_cache_calls_calibration_once(data, monkeypatch):
    calls = []
    real = scaling._calibrate_prepared

    def counting(prep, tau, **kwargs):
        calls.append(tau)
        assert kwargs["fresh_utility"]  # bench gcdp's calibration, utility inside the pass
        return real(prep, tau, **kwargs)

    monkeypatch.setattr(scaling, "_calibrate_prepared", counting)
    out = timing(data, repeats=5, methods=("GC-DP-Cache",))
    assert len(calls) == 1 and calls == [0.15]
    assert out["cache"]["cached_passes"] == 7 and out["cache"]["calibrations"] == 1
    assert list(out["runtime_s"]) == ["GC-DP-Cache"]


def test_drift_summary():
    x = np.random.default_rng(0).uniform(size=(50, 4))
    s = scaling.drift_summary(x)
    assert s.shape == (6,) and np.all((s >= 0.0) & (s <= 1.0))
    same = scaling.drift_summary(np.column_stack([x[:, 0], x[:, 0]]))
    assert same == pytest.approx([1.0])


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"repeats": 0}, "repeats"),
        ({"repeats": True}, "repeats"),
        ({"repeats": 1_001}, "repeats"),  # helper Q: 1e10 ran for ever
        ({"seed": -1}, "seed"),
        ({"seed": 2**63}, "seed"),
        ({"tau": 0.33}, "tau"),
        ({"tau_draws": 0}, "tau_draws"),
        ({"window": 0}, "window"),
        ({"methods": ()}, "methods"),
        ({"methods": ("GC-DP", "GC-DP")}, "methods"),
        ({"methods": ("Gau-DP",)}, "methods"),
    ],
)
def test_timing_refusals(data, kw, field):
    with pytest.raises(ParameterError) as err:
        timing(data, **kw)
    assert err.value.field == field


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"ms": ()}, "ms"),
        ({"ms": (1, 4)}, "ms"),
        ({"ms": (4, 4)}, "ms"),
        ({"ms": (4.0,)}, "ms"),
        ({"ms": 4}, "ms"),
        ({"records": 39}, "records"),
        ({"repeats": 0}, "repeats"),
        ({"seed": -2}, "seed"),
        # helper Q, each accepted by the old code: a MemoryError traceback (M = 1e8,
        # records = 1e11), a run without end (repeats = 1e10), a matplotlib ValueError
        # after every timed pass (.txt), /tmp written as /tmp.png (a folder)
        ({"ms": (4, 3_001)}, "ms"),
        ({"records": 20_000_000 // 4 + 1}, "records"),
        ({"repeats": 1_001}, "repeats"),
        ({"seed": 2**63}, "seed"),
        ({"plot": "scaling.txt"}, "plot"),
        ({"plot": "."}, "plot"),
    ],
)
def test_scaling_refusals(kw, field):
    args = {"ms": (4,), "records": 60, "repeats": 1, "plot": None}
    args.update(kw)
    with pytest.raises(ParameterError) as err:
        scaling.bench_gcdp_scaling(**args)
    assert err.value.field == field


def test_scaling_shape_without_plot():
    out = scaling.bench_gcdp_scaling((8, 3), records=60, repeats=2, seed=1, plot=None)
    assert [row["m"] for row in out["rows"]] == [3, 8]
    for row in out["rows"]:
        assert set(row["median_s"]) == {*scaling.SCALING_STEPS, "total"}
        assert all(v > 0.0 for v in row["median_s"].values())
        calibration = [row["median_s"][s] for s in scaling.SCALING_STEPS[:4]]
        assert row["median_s"]["total"] >= max(calibration)
    assert out["dominant_step_at_max_m"] in scaling.SCALING_STEPS[:4]
    assert set(out["loglog_slope_last_two_m"]) == {*scaling.SCALING_STEPS, "total"}
    assert out["plot"] is None
    json.dumps(out)


def test_synthetic_nodes_seeded_and_correlated():
    a, f = scaling.synthetic_nodes(6, 200, 0)
    b, _ = scaling.synthetic_nodes(6, 200, 0)
    assert np.array_equal(a, b) and f.shape == (200, 4)
    assert a.min() >= 0.0 and a.max() <= 1.0
    assert np.max(scaling.drift_summary(a)) > 0.3  # the latent factors correlate nodes


def test_scaling_plot_written(tmp_path):
    path = tmp_path / "img" / "scaling.png"
    out = scaling.bench_gcdp_scaling((3, 6), records=60, repeats=1, plot=path)
    assert out["plot"] == str(path)
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_commands(data, monkeypatch, tmp_path):
    real_timing = scaling.bench_gcdp_timing
    monkeypatch.setattr(
        scaling,
        "bench_gcdp_timing",
        lambda *a, **k: real_timing(*a, tau=0.15, window=WINDOW, data=data, **k),
    )
    runner = CliRunner()
    app = typer.Typer()
    app.command()(scaling.bench_gcdp_timing_command)
    ok = runner.invoke(app, ["--repeats", "1"])
    assert ok.exit_code == 0, ok.output
    assert set(json.loads(ok.stdout)["runtime_s"]) == set(scaling.TIMED_METHODS)
    bad = runner.invoke(app, ["--repeats", "0"])
    assert bad.exit_code == 2 and "repeats" in bad.output

    app = typer.Typer()
    app.command()(scaling.bench_gcdp_scaling_command)
    ok = runner.invoke(app, ["--ms", "3,5", "--records", "60", "--repeats", "1", "--plot", ""])
    assert ok.exit_code == 0, ok.output
    assert [r["m"] for r in json.loads(ok.stdout)["rows"]] == [3, 5]
    for args, field in (
        (["--ms", "3,x"], "ms"),
        (["--ms", "1"], "ms"),
        (["--records", "5"], "records"),
        (["--repeats", "0"], "repeats"),
        (["--ms", "100000000"], "--ms: must be node counts <= 3,000, got 100000000"),
        (["--records", "100000000000"], "--records: records x largest M"),
    ):
        bad = runner.invoke(app, [*args, "--plot", ""])
        assert bad.exit_code == 2 and field in bad.output, (args, bad.output)


def test_registered_in_cli():
    from ldpfleet.app.cli import bench_app

    names = {c.name for c in bench_app.registered_commands}
    assert {"gcdp-timing", "gcdp-scaling"} <= names
