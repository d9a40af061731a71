"""The wheel runs everything (issue 17, item 5). The test builds it from a clean copy of
the source, installs it into a fresh venv, and runs the built-in scenarios by name from an
empty folder, and reads the shipped documentation pages (`ldpfleet docs`).

The venv sees the system's site-packages, so numpy, scipy and the rest need no download.
The wheel is built without build isolation, which needs setuptools >= 70.1 (the `test`
extra). It takes about 12 s.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
# docs/ is copied whole: its pages ship as package data (ldpfleet.docs), its
# preregistrations must not (test_the_wheel_holds_the_documentation_pages...)
NOT_SOURCE = shutil.ignore_patterns(
    ".git", "build", "dist", "*.egg-info", "runs", "tests", ".venv", "test-artifacts",
    "__pycache__", ".*_cache", ".hypothesis", "*.sqlite*",
)  # fmt: skip
REAL_DATA_SCENARIO = "intel-temperature"  # the fastest real-data one (about 3 s)


def _run(*args, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LDPFLEET_DATA")}
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert done.returncode == 0, f"{args}: exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the source tree (the checkout gets no build/)."""
    work = tmp_path_factory.mktemp("wheel")
    source = work / "src"
    shutil.copytree(ROOT, source, ignore=NOT_SOURCE)
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
         "-w", work / "dist", ".", cwd=source, timeout=300)  # fmt: skip
    (built,) = (work / "dist").glob("ldpfleet-*.whl")
    return built


def _source_of(wheel: Path) -> Path:
    """The copy of the source tree the wheel was built from."""
    return wheel.parent.parent / "src"


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory) -> Path:
    """A fresh venv (with the system's site-packages) holding only the wheel."""
    target = tmp_path_factory.mktemp("venv") / "v"
    _run(sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", target,
         cwd=target.parent)  # fmt: skip
    _run(sys.executable, "-m", "pip", "--python", target / "bin" / "python", "install",
         "--no-deps", "--no-index", wheel, cwd=target.parent)  # fmt: skip
    return target


@pytest.fixture
def empty(tmp_path) -> Path:
    folder = tmp_path / "empty"
    folder.mkdir()
    return folder


