"""Pin the scenario loader's behaviour across a refactor of ``scenarios/schema.py``
(helper K3's split of the module): dump what every scenario file of the repository and
every recorded scenario text loads to (a ``LoadedScenario``'s plain data and derived
plans, or the refusal's type, message, field, limit and value), then compare two dumps.

    python scripts/K3_pin.py dump OUT.json [--corpus CORPUS.jsonl] [--schema SCHEMA.py]
    python scripts/K3_pin.py compare BEFORE.json AFTER.json

``--schema`` loads that file as ``ldpfleet.scenarios.schema`` first: the one-module schema
of before the split (``git show 0cf4783:scenarios/schema.py > /tmp/schema_before.py``)
dumped beside the current code, at the same moment (the same data files present).

A corpus is JSON lines ``{"text": ..., "path": ...}``; ``scripts/K3_record_plugin.py``
(``pytest -p K3_record_plugin`` with ``scripts`` on ``PYTHONPATH``) records one from the
tests' own calls of ``parse_scenario``, each line with the outcome at the time.
``K3_pin_corpus.jsonl`` holds the 268 texts the scenario unit tests parsed without a
path; 5 of them read a data file the tests write under ``--basetemp=/tmp/pt-K3``, so dump
after such a test run (else those 5 are refused as "file not found" in both dumps).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _safe(call):
    """``repr`` of ``call()``, or of the exception it raised."""
    try:
        return repr(call())
    except Exception as error:  # the pin records whatever happens
        return f"raised {type(error).__name__}: {error}"


def outcome(call) -> dict:
    """What ``call()`` (a parse or load) gives: the loaded scenario's data, or the refusal."""
    import msgspec
    from ldpfleet.scenarios.schema import ScenarioError

    try:
        loaded = call()
    except ScenarioError as error:
        return {
            "refused": type(error).__name__,
            "message": str(error),
            "field": error.field,
            "limit": error.limit,
            "value": repr(error.value),
        }
    except Exception as error:  # not a ScenarioError: pinned too
        return {"raised": type(error).__name__, "message": str(error)}
    spec = loaded.spec
    plans = {
        "type": type(loaded).__name__,
        "name": loaded.name,
        "path": str(loaded.path),
        "sections": {name: type(getattr(spec, name)).__name__ for name in spec.__struct_fields__},
        "run_timeout": _safe(loaded.run_timeout),
        "bulk": _safe(lambda: loaded.bulk),
        "to_dict": msgspec.to_builtins(spec),
    }
    if spec.fleet is not None:
        plans["fleet_connection"] = _safe(loaded.fleet_connection)
        plans["fleet_shards"] = _safe(lambda: loaded.fleet_shards("memory"))
        plans["device_ids"] = _safe(lambda: loaded.device_ids()[:3])
    if spec.stream is not None:
        plans["stream_config"] = _safe(lambda: loaded.stream_config("pin"))
        plans["source_spec"] = _safe(loaded.source_spec)
        plans["cpr_config"] = _safe(loaded.cpr_config)
        plans["multi_column"] = _safe(lambda: loaded.multi_column)
    if spec.secure_sum is not None:
        plans["fixed_point"] = _safe(loaded.fixed_point)
    return plans


def scenario_files() -> list[Path]:
    """Every scenario file of the repository (a TOML file with a ``[scenario]`` table)."""
    files = []
    for path in sorted(ROOT.rglob("*.toml")):
        if ".git" in path.parts or path.name == "pyproject.toml":
            continue
        if "[scenario]" in path.read_text(encoding="utf-8", errors="replace"):
            files.append(path)
    return files


def dump(out: Path, corpus: Path | None) -> None:
    """Write the pin: every scenario file loaded, every built-in by name, every corpus text."""
    from ldpfleet.scenarios.builtin import builtin_scenarios
    from ldpfleet.scenarios.schema import load_scenario, parse_scenario

    pin: dict[str, dict] = {}
    for path in scenario_files():
        pin[f"file {path.relative_to(ROOT)}"] = outcome(lambda p=path: load_scenario(p))
    for builtin in builtin_scenarios():
        pin[f"builtin {builtin.name}"] = outcome(lambda n=builtin.name: load_scenario(n))
    pin["missing builtin"] = outcome(lambda: load_scenario("quickstrat"))
    pin["not text"] = outcome(lambda: parse_scenario(Path("x.toml")))
    if corpus is not None:
        for number, line in enumerate(corpus.read_text().splitlines()):
            item = json.loads(line)
            path = Path(item["path"]) if item["path"] else None
            pin[f"corpus {number}"] = outcome(lambda i=item, p=path: parse_scenario(i["text"], p))
    out.write_text(json.dumps(pin, indent=1, sort_keys=True, default=repr))
    refused = sum("refused" in v for v in pin.values())
    print(f"{len(pin)} pinned ({refused} refusals) -> {out}")


def compare(before: Path, after: Path) -> int:
    """0 when the two pins are the same, else 1 with the differing keys."""
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    differ = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))
    for key in differ[:20]:
        print(f"DIFFERS {key}:\n  before {a.get(key)}\n  after  {b.get(key)}")
    print(f"{len(a)} before, {len(b)} after, {len(differ)} differ")
    return 1 if differ else 0


def _use_schema(path: Path) -> None:
    """Import ``path`` as ``ldpfleet.scenarios.schema`` (before anything imports that)."""
    import importlib.util

    import ldpfleet.scenarios

    spec = importlib.util.spec_from_file_location("ldpfleet.scenarios.schema", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    ldpfleet.scenarios.schema = module


def _option(args: list[str], name: str) -> Path | None:
    """The value after ``name`` in ``args``, as a path, or None."""
    return Path(args[args.index(name) + 1]) if name in args else None


if __name__ == "__main__":
    command, *args = sys.argv[1:]
    if command == "dump":
        schema = _option(args, "--schema")
        if schema is not None:
            _use_schema(schema)
        dump(Path(args[0]), _option(args, "--corpus"))
    elif command == "compare":
        sys.exit(compare(Path(args[0]), Path(args[1])))
    else:
        sys.exit(f"unknown command {command!r}: dump or compare")
