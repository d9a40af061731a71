"""docs/tutorial.md "Bring your own": the section's files (a mechanism package with entry
points, make_data.py, an edge list, two scenarios) and its commands, as written, in an empty
folder outside the repository (helper Q verified them from the wheel in a fresh venv; here
the package is "installed" by a dist-info folder on PYTHONPATH, as pip lays it out, since a
test cannot reach a package index)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib

import pytest

from tests.conftest import ROOT

SECTION = "## Bring your own: a mechanism package, a CSV, a graph, Occupancy files\n"
GROUP = "ldpfleet.mechanisms"


def _section() -> str:
    return (ROOT / "docs" / "tutorial.md").read_text().split(SECTION, 1)[1].split("\n## ", 1)[0]


def _files(section: str) -> dict[str, str]:
    """The blocks whose path is named on the line before them."""
    found = re.findall(r"^`([^`\n]+)`:\n\n```\w+\n(.*?)^```", section, flags=re.S | re.M)
    return dict(found)


def _commands(section: str) -> list[tuple[str, int]]:
    """The ldpfleet commands of the run block with their documented exit status."""
    block = re.findall(r"```bash\n(.*?)```", section, re.S)[1]
    out = []
    for line in block.splitlines():
        command, _, comment = line.partition("#")
        if command.strip().startswith("ldpfleet "):
            status = re.search(r"exit (\d)", comment)
            out.append((" ".join(command.split()), int(status.group(1)) if status else 0))
    return out


@pytest.mark.slow
def test_the_bring_your_own_section_runs_as_written(tmp_path):
    section = _section()
    files = _files(section)
    assert set(files) >= {
        "krr-ldp/pyproject.toml",
        "krr-ldp/krr_ldp/mechanisms.py",
        "make_data.py",
        "contacts.txt",
        "greenhouse.toml",
        "contacts.toml",
    }, sorted(files)
    for path, body in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(body)
    # "pip install ./krr-ldp": the package and its entry points where pip puts them
    site = tmp_path / "site"
    (site / "krr_ldp").mkdir(parents=True)
    (site / "krr_ldp" / "__init__.py").write_text("")
    (site / "krr_ldp" / "mechanisms.py").write_text(files["krr-ldp/krr_ldp/mechanisms.py"])
    project = tomllib.loads(files["krr-ldp/pyproject.toml"])["project"]
    info = site / "krr_ldp-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: 0.1.0\n"
    )
    entries = "".join(f"{k} = {v}\n" for k, v in project["entry-points"][GROUP].items())
    (info / "entry_points.txt").write_text(f"[{GROUP}]\n{entries}")
    env = {**os.environ, "PYTHONPATH": str(site), "COLUMNS": "120"}

    def run(argv):
        return subprocess.run(
            argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
        )

    made = run([sys.executable, "make_data.py"])
    assert made.returncode == 0, made.stderr
    commands = _commands(section)
    assert [c for c, _ in commands][:2] == [
        "ldpfleet run greenhouse.toml --broker memory --out runs/greenhouse",
        "ldpfleet audit krr --eps 1",
    ]
    outputs = {}
    for command, status in commands:
        done = run([sys.executable, "-m", "ldpfleet.app.cli", *command.split()[1:]])
        assert done.returncode == status, f"{command}: exit {done.returncode}\n{done.stderr}"
        assert "Traceback" not in done.stderr, done.stderr
        outputs[command] = done.stdout

    greenhouse = json.loads((tmp_path / "runs/greenhouse/results.json").read_text())
    assert greenhouse["devices_complete"] == 4 and greenhouse["reports_lost"] == 0
    assert greenhouse["reports_rejected"] == 0
    honest = json.loads(outputs["ldpfleet audit krr --eps 1"])
    greedy = json.loads(outputs["ldpfleet audit krr-greedy --eps 1"])
    assert honest["verdict"] == "inconclusive" and greedy["verdict"] == "violation"
    shown = re.findall(r"eps_lb (\d\.\d\d)", section)  # the figures the page quotes
    assert shown == [f"{honest['eps_lb']:.2f}", f"{greedy['eps_lb']:.2f}"], shown
    contacts = json.loads((tmp_path / "runs/contacts/results.json").read_text())
    assert contacts["devices"] == 8 and contacts["edges"] == 8
    bench = json.loads(outputs[next(c for c, _ in commands if "bench gcdp" in c)])
    assert bench["protocol"]["train_windows"] == 100 and bench["protocol"]["test_windows"] == 50

    api = re.findall(r"```python\n(.*?)```", section, re.S)[-1]
    done = run([sys.executable, "-c", api])
    assert done.returncode == 0, done.stderr
