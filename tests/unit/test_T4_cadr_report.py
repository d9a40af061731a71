"""Gaps found by helper T4's planted-bug hunt in the CADR-LDP part of the report
(app/cadr_report.py): the verdict sentence's percentage and its all-zeros clause, the
released sequence of results without a pipeline, the figure's DSR budget and released
values, the table's all-zeros row and the claim table's columns. Each test names the
mutants it kills."""

from __future__ import annotations

from ldpfleet.app import cadr_report


def test_the_verdict_gives_the_gap_relative_to_the_median():
    """Kills CR3: the percentage above the constant true median was taken of the released
    MAE (+33.3 %) instead of the median's (+50.0 %)."""
    assert cadr_report.verdict(3.0, 2.0, 5.0) == (
        "The released sequence (MAE 3.000) is above the constant true median (a "
        "non-private oracle, MAE 2.000) by +1.000 (+50.0 %); below all zeros (5.000)."
    )


def test_a_release_equal_to_all_zeros_is_no_better_than_them():
    """Kills CR4 (an MAE equal to all zeros' called "below all zeros") and CR2 (an MAE
    above all zeros' by float noise only called "worse than releasing 0")."""
    for released in (5.0, 5.0 + 1e-12):
        text = cadr_report.verdict(released, 2.0, 5.0)
        assert "no better than releasing 0 for every node (MAE 5.000)" in text, text
        assert "worse than" not in text and "below all zeros" not in text


def _figures(mae: float) -> dict:
    return {"mae": mae, "mse": 1.0, "histogram_l1": 0.5, "histogram_emd": 1.0}


def test_results_without_a_pipeline_are_judged_on_the_raw_release():
    """Kills CR5: results.json without ``pipeline`` (runs before the dp pipeline) released
    the raw DSR values (``release_vs_baselines`` reads them so); ``released_verdict`` took
    the post-processed figures."""
    results = {
        "raw": _figures(3.0),
        "postprocessed": _figures(9.0),
        "baselines": {"constant_median_oracle": {"mae": 2.0}, "all_zero": {"mae": 5.0}},
    }
    assert cadr_report.released_verdict(results).startswith("The released sequence (MAE 3.000)")


def test_the_degree_figure_of_a_dp_run():
    """Kills CR6 (the DSR budget of results without ``budget`` taken as α ε instead of
    (1 - α) ε), CR7 (the dp pipeline's released values read from ``released``, the raw
    DSR values, instead of ``estimate``) and CR10 (the θ model's MAE from the released
    sequence's ``mae`` instead of the raw DSR release's, which the model describes)."""
    results = {
        "pipeline": "dp",
        "eps": 2.0,
        "alpha": 0.25,
        "mae": 0.9,
        "raw": {"mae": 1.2},
        "per_device": {"n1": {"degree": 3, "released": 5.5, "estimate": 4.0}},
    }
    figure = cadr_report.degree_figure_inputs(results)
    assert figure.eps_dsr == 1.5
    assert list(figure.released) == [4.0] and list(figure.degrees) == [3.0]
    assert figure.label == "released degree (post-processed)"
    assert figure.model_mae == 1.2


def test_the_table_rows_hold_their_own_figures():
    """Kills CR8 (the all-zeros row showing the constant median's figures) and CR9 (every
    figure rounded to a whole number)."""
    results = {
        "pipeline": "dp",
        "raw": _figures(3.0),
        "postprocessed": _figures(2.5),
        "baselines": {
            "constant_median_oracle": {**_figures(2.353), "value": 3},
            "all_zero": _figures(4.588),
        },
    }
    html = cadr_report.release_vs_baselines(results)
    assert (
        '<tr><td>all zero</td><td class="num">4.588</td><td class="num">1.000</td>'
        '<td class="num">0.500</td><td class="num">1.000</td></tr>'
    ) in html


def test_the_claim_table_columns_follow_the_header():
    """Kills CR11: the "charged" and "covered" cells swapped under their headers."""
    claim = {
        "statement": "s",
        "parts": [
            {"part": "DSR", "seen_by": "collector", "mechanism": "Laplace", "eps": 1.5,
             "charged": "yes", "covered": "no", "note": None},
        ],
    }  # fmt: skip
    html = cadr_report._claim_table(claim)
    assert (
        '<tr><td>DSR</td><td>collector</td><td>Laplace</td><td class="num">1.500</td>'
        "<td>yes</td><td>no</td><td>—</td></tr>"
    ) in html
