"""One device's reports as the collector kept them (held-out library-user QA, helper D,
2026-12-05).

Found (fails on the code before the fix: no such function): to analyse a device's
privatised stream (``detect_period``, ``cpr``) a researcher rebuilt it from the trace by
hand, sorting ``sw_report`` batches by ``seq`` and concatenating their values
(docs/tutorial.md did so), which also counts a retransmitted batch twice: the trace keeps
every message that crossed the broker, the collector each (device, seq) once.
``ldpfleet.read_reports`` reads the collector's store instead.
"""

from __future__ import annotations

import numpy as np
import pytest

import ldpfleet

STEPS = 24

TEXT = f"""
[scenario]
name = "read-reports"
seed = 5
[fleet]
devices = 3
[stream]
steps = {STEPS}
eps = 4.0
w = 4
batch_steps = 5
[source]
kind = "synthetic"
shape = "sine"
period = 6
bounds = [-1.0, 1.0]
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("read-reports")
    ldpfleet.run(ldpfleet.parse_scenario(TEXT), broker="memory", out_dir=out)
    return out


def test_every_device_stream_in_step_order(run_dir):
    streams = ldpfleet.read_reports(run_dir)
    assert sorted(streams) == ["d0000", "d0001", "d0002"]
    for device, values in streams.items():
        assert isinstance(values, np.ndarray) and values.dtype == np.float64
        assert values.shape == (STEPS,), device
        by_trace = sorted(
            (m.t0, m.values)
            for _, _, m in ldpfleet.read_trace(run_dir, kind="sw_report", device=device)
            if m.sender == device
        )
        assert np.array_equal(values, np.concatenate([v for _, v in by_trace]))


def test_one_device(run_dir):
    one = ldpfleet.read_reports(run_dir, device="d0001")
    assert np.array_equal(one, ldpfleet.read_reports(run_dir)["d0001"])
    sw = ldpfleet.SquareWave(1.0)  # eps0 = eps / w
    assert sw.in_domain(one).all()


def test_a_device_with_no_report_is_named(run_dir):
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.read_reports(run_dir, device="d0099")
    assert info.value.field == "device" and "d0000" in str(info.value)


def test_a_folder_without_a_run_is_a_file_not_found_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        ldpfleet.read_reports(tmp_path)


@pytest.mark.parametrize("value", [None, 3])
def test_a_run_dir_of_the_wrong_type_is_named(value):
    with pytest.raises(ldpfleet.ParameterError) as info:
        ldpfleet.read_reports(value)
    assert info.value.field == "run_dir"


def test_a_file_of_the_run_names_its_folder(run_dir):
    """``read_reports`` takes the run's results.json (or trace.sqlite) as ``read_results``
    and ``read_ledger`` do (helper U4: it looked for ``results.json/collector.sqlite``)."""
    streams = ldpfleet.read_reports(run_dir)
    for name in ("results.json", "trace.sqlite"):
        by_file = ldpfleet.read_reports(run_dir / name)
        assert sorted(by_file) == sorted(streams)
        assert all(np.array_equal(by_file[d], streams[d]) for d in streams)
