"""``--out`` / ``out_dir`` paths that mkdir cannot create (helper U, a new user's session):
a dangling symbolic link (``ln -s /mnt/usb/runs runs`` with the disk unplugged), a loop of
links, and a folder name above the file system's 255 bytes each ended ``ldpfleet run`` in
an ``OSError`` traceback (FileExistsError, FileNotFoundError, ELOOP, ENAMETOOLONG), exit 1,
after the scenario had loaded. Now refused before anything starts: exit 2, one sentence
naming ``--out``, its limit and the value (``ParameterError`` naming ``out_dir`` from
Python), and nothing made."""

from __future__ import annotations

import os

import pytest
from ldpfleet.app.cli import app
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.out_paths import out_path_problem
from ldpfleet.scenarios.runner import checked_run_options
from typer.testing import CliRunner

LONG = "a" * 300


@pytest.fixture
def links(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.symlink(tmp_path / "unplugged" / "runs", "dangling")
    os.symlink("loop2", "loop1")
    os.symlink("loop1", "loop2")
    return tmp_path


CASES = [
    ("dangling", "dangling is a symbolic link to"),
    ("dangling/run1", "dangling is a symbolic link to"),
    ("loop1/run1", "loop1 is a symbolic link to loop2, which does not exist (or the links loop)"),
    (f"runs/{LONG}", "is 300 bytes long, above the file system's limit of"),
    (f"runs/{LONG}/x", "is 300 bytes long"),
]


@pytest.mark.parametrize(("out", "said"), CASES)
def test_run_refuses_the_out_path_in_one_sentence(links, out, said):
    before = sorted(os.listdir(links))
    result = CliRunner().invoke(app, ["run", "quickstart", "--broker", "memory", "--out", out])
    text = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 2, result.output
    assert "Traceback" not in text and "--out must be an output directory" in text, text
    assert said in text, text
    assert sorted(os.listdir(links)) == before  # nothing made


@pytest.mark.parametrize(("out", "said"), CASES)
def test_the_api_names_out_dir(links, out, said):
    with pytest.raises(ParameterError) as info:
        checked_run_options("memory", out, None, None)
    assert info.value.field == "out_dir" and info.value.value == out
    assert said in str(info.value)


def test_good_paths_pass(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "made").mkdir()
    os.symlink(tmp_path / "made", "good-link")
    for out in ("made", "good-link", "good-link/new/deeper", "new/" + "b" * 255, "."):
        assert out_path_problem(tmp_path / out) is None, out
        assert checked_run_options("memory", out, None, None) is None
