"""The CLI starts cheaply: importing it, `ldpfleet --help` and every subcommand's `--help`
load typer and rich but none of the heavy libraries or the runner (issue 17, item 5)."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import typer
from ldpfleet.app import cli
from ldpfleet.scenarios.builtin import scenario_root
from typer.testing import CliRunner

import ldpfleet

ROOT = Path(__file__).resolve().parents[2]
HEAVY_LIBRARIES = (
    "numpy",
    "scipy",
    "matplotlib",
    "amqtt",
    "aiomqtt",
    "paho",
    "cryptography",
    "networkx",
    "msgspec",
)
HEAVY_OURS = ("ldpfleet.scenarios.runner", "ldpfleet.scenarios.schema", "ldpfleet.collector")
# the only modules of ours a `--help` may import: the package, the command lines, and the
# stdlib-only list of built-in scenarios (`ldpfleet scenarios`)
LIGHT_OURS = {
    "ldpfleet",
    "ldpfleet.app",
    "ldpfleet.app.cli",
    # the command modules of app/cli.py (each imports what it runs inside its functions)
    "ldpfleet.app.cli_bench",
    "ldpfleet.app.cli_bench_cadr",
    "ldpfleet.app.cli_broker",
    "ldpfleet.app.cli_common",
    "ldpfleet.app.cli_docs",
    "ldpfleet.app.cli_options",
    "ldpfleet.app.cli_report",
    "ldpfleet.app.cli_run",
    "ldpfleet.app.cli_sides",
    "ldpfleet.app.cli_summary",
    "ldpfleet.app.cli_trace",
    "ldpfleet.app.audit_cli",
    "ldpfleet.app.bench_commands",
    "ldpfleet.app.accuracy_text",  # the summary's wording of the accuracy figures: no imports
    "ldpfleet.scenarios",
    "ldpfleet.scenarios.builtin",
}

# in a fresh interpreter: `ldpfleet PATH --help` for every command and group PATH of the
# command tree (walked, not listed), then `ldpfleet scenarios`; for each, its exit code and
# the modules it imported that were not imported before it. Nothing is ever unloaded, so
# "no invocation imports anything heavy" is the same as "none would in its own process".
HELP_PROBE = """
import json, sys
import typer
from typer.testing import CliRunner
from ldpfleet.app.cli import app

def walk(command, path):
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from walk(sub, [*path, name])

runner = CliRunner()
before = set(sys.modules)
helps = {}
for path, command in walk(typer.main.get_command(app), []):
    shown = runner.invoke(app, [*path, "--help"])
    helps[" ".join(path)] = [shown.exit_code, sorted(set(sys.modules) - before)]
    before = set(sys.modules)
listing = runner.invoke(app, ["scenarios"])
print(json.dumps({"helps": helps, "before": sorted(before),
                  "scenarios": [listing.exit_code, listing.stdout,
                                sorted(set(sys.modules) - before)]}))
