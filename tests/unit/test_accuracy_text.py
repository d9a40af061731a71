"""The reconstructions' cosine distance is printed beside a flat line's (results.json
``reconstruction.constant_cosine_distance``), in the run summary and the report: "mean
cosine distance 0.009" alone did not say whether it is good."""

from ldpfleet.app.accuracy_text import cosine_distance_text


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
