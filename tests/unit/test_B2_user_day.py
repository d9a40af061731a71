"""A new user's first day with their own Occupancy files and graphs (helper B2): each
refusal names the field, the limit and the value, and a file a user writes by hand reads."""

from __future__ import annotations

import pytest
from ldpfleet.app import bench_gcdp
from ldpfleet.app.bench_gcdp_scaling import TIMED_METHODS, _timed_methods
from ldpfleet.protocol.errors import ParameterError


@pytest.mark.parametrize(
    ("given", "needle"),
    [
        (("gcdp",), "'gcdp' is not one of NonPrivate, Lap-DP, Gau-DP, Ada-DP, Risk-DP, GC-DP "
                    "(did you mean 'GC-DP'?)"),
        (("Lap-DP", "lap_dp"), "'lap_dp' is not one of"),
        (("GC-DP", "GC-DP"), "'GC-DP' is given twice"),
        ((), "must name at least one of"),
    ],
)  # fmt: skip
def test_bench_gcdp_names_the_method_it_refuses(given, needle):
    """Old code: "must be distinct names from ..." for every bad list, a misspelt name that
    was not repeated included, naming neither the name nor the one meant."""
    with pytest.raises(ParameterError) as caught:
        bench_gcdp.method_names(given, bench_gcdp.METHODS)
    assert needle in caught.value.reason
    assert caught.value.field == "methods"
    assert caught.value.value == (given[-1] if given else ())


def test_bench_gcdp_methods_pass_unchanged():
    assert bench_gcdp.method_names(("GC-DP", "Lap-DP"), bench_gcdp.METHODS) == ("GC-DP", "Lap-DP")
    assert bench_gcdp.method_names("GC-DP", bench_gcdp.METHODS) == ("GC-DP",)


def test_gcdp_timing_names_the_method_it_refuses():
    with pytest.raises(ParameterError, match=r"'gc-dp-cache' .*did you mean 'GC-DP-Cache'"):
        _timed_methods(("gc-dp-cache",))
    assert _timed_methods(TIMED_METHODS) == TIMED_METHODS


def _occupancy_text(sep: str) -> str:
    """A small Occupancy-format file, the UCI layout (quoted header, a quoted row id and
    date on every row), fields separated by ``sep``."""
    names = ("date", "Temperature", "Humidity", "Light", "CO2", "HumidityRatio", "Occupancy")
    lines = [sep.join(f'"{n}"' for n in names)]
    for i in range(40):
        stamp = f"2015-02-04 {10 + i // 60:02d}:{i % 60:02d}:00"
        values = (21.0 + i / 100, 27.0, 400.0 * (i % 2), 500.0 + i, 0.0048, i % 2)
        lines.append(sep.join([f'"{i + 1}"', f'"{stamp}"', *map(str, values)]))
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("sep", [", ", ";  ", "\t "])
def test_occupancy_file_with_a_space_after_each_delimiter_reads(tmp_path, sep):
    """`"date", "Temperature", ...` (a space, then a quoted field): the header was read as
    '"Temperature"' and the file refused ("no column 'Temperature' ... (it has 'date',
    '"Temperature"', ...)"), and quoted dates after a space were in no known format, so
    the date order and the sampling step went unchecked."""
    from ldpfleet.collector.gcdp.evaluation import load_occupancy, record_steps

    plain, spaced = tmp_path / "plain.csv", tmp_path / "spaced.csv"
    plain.write_text(_occupancy_text(sep.rstrip(" ")))
    spaced.write_text(_occupancy_text(sep))
    x0, y0 = load_occupancy(plain)
    x1, y1 = load_occupancy(spaced)
    assert x1.shape == (40, 5)
    assert (x0 == x1).all() and (y0 == y1).all()
    assert list(record_steps(spaced)) == [60.0] * 39


def test_occupancy_spaced_file_still_checks_the_date_order(tmp_path):
    from ldpfleet.collector.gcdp.evaluation import load_occupancy

    lines = _occupancy_text(", ").splitlines()
    lines[5], lines[6] = lines[6], lines[5]  # line 6 goes back in time
    path = tmp_path / "back.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValueError, match="line 7"):
        load_occupancy(path)


def test_cadr_verdict_does_not_call_an_equal_mae_below_all_zeros():
    """A 5-node file with an isolated node ('3 3'), ε = 1, seed 1 released MAE 0.800,
    all zeros 0.800: the run printed "... by +0.600 (+300.0 %); below all zeros (0.800)"."""
    from ldpfleet.app.cadr_report import verdict

    equal = verdict(0.8, 0.2, 0.8000000000000002)
    assert "below all zeros" not in equal
    assert "no better than releasing 0 for every node (MAE 0.800)" in equal
    assert "below all zeros (0.900)" in verdict(0.8, 0.2, 0.9)
    assert "worse than releasing 0" in verdict(0.81, 0.2, 0.8)
    assert "worse than" not in verdict(0.8 + 1e-15, 0.2, 0.8)


