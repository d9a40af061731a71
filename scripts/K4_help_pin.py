"""Dump every help text of the ``ldpfleet`` command line, to pin a refactor of app/cli.py.

Walks the typer tree (``ldpfleet``, every group, every command and subcommand) and, for
each path, prints ``ldpfleet PATH --help`` as the user sees it at two terminal widths, the
exit code, and the click parameters behind it (names, options, type, default, required,
whether a callback checks it). Two dumps taken before and after a change that only moves
code must be byte-identical:

    python scripts/K4_help_pin.py --console-script > /tmp/help-before.txt
    ... change ...
    python scripts/K4_help_pin.py --console-script > /tmp/help-after.txt
    cmp /tmp/help-before.txt /tmp/help-after.txt
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import typer
from typer.testing import CliRunner

WIDTHS = (80, 200)


def command_paths(command: click.Command, path: list[str]) -> Iterator[tuple[list[str], object]]:
    """Every command and group under ``command``, depth first in listing order."""
    yield path, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from command_paths(sub, [*path, name])


def type_text(kind: click.ParamType) -> str:
    """A parameter type without its memory address: class, name, and the function a
    ``parser=`` option calls (by qualified name: moving it to another module keeps it)."""
    func = getattr(kind, "func", None)
    extra = f" func={func.__qualname__}" if func is not None else ""
    choices = getattr(kind, "choices", None)
    extra += f" choices={list(choices)}" if choices is not None else ""
    return f"{type(kind).__name__}({kind.name}){extra}"


def parameter_lines(command: click.Command) -> list[str]:
    """One line per click parameter: what the help text may not show."""
    lines = []
    for param in command.params:
        lines.append(
            f"  param {param.name}: opts={param.opts} secondary={param.secondary_opts} "
            f"type={type_text(param.type)} default={param.default!r} required={param.required} "
            f"multiple={param.multiple} nargs={param.nargs} "
            f"flag={getattr(param, 'is_flag', None)} hidden={getattr(param, 'hidden', None)} "
            f"eager={param.is_eager} callback={param.callback is not None} "
            f"metavar={param.metavar!r}"
        )
    return lines


def dump(app: typer.Typer) -> str:
    """The whole help dump of ``app`` as one text."""
    runner = CliRunner()
    out = []
    root = typer.main.get_command(app)
    for path, command in command_paths(root, []):
        title = " ".join(["ldpfleet", *path])
        out.append(f"===== {title} =====")
        short = command.get_short_help_str(limit=1000)
        out.append(f"short help: {short}")
        out.extend(parameter_lines(command))
        for width in WIDTHS:
            env = {"COLUMNS": str(width), "TERMINAL_WIDTH": str(width), "NO_COLOR": "1"}
            shown = runner.invoke(app, [*path, "--help"], terminal_width=width, env=env)
            out.append(f"----- width {width}, exit {shown.exit_code} -----")
            out.append(shown.output)
    return "\n".join(out) + "\n"


def console_script_dump(app: typer.Typer) -> str:
    """``ldpfleet PATH --help`` for every path, through the installed console script (the
    entry point ``ldpfleet.app.cli:main`` of pyproject.toml), in fresh processes."""
    env = {**os.environ, "COLUMNS": "100", "TERMINAL_WIDTH": "100", "NO_COLOR": "1"}
    script = Path(sys.executable).with_name("ldpfleet")
    out = []
    for path, _command in command_paths(typer.main.get_command(app), []):
        shown = subprocess.run(
            [str(script), *path, "--help"], capture_output=True, text=True, env=env, timeout=120
        )
        out.append(f"===== console script: ldpfleet {' '.join(path)} --help, exit "
                   f"{shown.returncode} =====")  # fmt: skip
        out.append(shown.stdout + shown.stderr)
    return "\n".join(out) + "\n"


def main() -> None:
    """Print the dump of ``ldpfleet.app.cli.app`` (and, with ``--console-script``, the
    console script's help texts too)."""
    from ldpfleet.app.cli import app

    sys.stdout.write(dump(app))
    if "--console-script" in sys.argv[1:]:
        sys.stdout.write(console_script_dump(app))


if __name__ == "__main__":
    main()
