"""Ctrl-C on ``ldpfleet run`` says where the stopped run's outputs are (helper V): before,
one word, ``interrupted``, while OUT had no results.json and ``ldpfleet report OUT`` /
``trace verify OUT`` refused it (measured: 20,000 devices through gateways on Mosquitto,
SIGINT 12 s in, OUT/collector/results.json aborted with 23,540 of 400,000 reports; a bulk
run's OUT/p0/reports.bin of 90 MB without a summary)."""

from ldpfleet.app.cli_run import interrupted_sentence


def test_a_split_run_points_to_the_collector_side_and_the_shards(tmp_path):
    (tmp_path / "collector").mkdir()
    (tmp_path / "collector" / "results.json").write_text("{}")
    said = interrupted_sentence(tmp_path)
    assert said.startswith(f"interrupted: no {tmp_path}/results.json")
    assert f"ldpfleet trace verify {tmp_path}/collector {tmp_path}/fleet-*" in said


def test_a_bulk_run_points_to_the_partition_stores(tmp_path):
    (tmp_path / "p0").mkdir()
    (tmp_path / "p0" / "reports.bin").write_bytes(b"")
    assert f"({tmp_path}/p*/reports.bin)" in interrupted_sentence(tmp_path)


def test_nothing_written_yet_or_an_earlier_results_file_says_one_word(tmp_path):
    assert interrupted_sentence(tmp_path) == "interrupted"
    (tmp_path / "collector").mkdir()
    (tmp_path / "collector" / "results.json").write_text("{}")
    (tmp_path / "results.json").write_text("{}")
    assert interrupted_sentence(tmp_path) == "interrupted"
