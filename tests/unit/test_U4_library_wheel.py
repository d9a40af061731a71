"""ldpfleet as a library, installed from a wheel (helper U4, 2026-12-07).

Found (each test below fails on the code before the fix):

- ``read_ledger("exp/seed-7")``, a run folder that was never made inside the run ``exp``,
  returned ``exp``'s ledgers (it read the parent's ledger.json for any path that is not a
  folder); ``read_ledger("typo")`` read the current folder's ledger.json. Every other
  reader raises ``FileNotFoundError`` for such a path.
- the Python examples of docs/audit.md (``from collector.audit import ...``),
  docs/audit-e2e.md (``from collector.audit.e2e import ...``, a module that no longer
  exists) and docs/cadr-private.md imported the repository's source folders, which exist
  only in a checkout's root: from a wheel (or any other folder) they raise
  ``ModuleNotFoundError``. The pages ship in the wheel (``ldpfleet docs audit``).
- a run into the folder of an earlier run that stopped before its end (its ``progress``
  raised, Ctrl-C, a failure) left the earlier run's results.json and ledger.json beside
  its own trace: ``read_results`` / ``read_ledger`` returned the earlier run's; a bulk run
  (no ledger.json) left the earlier ledger.json, and a library run (no report.html) the
  earlier run's report.html.
- ``help(ldpfleet.run)`` listed ``report.html`` among the outputs (only ``ldpfleet run``
  writes it) and not ``collector.sqlite``.
"""

from __future__ import annotations

import ast
import contextvars
import importlib.util
import inspect
import json
import os
import re
from pathlib import Path

import pytest

import ldpfleet

ROOT = Path(__file__).resolve().parents[2]
LEDGER = {
    "run": "r-1",
    "devices": {"d0000": {"owner": "d0000", "accounts": {"stream": {"kind": "w-event"}}}},
}
# the source folders a checkout maps onto ldpfleet.* (pyproject.toml, package-dir)
LAYER_FOLDERS = {"protocol", "broker", "devices", "collector", "scenarios", "app"}


def test_read_ledger_of_a_missing_run_is_not_its_parents(tmp_path, monkeypatch):
    (tmp_path / "ledger.json").write_text(json.dumps(LEDGER))
    with pytest.raises(FileNotFoundError, match="seed-7"):
        ldpfleet.read_ledger(tmp_path / "seed-7")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(FileNotFoundError, match="typo"):
        ldpfleet.read_ledger("typo")
    # the folder, its ledger.json and another file of the run still read it
    for path in ("", "ledger.json", "results.json", "trace.sqlite"):
        assert list(ldpfleet.read_ledger(tmp_path / path)) == ["d0000"]


