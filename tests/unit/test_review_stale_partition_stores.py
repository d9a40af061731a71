"""Review (helper G): ``ldpfleet.read_reports`` (today) reads ``collector.sqlite`` and
every ``collector-p*.sqlite`` of the run folder. A partitioned run on a real broker
(``scenarios.split_run``) leaves ``collector-p{p}.sqlite`` and ``trace-p{p}.sqlite`` there;
an in-process run into the same folder afterwards (``ldpfleet.run``, ``-b memory``; both
default to ``runs/latest``) replaced ``collector.sqlite`` and ``trace.sqlite`` but left
those (``scenarios.cadr_run.fresh_outputs``), so ``read_reports`` returned each device's
reports of both runs concatenated, and ``trace verify`` read the old partitions as this
run's. Fails on the old code (every stream twice as long)."""

from __future__ import annotations

import shutil

from ldpfleet.scenarios.cadr_run import fresh_outputs

import ldpfleet

STEPS = 12
TEXT = f"""
[scenario]
name = "stale-stores"
seed = 3
[fleet]
devices = 2
[stream]
steps = {STEPS}
eps = 4.0
w = 4
batch_steps = 4
[source]
kind = "synthetic"
bounds = [-1.0, 1.0]
"""


def test_a_run_does_not_read_an_earlier_partitioned_runs_stores(tmp_path):
    scenario = ldpfleet.parse_scenario(TEXT)
    ldpfleet.run(scenario, broker="memory", out_dir=tmp_path)
    # what a partitioned split run leaves in its folder (scenarios.merge): a store and a
    # trace per partition, here copies of a run's own
    shutil.copy(tmp_path / "collector.sqlite", tmp_path / "collector-p0.sqlite")
    shutil.copy(tmp_path / "trace.sqlite", tmp_path / "trace-p0.sqlite")
    ldpfleet.run(scenario, broker="memory", out_dir=tmp_path)
    reports = ldpfleet.read_reports(tmp_path)
    assert sorted(reports) == ["d0000", "d0001"]
    assert {device: len(values) for device, values in reports.items()} == dict.fromkeys(
        reports, STEPS
    )
    assert not list(tmp_path.glob("collector-p*.sqlite"))
    assert not list(tmp_path.glob("trace-p*.sqlite"))


def test_fresh_outputs_keeps_what_is_not_a_runs_store(tmp_path):
    keep = [tmp_path / "notes-p1.sqlite", tmp_path / "collector-px.txt", tmp_path / "data.csv"]
    for path in keep:
        path.write_text("mine")
    (tmp_path / "collector-p3.sqlite").write_text("old")
    (tmp_path / "trace-p12.sqlite-wal").write_text("old")
    fresh_outputs(tmp_path)
    assert all(path.read_text() == "mine" for path in keep)
    assert not (tmp_path / "collector-p3.sqlite").exists()
    assert not (tmp_path / "trace-p12.sqlite-wal").exists()


BULK = """
[scenario]
name = "bulk-reports"
seed = 1
[fleet]
devices = 4
connection = "bulk"
gateway_devices = 4
[stream]
steps = 8
eps = 2.0
w = 4
batch_steps = 4
[source]
kind = "synthetic"
shape = "sine"
bounds = [-1.5, 1.5]
"""


def test_read_reports_reads_an_in_memory_bulk_run(tmp_path):
    # read_reports said "is DIR a run's output folder?" for a bulk run's folder; then it
    # read bulk runs in processes only (helper U): an in-memory one had no plan.json
    ldpfleet.run(ldpfleet.parse_scenario(BULK), broker="memory", out_dir=tmp_path)
    assert (tmp_path / "p0" / "reports.bin").is_file()
    streams = ldpfleet.read_reports(tmp_path)
    assert len(streams) == 4 and all(len(values) == 8 for values in streams.values())
