"""Every option refusal of the command line is an ``OptionError`` (``app/cli.py``): a
``typer.BadParameter`` whose ``option``, ``limit`` and ``value`` are attributes and whose
sentence is built from them; the command exits 2 (docs: "bad input gets a typed error
naming the field, the limit and the value").

Two checks: one case per refusal path, run through typer's ``CliRunner`` (exit 2, the
option, the limit and the value in stderr), and an AST check that no module of ``app/``
builds a bare ``typer.BadParameter(...)`` / ``click.BadParameter(...)`` (so a new refusal
cannot skip the helper).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from ldpfleet.app import cli
from ldpfleet.app.cli import OptionError, app
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
QUICK = str(ROOT / "scenarios" / "quickstart.toml")
DEAD_BROKER = "mqtt://127.0.0.1:1"  # refused before any connection is tried

# (id, arguments (AFILE / DIR / OUT replaced), option, limit, value as shown)
CASES = [
    ("out-empty", ["run", QUICK, "-b", "memory", "--out", ""], "--out", "a non-empty path", "''"),
    (
        "out-a-file",
        ["run", QUICK, "-b", "memory", "--out", "AFILE"],
        "--out",
        "an output directory (an existing folder or a new path)",
        "AFILE",
    ),
    (
        "output-empty",
        ["trace", "export", "DIR", "--output", ""],
        "--output",
        "a non-empty path",
        "''",
    ),
    (
        "run-empty",
        ["run", QUICK, "-b", "memory", "--run", "", "--out", "OUT"],
        "--run",
        cli.RUN_ID_LIMIT,
        "''",
    ),
    (
        "run-not-an-id",
        ["watch", "-b", DEAD_BROKER, "--run", "a/b"],
        "--run",
        cli.RUN_ID_LIMIT,
        "'a/b'",
    ),
    (
        "at-least-one",
        ["bench", "fleet", "-b", "memory", "--steps", "0"],
        "--steps",
        "at least 1",
        "0",
    ),
    (
        "watch-seconds",
        ["watch", "-b", DEAD_BROKER, "--seconds", "0"],
        "--seconds",
        "a number of seconds > 0",
        "0.0",
    ),
    (
        "wait-timeout",
        ["fleet", QUICK, "-b", DEAD_BROKER, "--run", "x", "--wait-timeout", "-1"],
        "--wait-timeout",
        "a finite number of seconds > 0",
        "-1.0",
    ),
    (
        "fleet-timeout",
        ["collector", QUICK, "-b", DEAD_BROKER, "--run", "x", "--fleet-timeout", "nan"],
        "--fleet-timeout",
        "a finite number of seconds > 0",
        "nan",
    ),
    (
        "gateway-devices",
        ["bench", "fleet", "-b", "memory", "--gateway-devices", "50"],
        "--gateway-devices",
        "left out with --connection device",
        "50",
    ),
    (
        "within-steps",
        ["bench", "fleet", "-b", "memory", "--steps", "3", "--w", "4"],
        "--w",
        "at most --steps 3",
        "4",
    ),
]


def _one_line(text: str) -> str:
    """stderr without rich's panel frame and line wrapping."""
    return " ".join(text.replace("│", " ").replace("╭", " ").replace("╰", " ").split())


@pytest.mark.parametrize(("args", "option", "limit", "value"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])  # fmt: skip
def test_each_option_refusal_names_option_limit_and_value(args, option, limit, value, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory")
    mapping = {"AFILE": str(a_file), "DIR": str(tmp_path), "OUT": str(tmp_path / "out")}
    args = [mapping.get(arg, arg) for arg in args]
    value = value.replace("AFILE", repr(str(a_file)))
    result = CliRunner(env={"COLUMNS": "400"}).invoke(app, args)
    assert result.exit_code == 2, result.output
    said = _one_line(result.stderr)
    assert f"{option} must be {limit}" in said, said
    assert f"got {value}" in said, said


def test_the_sentence_is_built_from_the_attributes():
    error = OptionError("--steps", "at least 1", 0, hint="0 was read as not given")
    assert (error.option, error.limit, error.value, error.hint) == (
        "--steps",
        "at least 1",
        0,
        "0 was read as not given",
    )
    assert error.message == "--steps must be at least 1, got 0 (0 was read as not given)"
    assert OptionError("--run", "an id", "").message == "--run must be an id, got ''"


def _bare_bad_parameters(path: Path) -> list[int]:
    """Lines of ``path`` that build a ``BadParameter(...)`` other than through OptionError."""
    tree = ast.parse(path.read_text())
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name == "BadParameter":
            lines.append(node.lineno)
    return lines


@pytest.mark.parametrize("path", sorted((ROOT / "app").glob("*.py")), ids=lambda p: p.name)
def test_no_module_of_app_builds_a_bare_bad_parameter(path):
    assert _bare_bad_parameters(path) == []


def test_the_ast_check_can_fail(tmp_path):
    bare = tmp_path / "bare.py"
    bare.write_text("import typer\nraise typer.BadParameter('--x must be 1')\n")
    assert _bare_bad_parameters(bare) == [2]