def _python_imports() -> list[tuple[str, str, tuple[str, ...]]]:
    """(page, module, imported names) for every import in a ```python block of the docs."""
    found = []
    for page in [*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md"]:
        for block in re.findall(r"```python\n(.*?)```", page.read_text(), re.S):
            for node in ast.walk(ast.parse(block)):
                if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    names = tuple(alias.name for alias in node.names)
                    found.append((page.name, node.module, names))
                elif isinstance(node, ast.Import):
                    found += [(page.name, alias.name, ()) for alias in node.names]
    return found


def _defined(module: str, name: str) -> bool:
    """``from module import name`` works: a submodule (``from ldpfleet.app import
    bench_gcdp``) or a top-level name of its source, read without importing it."""
    spec = importlib.util.find_spec(module)
    if spec.submodule_search_locations and importlib.util.find_spec(f"{module}.{name}"):
        return True
    if module == "ldpfleet":
        return name in ldpfleet.__all__
    tree = ast.parse(Path(spec.origin).read_text())
    found = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            found.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            found |= {(a.asname or a.name).partition(".")[0] for a in node.names}
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            found |= {t.id for t in targets if isinstance(t, ast.Name)}
    return name in found


def test_doc_examples_import_what_an_installed_package_has():
    broken = []
    for page, module, names in _python_imports():
        top = module.partition(".")[0]
        if top in LAYER_FOLDERS:
            broken.append(f"{page}: {module} (a checkout's folder: ldpfleet.{module})")
        elif top == "ldpfleet":
            if importlib.util.find_spec(module) is None:
                broken.append(f"{page}: {module} does not exist")
                continue
            broken += [f"{page}: {module}.{n} missing" for n in names if not _defined(module, n)]
    assert not broken, broken


def _sections(devices: int, **fleet) -> dict:
    return {
        "scenario": {"name": "u4-reuse", "seed": 1},
        "fleet": {"devices": devices, **fleet},
        "stream": {"steps": 10, "eps": 2.0, "w": 5},
        "source": {"kind": "synthetic", "shape": "sine", "period": 5, "bounds": [-1.0, 1.0]},
    }


class _Stop(Exception):
    pass


def _stop_at_first_report(received: int, expected: int) -> None:
    if received:
        raise _Stop


def test_a_run_that_stops_leaves_no_earlier_runs_results_or_ledger(tmp_path):
    """Run A, then run B into A's folder, stopped by its own ``progress``: read_results
    returned A's results and read_ledger A's ledgers beside B's trace."""
    out = tmp_path / "x"
    ldpfleet.run(ldpfleet.parse_scenario(_sections(2)), broker="memory", out_dir=out)
    assert ldpfleet.read_results(out)["devices"] == 2
    with pytest.raises(_Stop):
        ldpfleet.run(
            ldpfleet.parse_scenario(_sections(3)),
            broker="memory",
            out_dir=out,
            progress=_stop_at_first_report,
        )
    with pytest.raises(FileNotFoundError):
        ldpfleet.read_results(out)
    with pytest.raises(FileNotFoundError):
        ldpfleet.read_ledger(out)


def test_a_bulk_run_leaves_no_earlier_runs_ledger(tmp_path):
    """A bulk run writes no ledger.json: the earlier run's was read as its own."""
    out = tmp_path / "x"
    ldpfleet.run(ldpfleet.parse_scenario(_sections(2)), broker="memory", out_dir=out)
    # as `ldpfleet run` writes one (its sub-heading names the tool)
    (out / "report.html").write_text("<p class='sub'>ldpfleet report of x</p>")
    bulk = ldpfleet.parse_scenario(_sections(3, connection="bulk"))
    assert ldpfleet.run(bulk, broker="memory", out_dir=out)["devices"] == 3
    with pytest.raises(FileNotFoundError):
        ldpfleet.read_ledger(out)
    assert not (out / "report.html").exists()  # A's page does not describe this run


def test_run_writes_the_files_its_docstring_lists(tmp_path):
    """``help(ldpfleet.run)`` listed ``report.html``, which only the command writes, and
    not ``collector.sqlite``, which ``read_reports`` reads."""
    doc = " ".join(inspect.getdoc(ldpfleet.run).split())
    listed = doc.partition("``out_dir``: the folder of the outputs (")[2].partition(";")[0]
    named = set(re.findall(r"``([\w.-]+)``", listed))
    ldpfleet.run(ldpfleet.parse_scenario(_sections(2)), broker="memory", out_dir=tmp_path)
    written = {path.name for path in tmp_path.iterdir()}
    assert named and named == written, (named, written)


def test_overlapping_credential_exports_leave_the_environment_as_it_was(tmp_path, monkeypatch):
    """Two runs in threads (bulk or CADR-LDP, on the memory or embedded broker) export
    their credentials in ``LDPFLEET_CREDENTIALS``: when the first ended first, the second
    restored the first's file (deleted by then), and the next run without credentials
    (``[broker] auth = false``, an external broker) died in ``AuthError: cannot read
    credentials``. The blocks overlap here in that order, deterministically."""
    from ldpfleet.broker.auth import CREDENTIALS_ENV, Credentials, use_credentials

    monkeypatch.delenv(CREDENTIALS_ENV, raising=False)
    first, second = (tmp_path / "a", tmp_path / "b")
    first.mkdir()
    second.mkdir()
    a = use_credentials(Credentials.generate("run-a", ("d0000",)), export_dir=first)
    b = use_credentials(Credentials.generate("run-b", ("d0000",)), export_dir=second)
    # each run in its own context, as runs in threads are (the ambient credentials are a
    # contextvar: entered and left in one context out of order, they would leak here)
    in_a, in_b = contextvars.copy_context(), contextvars.copy_context()
    in_a.run(a.__enter__)
    in_b.run(b.__enter__)
    assert os.environ[CREDENTIALS_ENV] == str(second / "credentials.json")
    in_a.run(a.__exit__, None, None, None)
    assert os.environ[CREDENTIALS_ENV] == str(second / "credentials.json")  # b still runs
    in_b.run(b.__exit__, None, None, None)
    assert CREDENTIALS_ENV not in os.environ


def test_the_errors_of_library_calls_are_catchable_from_the_package(tmp_path):
    """``read_trace`` raises ``TraceError`` and ``run`` ``BrokerUnavailable``: a script
    caught them only through ``ldpfleet.broker.*``, a module path api.md does not
    promise to keep."""
    from ldpfleet.broker.select import BrokerUnavailable

    with pytest.raises(ldpfleet.TraceError):
        list(ldpfleet.read_trace(tmp_path))
    assert ldpfleet.BrokerUnavailable is BrokerUnavailable
    assert issubclass(ldpfleet.BrokerUnavailable, ConnectionError)
    assert {"BrokerUnavailable", "TraceError"} <= set(ldpfleet.__all__)


def test_help_of_parameter_error_says_what_it_carries():
    """``help(ldpfleet.ParameterError)`` said "an invalid parameter given at construction
    time", not the library calls that raise it nor its ``field``/``limit``/``value``."""
    doc = inspect.getdoc(ldpfleet.ParameterError)
    assert all(f"``{attribute}``" in doc for attribute in ("field", "limit", "value"))
    assert "ldpfleet.run" in doc and "detect_period" in doc


def test_a_users_own_files_of_those_names_in_out_are_left_alone(tmp_path):
    """``fresh_outputs`` removes an earlier run's results.json / ledger.json / report.html
    (helper U4) but not a user's own files that happen to carry those names in the folder
    given as OUT (review R7: the names are generic)."""
    from ldpfleet.scenarios.cadr_run import fresh_outputs

    ours = {
        "results.json": '{"run": "r-1", "scenario": {}}',
        "ledger.json": '{"d0000": {"accounts": {}}}',
        "report.html": "<html><p class='sub'>ldpfleet report of x</p></html>",
    }
    theirs = {
        "results.json": "[1, 2, 3]",
        "ledger.json": '{"income": 10}',
        "report.html": "<html>my quarterly report</html>",
    }
    for files, removed in ((ours, True), (theirs, False)):
        folder = tmp_path / str(removed)
        folder.mkdir()
        for name, text in files.items():
            (folder / name).write_text(text)
        fresh_outputs(folder)
        assert {name: (folder / name).exists() for name in files} == dict.fromkeys(
            files, not removed
        )