@pytest.mark.parametrize(
    ("options", "field", "value"),
    [
        ({"fanout": 0}, "fanout", 0),
        ({"fanout": 65}, "fanout", 65),
        ({"fanout": True}, "fanout", True),
        ({"spacing": "log"}, "spacing", "log"),
    ],
)
def test_cadr_settings_refuse_fanout_and_spacing_out_of_range(options, field, value):
    """`bench cadr --transport memory --fanout 0` (or 100, or --spacing log) ran silently
    under the dp pipeline, whose one-round θ search reads neither; a scenario refused them."""
    from ldpfleet.scenarios.cadr_run import CadrSettings

    with pytest.raises(ParameterError) as caught:
        CadrSettings(method="clip", **options)
    assert (caught.value.field, caught.value.value) == (field, value)
    assert caught.value.limit


@pytest.mark.parametrize(("processes", "broker"), [(0, "memory"), (65, "memory"), (2, "memory")])
def test_cadr_fleet_refuses_processes_before_any_device_starts(processes, broker):
    """`bench cadr --transport embedded --processes 0` waited 120 s for devices no process
    ran, then printed a DevicesMissing traceback; --processes 100 started 99 children (282 of
    300 devices never joined); processes > 1 in memory was a bare ValueError."""
    from ldpfleet.devices.graphs import load_graph
    from ldpfleet.scenarios.cadr_run import run_cadr_fleet
    from ldpfleet.scenarios.loop import run as run_loop

    graph = load_graph("barabasi_albert:n=30,m=2,seed=1")
    with pytest.raises(ParameterError) as caught:
        run_loop(run_cadr_fleet(graph, broker=broker, method="clip", theta=3,
                                processes=processes))  # fmt: skip
    assert (caught.value.field, caught.value.value) == ("processes", processes)


def test_dsr_resends_back_off_and_keep_the_same_report():
    """A clip device's DSR report is re-sent at retry 5 s, then 10, 20, 40, 40 s later (it
    was every 5 s: at 25,000 devices on the memory transport each release went up 2.3 times
    on average, and a 50,000-node edge list missed the 120 s DSR stage). The report, its
    value and seq, stay the same; an ack stops the re-sends."""
    import numpy as np
    from ldpfleet.protocol import topics
    from ldpfleet.protocol.cadr_device import RETRY_BACKOFF_CAP, CadrDevice
    from ldpfleet.protocol.cadr_messages import CadrPlan, CadrTheta
    from ldpfleet.protocol.messages import Ack

    run = "cadr-b2"
    device = CadrDevice(run, "a", ["b"], np.random.default_rng(0))
    plan = CadrPlan(run=run, sender=topics.COLLECTOR_ID, eps=3.0, alpha=0.1, method="clip",
                    degree_bound=1, ndoe_parts=1)  # fmt: skip
    device.receive(topics.parse(topics.ctl(run, "cadr_plan")), plan, 0.0)
    theta = CadrTheta(run=run, sender=topics.COLLECTOR_ID, theta=1)
    device.receive(topics.parse(topics.ctl(run, "cadr_theta")), theta, 0.0)
    (first,) = device.pop_outbound()
    sent_at, now = [], 0.0
    for _ in range(6):
        now = device.next_timer()
        device.handle_timer(now)
        (again,) = device.pop_outbound()
        assert again.message == first.message
        sent_at.append(now)
    assert sent_at == [5.0, 15.0, 35.0, 75.0, 115.0, 155.0]
    assert RETRY_BACKOFF_CAP * 5.0 == 40.0
    inbox = topics.parse(topics.inbox(run, "a", topics.COLLECTOR_ID))
    device.receive(inbox, Ack(run=run, sender=topics.COLLECTOR_ID, seq=first.message.seq), now)
    assert device.next_timer() is None and device.finished


def test_a_window_longer_than_the_shipped_file_names_window():
    """`bench gcdp --window 5000` (the shipped files) said "--test-file: ...datatest.txt
    has 2665 records, ...": an option the user never gave. A given file is still named."""
    from ldpfleet.app.gcdp_datasets import occupancy_windows

    with pytest.raises(ParameterError) as caught:
        occupancy_windows(None, 5000)
    assert caught.value.field == "window"
    assert "datatest.txt has 2665 records, fewer than one window of 5000" in caught.value.reason
