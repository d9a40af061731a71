"""The built-in scenarios, found by name, and the data folder their ``data/...`` paths read.

The scenario files (``scenarios/*.toml``) ship as package data of ``ldpfleet.scenarios``, and
the data sets as package data of ``ldpfleet.data``. ``ldpfleet scenarios`` lists the
scenarios. ``ldpfleet run NAME`` runs one from any folder. This module needs only the
standard library, so listing them imports neither the schema nor numpy.

A package installed from a wheel (or editable) lives in a folder on disk. Zip imports are
not supported.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = [
    "DATA_ENV",
    "BuiltinScenario",
    "builtin_scenarios",
    "data_root",
    "find_scenario",
    "scenario_root",
]

# a folder laid out like data/ (uci-occupancy/, intel-lab/, ...): when set, a scenario's
# ``data/...`` paths read it instead of the shipped copy (docs/tutorial.md)
DATA_ENV = "LDPFLEET_DATA"


@dataclass(frozen=True)
class BuiltinScenario:
    """One shipped scenario: ``name`` is what ``ldpfleet run NAME`` takes."""

    name: str
    path: Path
    description: str


def scenario_root() -> Path:
    """The folder of the built-in scenario files (the package ``ldpfleet.scenarios``)."""
    return Path(str(resources.files("ldpfleet.scenarios")))


def data_root() -> Path:
    """The data folder that ``data/...`` paths read: ``$LDPFLEET_DATA`` if set, else the
    shipped data sets (the package ``ldpfleet.data``)."""
    override = os.environ.get(DATA_ENV)
    if override:
        return Path(override).expanduser()
    return Path(str(resources.files("ldpfleet.data")))


def builtin_scenarios() -> list[BuiltinScenario]:
    """Every built-in scenario, sorted by name."""
    return [_describe(path) for path in sorted(scenario_root().glob("*.toml"))]


def find_scenario(spec: str | Path) -> Path:
    """``spec`` if that file exists, else the built-in scenario it names (``quickstart``,
    ``quickstart.toml``, or ``scenarios/quickstart.toml``, the repository path the docs
    use, from a folder that has no such file; a directory of that name, e.g. an earlier
    run's output folder, does not hide it). Anything else comes back unchanged, and the
    loader reports it."""
    path = Path(spec)
    if path.is_file() or path.suffix not in ("", ".toml"):
        return path
    bare = len(path.parts) == 1
    in_docs_folder = len(path.parts) == 2 and path.parts[0] == "scenarios"
    if not (bare or (in_docs_folder and path.suffix == ".toml")):
        return path
    builtin = scenario_root() / f"{path.stem}.toml"
    return builtin if builtin.is_file() else path


def shadowed_file(spec: str | Path) -> Path | None:
    """The file ``NAME.toml`` of the current folder when ``spec`` is a bare ``NAME`` that
    runs the built-in scenario instead (``ldpfleet run faults`` beside the user's own
    ``faults.toml``: the built-in ran, without a word), else None."""
    path = Path(spec)
    if len(path.parts) != 1 or path.suffix or path.exists():
        return None
    mine = path.with_name(path.name + ".toml")
    return mine if mine.is_file() and find_scenario(spec) != path else None


def _describe(path: Path) -> BuiltinScenario:
    """The scenario's ``[scenario] description``, or else its first comment line."""
    text = path.read_text(encoding="utf-8")
    try:
        meta = tomllib.loads(text).get("scenario", {})
    except tomllib.TOMLDecodeError:
        meta = {}
    description = meta.get("description") if isinstance(meta, dict) else None
    if not isinstance(description, str) or not description.strip():
        description = _first_comment(text)
    return BuiltinScenario(path.stem, path, " ".join(description.split()))


def _first_comment(text: str) -> str:
    comments = (line.lstrip("#").strip() for line in text.splitlines() if line.startswith("#"))
    return next(comments, "")
