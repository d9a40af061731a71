"""The reconstructions' cosine distance is printed beside a flat line's (results.json
``reconstruction.constant_cosine_distance``), in the run summary and the report: "mean
cosine distance 0.009" alone did not say whether it is good."""

from ldpfleet.app import cli
from ldpfleet.app.accuracy_text import cosine_distance_text, release_mae_text

from tests.unit.test_summary_device_means_baseline import _render, _results


def test_a_reconstruction_better_than_a_flat_line():
    text = cosine_distance_text(
        {"mean_cosine_distance": 0.0091, "constant_cosine_distance": 0.1504}
    )
    assert text == "mean cosine distance 0.009 (a flat line 0.150)"


def test_a_reconstruction_no_better_than_a_flat_line_is_called_worse():
    text = cosine_distance_text({"mean_cosine_distance": 0.2, "constant_cosine_distance": 0.2})
    assert text == "mean cosine distance 0.200 (worse than a flat line 0.200)"


def test_without_the_flat_line_the_distance_stands_alone():
    text = cosine_distance_text({"mean_cosine_distance": 0.05, "constant_cosine_distance": None})
    assert text == "mean cosine distance 0.050"
    assert cosine_distance_text({"mean_cosine_distance": 0.05}) == "mean cosine distance 0.050"


def test_a_release_worse_than_the_free_baseline_says_so():
    accuracy = {"mae": 1.0786, "mae_clipped": 0.3363, "public_baseline_mae": 0.1501}
    assert release_mae_text(accuracy) == (
        "MAE 1.08 (0.336 clipped; worse than the public calibration mean 0.15)"
    )


def test_a_release_better_than_the_free_baseline_is_not_called_worse():
    accuracy = {"mae": 0.2, "mae_clipped": 0.05, "public_baseline_mae": 0.1}
    assert release_mae_text(accuracy) == "MAE 0.2 (0.05 clipped; the public calibration mean 0.1)"


def test_no_window_released_and_no_baseline():
    assert release_mae_text({"mae": None, "mae_clipped": None}) == "MAE n/a (n/a clipped)"
    assert release_mae_text({"mae": 0.5, "mae_clipped": 0.4}) == "MAE 0.5 (0.4 clipped)"


def test_a_raw_stream_has_no_device_means_row():
    """Readings sent in the clear (GC-DP's central model): their device means are exact,
    "0 (a constant guess 0.16)" said nothing; the report skipped it already."""
    average = {"estimate": 0.3, "true": 0.3, "abs_error": 0.0, "standard_error": 0.01}
    accuracy = {
        "mean_abs_error": 0.0,
        "baselines": {"constant": {"mean_abs_error": 0.16}},
        "fleet_average": average,
    }
    raw = _results(accuracy, stream={"mechanism": "raw"})
    assert "device means" not in _render(cli._summary_table(raw))
    assert "fleet average" not in _render(cli._summary_table(raw))  # exact, not "private"
    sw = _results(accuracy, stream={"mechanism": "sw"})
    assert "mean abs error of device means" in _render(cli._summary_table(sw))
