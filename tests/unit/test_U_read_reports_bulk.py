"""``read_reports`` reads a bulk run (``[fleet] connection = "bulk"``) as any other run
(helper U, library-user QA).

Found: ``read_reports(bulk_run)`` raised ``FileNotFoundError`` pointing to
``ldpfleet.collector.bulk.stored_streams``, which needs the stored dtype and the device
naming of the run's plan: a researcher had to rebuild them from internals. Now the same
dict; its per-device estimates give results.json's ``accuracy`` exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

import ldpfleet
from tests.tiny_scenarios import sine_stream_text

TEXT = sine_stream_text(
    "u-bulk", devices=6, steps=20, period=10, w=5, fleet_extra='connection = "bulk"'
)


@pytest.fixture(scope="module")
def bulk_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bulk")
    ldpfleet.run(ldpfleet.parse_scenario(TEXT), broker="embedded", out_dir=out)
    return out


def test_a_bulk_runs_reports_read_as_any_runs(bulk_run):
    results = ldpfleet.read_results(bulk_run)
    assert results["kind"] == "bulk-stream" and results["reports_lost"] == 0
    streams = ldpfleet.read_reports(bulk_run)
    assert sorted(streams) == [f"d{i:04d}" for i in range(6)]
    assert all(values.shape == (20,) and values.dtype == np.float64 for values in streams.values())
    sw = ldpfleet.get_mechanism("sw", 2.0 / 5)
    assert sw.in_domain(np.concatenate(list(streams.values()))).all()
    estimates = np.array([-1.0 + 2.0 * sw.estimate_mean(v) for v in streams.values()])
    average = results["accuracy"]["fleet_average"]["estimate"]
    assert estimates.mean() == pytest.approx(average, rel=1e-12, abs=1e-12)
    assert np.abs(estimates).mean() == pytest.approx(  # each true mean is 0 (whole cycles)
        results["accuracy"]["mean_abs_error"], rel=1e-9, abs=1e-9
    )
    one = ldpfleet.read_reports(bulk_run, device="d0002")
    assert np.array_equal(one, streams["d0002"])


def test_a_folder_that_is_no_run_is_still_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="a run's output folder"):
        ldpfleet.read_reports(tmp_path)
