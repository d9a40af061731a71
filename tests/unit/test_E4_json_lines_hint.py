"""A JSON Lines source is refused with the command that converts it, and that command,
run as printed, gives a CSV the source reads (helper E's user trial, round 4: the refusal
said only "convert the JSON")."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from ldpfleet.devices.sources import CsvSpec, SourceError, csv_stream


def test_the_printed_command_converts_the_file(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_text(
        '{"t": 1, "temp": 20.5}\n{"t": 2, "temp": 21.0, "hum": 40}\n\n{"t": 3, "temp": null}\n'
    )
    with pytest.raises(SourceError) as refused:
        CsvSpec(str(path), "temp")
    message = str(refused.value)
    assert "is JSON, not CSV text" in message and "log.jsonl > log.csv" in message, message
    code = re.search(r'python -c "(.*?)" log\.jsonl > log\.csv', message).group(1)
    with open(tmp_path / "log.csv", "w") as out:
        subprocess.run([sys.executable, "-c", code, "log.jsonl"], cwd=tmp_path, stdout=out,
                       check=True)  # fmt: skip
    spec = CsvSpec(str(tmp_path / "log.csv"), "temp", missing="previous")
    assert csv_stream(spec, 0, 1, 3)[0].tolist() == [20.5, 21.0, 21.0]


def test_a_json_document_gets_no_json_lines_command(tmp_path):
    path = tmp_path / "doc.json"
    path.write_text('{"temp": [20.5, 21.0]}\n')
    with pytest.raises(SourceError) as refused:
        CsvSpec(str(path), "temp")
    assert "is JSON" in str(refused.value) and "python -c" not in str(refused.value)
