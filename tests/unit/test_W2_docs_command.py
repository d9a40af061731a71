"""``ldpfleet docs`` (helper W2): the documentation pages ship with the package, and the
command lists them, prints one, or prints its path; an unknown name is refused in one line
with the nearest name and every valid one, exit 2.

Here the package is the editable install, which reads the repository's docs/; the wheel's
copy (``ldpfleet/docs/`` in the package) is checked by tests/e2e/test_wheel.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from ldpfleet.app import cli_docs
from ldpfleet.app.cli import app
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

import ldpfleet
from tests.conftest import ROOT

DOCS = ROOT / "docs"


def invoke(*args: str):
    return CliRunner().invoke(app, ["docs", *args], env={"COLUMNS": "400"})


def test_the_list_has_one_line_per_page_with_its_first_heading():
    done = invoke()
    assert done.exit_code == 0, done.output
    lines = done.stdout.splitlines()
    names = [line.split()[0] for line in lines]
    assert names == sorted(p.stem for p in DOCS.glob("*.md"))
    assert "preregistration" not in done.stdout
    by_name = {line.split()[0]: line.split(None, 1)[1] for line in lines}
    for name in ("scenarios", "tutorial", "results"):
        heading = (DOCS / f"{name}.md").read_text().splitlines()[0].removeprefix("# ")
        assert by_name[name] == heading
    assert by_name["scenarios"] == "Scenario files"


@pytest.mark.parametrize("name", ["scenarios", "scenarios.md", "docs/scenarios.md"])
def test_a_page_prints_as_its_markdown(name):
    done = invoke(name)
    assert done.exit_code == 0, done.output
    assert done.stdout == (DOCS / "scenarios.md").read_text(encoding="utf-8")
    assert done.stderr == ""


def test_path_prints_the_pages_file_and_without_a_name_the_folder():
    done = invoke("tutorial", "--path")
    assert done.exit_code == 0, done.output
    assert Path(done.stdout.strip()) == DOCS / "tutorial.md"
    assert done.stdout.count("\n") == 1
    folder = invoke("--path")
    assert folder.exit_code == 0, folder.output
    assert Path(folder.stdout.strip()) == DOCS


def test_an_unknown_name_is_refused_in_one_line_with_a_suggestion_and_every_page():
    done = invoke("scenario")
    assert done.exit_code == 2
    assert done.stdout == ""
    message = " ".join(done.stderr.split())  # rich may wrap the one sentence
    assert message.startswith("error: NAME: no documentation page 'scenario'")
    assert "(did you mean 'scenarios'?)" in message
    for page in DOCS.glob("*.md"):
        assert page.stem in message
    nothing_close = " ".join(invoke("xyzzy").stderr.split())
    assert "'xyzzy'" in nothing_close and "did you mean" not in nothing_close


def test_the_refusal_is_a_typed_parameter_error():
    with pytest.raises(ParameterError) as caught:
        cli_docs.find_page("tutorail", cli_docs.doc_pages())
    error = caught.value
    assert (error.field, error.value) == ("NAME", "tutorail")
    assert error.limit == "the name of a shipped page"
    assert "did you mean 'tutorial'?" in error.reason and "\n" not in str(error)
    # a path that is not docs/NAME.md names no page
    with pytest.raises(ParameterError):
        cli_docs.find_page("other/scenarios.md", cli_docs.doc_pages())


def test_the_editable_install_reads_the_repositorys_docs():
    assert cli_docs.docs_root() == DOCS


def test_an_installed_packages_own_docs_folder_comes_first(tmp_path, monkeypatch):
    package = tmp_path / "site" / "ldpfleet"
    (package / "docs").mkdir(parents=True)
    (package / "docs" / "one.md").write_text("intro\n```\n# not a heading\n```\n## One page\n")
    (package / "docs" / "notes.txt").write_text("not a page")
    (tmp_path / "site" / "pyproject.toml").write_text("")
    (tmp_path / "site" / "docs").mkdir()
    monkeypatch.setattr(ldpfleet, "__file__", str(package / "__init__.py"))
    assert cli_docs.docs_root() == package / "docs"
    done = invoke()
    assert done.exit_code == 0, done.output
    assert done.stdout.split() == ["one", "One", "page"]


def test_no_docs_folder_is_refused_with_exit_2(tmp_path, monkeypatch):
    package = tmp_path / "site" / "ldpfleet"
    package.mkdir(parents=True)
    (tmp_path / "site" / "docs").mkdir()  # no pyproject.toml beside it: not a source tree
    monkeypatch.setattr(ldpfleet, "__file__", str(package / "__init__.py"))
    assert cli_docs.docs_root() is None
    for args in ((), ("--path",), ("scenarios",)):
        done = invoke(*args)
        assert done.exit_code == 2, (args, done.output)
        assert done.stdout == ""
        assert done.stderr.startswith("error: ")


def test_a_page_prints_as_utf8_whatever_the_locales_encoding(tmp_path):
    """The pages hold ε, θ, →: on an ASCII stdout they still print, byte for byte."""
    page = (DOCS / "scenarios.md").read_bytes()
    assert any(byte > 127 for byte in page)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONIOENCODING="ascii", LC_ALL="C", PYTHONUTF8="0")
    done = subprocess.run(
        [sys.executable, "-c", "from ldpfleet.app.cli import main; main()", "docs", "scenarios"],
        capture_output=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == page
