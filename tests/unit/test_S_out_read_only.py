"""Outputs into a read-only folder (helper S, new-user trial on a read-only bind mount:
``unshare -m``, ``mount -o remount,bind,ro``).

Found: ``ldpfleet run quickstart --out RO`` (and ``--out RO/sub``, ``ldpfleet collector
--out RO``, ``ldpfleet certs --out RO/pki``) ended in an ``OSError: [Errno 30] Read-only
file system`` traceback; ``ldpfleet report RUN`` on a read-only run folder too: its
refusal ("cannot write RUN/report.html") was hidden by the clean-up's own unlink failing
with EROFS. Now ``--out`` is refused before anything starts (exit 2, one sentence naming
the option, the limit and the value), ``ldpfleet.run(out_dir=...)`` raises
``ParameterError`` naming ``out_dir``, and ``report`` says it cannot write.

A read-only file system cannot be made in a test run as any user, so ``os.access`` (what
the check asks) and the writes are replaced by fakes answering as that file system does.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest
from ldpfleet.app.cli import app
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.runner import checked_run_options
from typer.testing import CliRunner


@pytest.fixture
def read_only(tmp_path, monkeypatch):
    """``tmp_path/ro``, a folder ``os.access`` says cannot be written (as on EROFS)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    real = os.access

    def access(path, mode, *args, **kwargs):
        if mode & os.W_OK and Path(path).resolve() == folder.resolve():
            return False
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    monkeypatch.chdir(tmp_path)
    return folder


@pytest.mark.parametrize("out", ["ro", "ro/sub/deeper"])
def test_run_out_in_a_read_only_folder_is_one_sentence(read_only, out):
    result = CliRunner().invoke(app, ["run", "quickstart", "--broker", "memory", "--out", out])
    assert result.exit_code == 2, result.output
    text = " ".join(result.output.replace("│", " ").split())
    assert "Traceback" not in text
    assert (
        f"--out must be a folder this user can write (an existing folder or a new path), "
        f"got '{out}' (ro is not writable: a read-only folder or file system)"
    ) in text, text
    assert list(read_only.iterdir()) == []


def test_certs_out_under_a_read_only_folder_is_refused(read_only):
    result = CliRunner().invoke(app, ["certs", "--out", "ro/pki", "--host", "x"])
    assert result.exit_code == 2 and "ro is not writable" in result.output, result.output


def test_the_api_names_out_dir(read_only):
    with pytest.raises(ParameterError) as info:
        checked_run_options("memory", "ro/x", None, None)
    assert info.value.field == "out_dir" and info.value.value == "ro/x"
    assert "ro is not writable" in str(info.value)


def test_a_writable_folder_and_a_new_path_pass(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "w").mkdir()
    assert checked_run_options("memory", "w", None, None) is None
    assert checked_run_options("memory", "new/deeper", None, None) is None


def test_report_into_a_read_only_run_folder_says_it_cannot_write(tmp_path, monkeypatch):
    from ldpfleet.app import report
    from ldpfleet.broker.trace import TraceError

    monkeypatch.setattr(report, "build_report", lambda out, progress=None: "<html></html>")

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    # EROFS for the write and for the clean-up's unlink (even of a file never made)
    monkeypatch.setattr(Path, "write_text", read_only)
    monkeypatch.setattr(Path, "unlink", read_only)
    with pytest.raises(TraceError, match=r"cannot write .*report\.html \(Read-only file system\)"):
        report.write_report(tmp_path)
