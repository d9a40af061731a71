"""Gaps found by helper T4's planted-bug hunt in the output folder's path check
(scenarios/out_paths.py) and the atomic writer (scenarios/jsonout.py). Each test names
the mutants it kills."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ldpfleet.scenarios import jsonout
from ldpfleet.scenarios.out_paths import out_path_problem


def test_the_name_limit_is_in_bytes_and_inclusive(tmp_path):
    """Kills OP2 (the folder name's length counted in characters: 128 two-byte letters are
    256 bytes, which mkdir refuses with ENAMETOOLONG) and OP1 (a name one byte over the
    limit passed). The existing tests use 300 ASCII letters against the limit of 255."""
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    wide = "é" * (limit // 2 + 1)  # 2 bytes each in UTF-8: over the limit
    said = out_path_problem(tmp_path / wide)
    assert said is not None and f"is {len(os.fsencode(wide))} bytes long" in said
    assert out_path_problem(tmp_path / ("a" * (limit + 1))) is not None
    assert out_path_problem(tmp_path / ("a" * limit)) is None


def test_two_files_written_at_once_in_one_folder_do_not_share_a_partial_file(tmp_path, monkeypatch):
    """Kills JO4: the file written beside the target had one name per folder
    (``.partial``): a second output written into the same folder while the first was
    being written (ledger.json and results.json by two threads) replaced it, and the first
    rename then moved the second file's bytes over the first's path."""
    real_replace = os.replace
    inner_done = []

    def replace_after_another_write(source, target):
        if not inner_done:  # while results.json is being written, write ledger.json
            inner_done.append(True)
            jsonout.write_json(tmp_path / "ledger.json", {"run": "ledger"})
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", replace_after_another_write)
    jsonout.write_results(tmp_path / "results.json", {"run": "results"})
    assert json.loads((tmp_path / "results.json").read_text()) == {"run": "results"}
    assert json.loads((tmp_path / "ledger.json").read_text()) == {"run": "ledger"}
    assert sorted(p.name for p in Path(tmp_path).iterdir()) == ["ledger.json", "results.json"]