"""


def _heavy(modules: list[str]) -> list[str]:
    return [
        m
        for m in modules
        if m.split(".")[0] in HEAVY_LIBRARIES
        or any(m == ours or m.startswith(ours + ".") for ours in HEAVY_OURS)
        or (m.split(".")[0] == "ldpfleet" and m not in LIGHT_OURS)
    ]


def _fresh_python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    return done.stdout


def _command_paths() -> list[str]:
    def walk(command, path):
        yield " ".join(path)
        for name, sub in getattr(command, "commands", {}).items():
            yield from walk(sub, [*path, name])

    return list(walk(typer.main.get_command(cli.app), []))


def test_importing_the_cli_loads_nothing_heavy():
    code = "import json, sys, ldpfleet.app.cli; print(json.dumps(sorted(sys.modules)))"
    modules = json.loads(_fresh_python(code))
    assert "typer" in modules
    assert _heavy(modules) == []


def test_a_cadr_device_shard_does_not_load_the_stream_collector_or_scipy():
    """The CADR-LDP device shard process (``python -m ldpfleet.scenarios.cadr_shard``)
    imported the stream collector and its analytics for one function (the run's closing
    message), and with them scipy: ~0.26 s of CPU per shard at start-up (measured A/B, 6
    pairs: 0.96 -> 0.70 s user). It now takes that function from ``collector.announce``."""
    code = "import json, sys, ldpfleet.scenarios.cadr_shard; print(json.dumps(sorted(sys.modules)))"
    modules = set(json.loads(_fresh_python(code)))
    assert "ldpfleet.collector.announce" in modules
    assert not {"scipy", "ldpfleet.collector.service", "ldpfleet.collector.analytics"} & modules


def test_every_help_and_the_scenario_list_load_nothing_heavy():
    probe = json.loads(_fresh_python(HELP_PROBE))
    helps = probe["helps"]
    assert list(helps) == _command_paths()  # every command and group of the tree
    assert {"", "run", "scenarios", "audit", "trace", "trace verify", "bench", "bench fleet"} | {
        f"bench {name}"
        for name in ("gcdp", "gcdp-timing", "gcdp-scaling", "cadr-sweep", "mechanisms")
    } <= set(helps)
    assert {path: code for path, (code, _) in helps.items() if code != 0} == {}
    heavy = {path: _heavy(modules) for path, (_, modules) in helps.items() if _heavy(modules)}
    assert heavy == {}
    code, listing, loaded = probe["scenarios"]
    assert code == 0
    assert {line.split()[0] for line in listing.splitlines()} == {
        p.stem for p in scenario_root().glob("*.toml")
    }
    assert _heavy(probe["before"]) == [] and _heavy(loaded) == []


def test_the_benches_run_the_registered_command_lines():
    """The heavy modules re-export the commands registered in the CLI (their tests invoke
    them from there) and share their constants; the audit help lists the whole battery;
    the listing shows each docstring's first paragraph."""
    from ldpfleet.app import (
        audit_cli,
        audit_fleet,  # noqa: F401  (registers fleet-stream, as audit does)
        bench_commands,
        bench_gcdp,
        bench_gcdp_scaling,
        bench_mechanisms,
        cadr_sweep,
    )
    from ldpfleet.collector.audit.battery import BATTERY

    root = typer.main.get_command(cli.app)
    bench = root.commands["bench"].commands
    commands = {
        "audit": (root.commands["audit"], audit_cli.audit_command),
        "bench gcdp": (bench["gcdp"], bench_gcdp.bench_gcdp_command),
        "bench gcdp-timing": (bench["gcdp-timing"], bench_gcdp_scaling.bench_gcdp_timing_command),
        "bench gcdp-scaling": (
            bench["gcdp-scaling"],
            bench_gcdp_scaling.bench_gcdp_scaling_command,
        ),
        "bench cadr-sweep": (bench["cadr-sweep"], cadr_sweep.bench_cadr_sweep),
        "bench mechanisms": (bench["mechanisms"], bench_mechanisms.bench_mechanisms_command),
    }
    runner = CliRunner()
    for path, (command, function) in commands.items():
        assert inspect.unwrap(command.callback) is function, path
        first = " ".join(inspect.cleandoc(function.__doc__).split("\n\n")[0].split())
        assert command.get_short_help_str(limit=1000) == first, path  # its listing line
        shown = runner.invoke(cli.app, [*path.split(), "--help"], terminal_width=200)
        assert shown.exit_code == 0 and f"{path} [OPTIONS]" in shown.output, shown.output
    assert tuple(BATTERY) == audit_cli.BATTERY_NAMES
    assert tuple(bench_mechanisms.DISTRIBUTIONS) == bench_commands.MECHANISM_DISTRIBUTIONS


def test_version_is_the_package_version():
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    # the installed metadata lags a changed pyproject until `pip install -e .` runs again
    assert metadata.version("ldpfleet") == ldpfleet.__version__ == pyproject
    result = CliRunner().invoke(cli.app, ["--version"])
    assert result.exit_code == 0 and result.stdout == f"ldpfleet {pyproject}\n"


def test_user_errors_are_found_among_imported_modules_only():
    from ldpfleet.protocol.errors import ParameterError

    assert ParameterError in cli.user_error_types()
    for module, name in cli.USER_ERRORS:  # every entry names a real class
        assert issubclass(getattr(__import__(module, fromlist=[name]), name), Exception)
