"""Every help text reaches the reader whole: typer renders help with rich markup, which
took "[scenario] seed" for a style tag and printed "as  seed" (and "mqtt://host:port" for
"mqtt://[user:pass@]host:port"). A bracketed word in a help text or a command's docstring
must be escaped (``\\[``) to be shown (held-out QA, helper C)."""

from __future__ import annotations

import re

from ldpfleet.app.cli import app
from typer.main import get_command
from typer.testing import CliRunner

# what rich takes for a markup tag: "[" then a letter, "#", "/" or "@"
TAG = re.compile(r"\[[a-z#/@][^\[\]]*\]")


def _commands(command, path):
    if hasattr(command, "commands"):
        for name, sub in command.commands.items():
            yield from _commands(sub, [*path, name])
    else:
        yield path, command


def test_bracketed_words_in_help_texts_are_shown():
    runner = CliRunner()
    missing = []
    for path, command in _commands(get_command(app), []):
        texts = [command.help or "", *(getattr(p, "help", None) or "" for p in command.params)]
        wanted = {w for t in texts for w in TAG.findall(t)}
        if not wanted:
            continue
        out = runner.invoke(app, [*path, "--help"], terminal_width=400).output
        flat = " ".join(re.sub("[│╭╮╰╯─]", " ", out).split())
        missing += [(" ".join(path), w) for w in sorted(wanted) if w not in flat]
    assert not missing, missing
