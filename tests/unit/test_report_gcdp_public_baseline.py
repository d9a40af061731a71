"""report.html's GC-DP section shows the free public baseline beside the release (helper
N: ``gcdp.public_baseline`` is a dict, and the section skipped every dict, so the report
never said that releasing the calibration means would be closer). Fails on the old code."""

from __future__ import annotations

from ldpfleet.app.report import _gcdp_section


def test_the_public_baseline_is_in_the_gcdp_section():
    results = {
        "gcdp": {
            "method": "gcdp",
            "accuracy": {"mae": 1.08, "mae_clipped": 0.34},
            "public_baseline": {
                "what": "release each node's public calibration mean every window",
                "calibration_window_mad": [0.1, 0.2],
                "nodes_noisier_than_baseline": 2,
                "note": "2 of 2 nodes have an expected |noise| above ...",
            },
        }
    }
    html = _gcdp_section(results)
    assert "public baseline: nodes_noisier_than_baseline" in html
    assert "public baseline: note" in html and "2 of 2 nodes" in html
    assert "mean 0.15 over 2 nodes" in html