def test_the_wheel_holds_ldpfleet_only_and_every_data_file(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    (top_level,) = [n for n in names if n.endswith(".dist-info/top_level.txt")]
    assert zipfile.ZipFile(wheel).read(top_level).decode().split() == ["ldpfleet"]
    assert {n.split("/")[0] for n in names if ".dist-info/" not in n} == {"ldpfleet"}
    shipped = {n.removeprefix("ldpfleet/data/") for n in names if n.startswith("ldpfleet/data/")}
    data = _source_of(wheel) / "data"
    on_disk = {p.relative_to(data).as_posix() for p in data.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}  # fmt: skip
    assert on_disk <= shipped  # SOURCE.txt notes, licences, the *.txt.gz graphs included
    assert {"snap-ego-facebook/facebook_combined.txt.gz", "uci-occupancy/SOURCE.txt"} <= shipped
    scenarios = {p.name for p in (_source_of(wheel) / "scenarios").glob("*.toml")}
    assert {f"ldpfleet/scenarios/{s}" for s in scenarios} <= set(names)


def test_the_wheel_states_its_licence_as_an_spdx_expression_and_ships_the_text(wheel):
    """PEP 639 metadata (setuptools >= 77): the TOML-table form is deprecated and stops
    building in 2027, so a fresh machine's install would break on a newer setuptools."""
    archive = zipfile.ZipFile(wheel)
    (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    fields = archive.read(metadata).decode().split("\n\n", 1)[0].splitlines()
    assert "License-Expression: MIT" in fields
    assert "License-File: LICENSE" in fields
    (licence,) = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    text = archive.read(licence).decode()
    assert text.startswith("MIT License") and "SOURCE.txt" in text  # the data's own terms


def test_the_wheel_holds_every_module_of_every_mapped_folder(wheel):
    source = _source_of(wheel)
    mapping = tomllib.loads((source / "pyproject.toml").read_text())["tool"]["setuptools"]
    names = set(zipfile.ZipFile(wheel).namelist())
    for package, folder in mapping["package-dir"].items():
        for module in (source / folder).rglob("*.py"):  # a new subpackage must be listed too
            inside = module.relative_to(source / folder).as_posix()
            assert f"{package.replace('.', '/')}/{inside}" in names, f"{folder}/{inside}"


def test_the_installed_package_comes_from_the_venv(venv, empty):
    code = (
        "import json, ldpfleet, ldpfleet.protocol, ldpfleet.data; "
        "from ldpfleet.scenarios.schema import load_scenario; "
        f"spec = load_scenario({REAL_DATA_SCENARIO!r}).source_spec(); "
        "print(json.dumps([ldpfleet.__file__, ldpfleet.protocol.__file__, spec.path]))"
    )
    files = json.loads(_run(venv / "bin" / "python", "-c", code, cwd=empty).stdout)
    for file in files:
        assert Path(file).resolve().is_relative_to(venv.resolve()), file
        assert not Path(file).resolve().is_relative_to(ROOT), file


def test_the_console_script_runs_builtin_scenarios_by_name(wheel, venv, empty):
    source, ldpfleet = _source_of(wheel), venv / "bin" / "ldpfleet"
    version = tomllib.loads((source / "pyproject.toml").read_text())["project"]["version"]
    assert _run(ldpfleet, "--version", cwd=empty).stdout == f"ldpfleet {version}\n"
    listed = _run(ldpfleet, "scenarios", cwd=empty).stdout.splitlines()
    names = [line.split()[0] for line in listed]
    assert names == sorted(p.stem for p in (source / "scenarios").glob("*.toml"))
    for name in ("quickstart", REAL_DATA_SCENARIO):
        _run(ldpfleet, "run", name, "--broker", "memory", "--out", name, cwd=empty)
        results = json.loads((empty / name / "results.json").read_text())
        assert results["scenario"]["name"] == name
        assert Path(results["scenario"]["path"]).resolve().is_relative_to(venv.resolve())
        assert results["devices_complete"] == results["devices"] > 0
        assert results["reports_lost"] == 0 and results["reports_received"] > 0
        assert (empty / name / "report.html").is_file()
    assert sorted(p.name for p in empty.iterdir()) == sorted(["quickstart", REAL_DATA_SCENARIO])


def test_the_wheel_holds_the_documentation_pages_and_not_the_preregistrations(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    docs = _source_of(wheel) / "docs"
    assert (docs / "preregistration").is_dir()  # in the source the wheel was built from
    pages = {f"ldpfleet/docs/{p.name}" for p in docs.glob("*.md")}
    assert "ldpfleet/docs/scenarios.md" in pages
    assert pages <= names
    assert "ldpfleet/docs/img/gcdp-scaling.png" in names  # docs/gcdp-speed.md shows it
    assert "ldpfleet/docs/mosquitto/large-fleet.conf" in names  # docs/scaling.md quotes it
    assert not [n for n in names if "preregistration" in n]


def test_the_installed_wheel_lists_and_prints_its_pages(venv, empty):
    ldpfleet = venv / "bin" / "ldpfleet"
    listed = _run(ldpfleet, "docs", cwd=empty).stdout.splitlines()
    assert [line.split()[0] for line in listed] == sorted(
        p.stem for p in (ROOT / "docs").glob("*.md")
    )
    assert "scenarios Scenario files" in [" ".join(line.split()) for line in listed]
    page = _run(ldpfleet, "docs", "scenarios", cwd=empty).stdout
    assert page == (ROOT / "docs" / "scenarios.md").read_text(encoding="utf-8")
    where = Path(_run(ldpfleet, "docs", "scenarios", "--path", cwd=empty).stdout.strip())
    assert where.name == "scenarios.md" and where.parent.name == "docs"
    assert where.resolve().is_relative_to(venv.resolve()), where
    assert not where.resolve().is_relative_to(ROOT), where
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LDPFLEET_DATA")}
    unknown = subprocess.run([ldpfleet, "docs", "scenario"], cwd=empty, env=env,
                             capture_output=True, text=True, timeout=120)  # fmt: skip
    assert unknown.returncode == 2, unknown
    assert "did you mean 'scenarios'?" in " ".join(unknown.stderr.split())
