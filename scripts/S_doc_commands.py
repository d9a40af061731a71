"""List every shell command and python block of the user-facing docs, with file:line.

Usage: python scripts/S_doc_commands.py [--python] [--json]
Shell commands come from ``bash``/``sh``/``console``/``shell`` fenced blocks and from
untagged blocks whose lines start with ``ldpfleet`` or ``$ ``; line continuations are
joined, comments dropped. With --python the ``python`` blocks are listed too (one entry per
block, at its first line).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGES = (
    "README.md",
    "docs/tutorial.md",
    "docs/scenarios.md",
    "docs/scenario-reference.md",
    "docs/api.md",
    "docs/results.md",
    "docs/streaming.md",
    "docs/brokers.md",
    "docs/reliability.md",
)
SHELL = {"bash", "sh", "console", "shell", "shell-session"}
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")


def blocks(page: str):
    """(language, first line number, lines) of each fenced block of a page."""
    lines = (ROOT / page).read_text().splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start, body = m.group(2), i + 2, []
        i += 1
        while i < len(lines) and not FENCE.match(lines[i]):
            body.append(lines[i])
            i += 1
        i += 1
        yield lang, start, body


def commands(page: str):
    """(line, command) of the shell commands of a page."""
    for lang, start, body in blocks(page):
        looks_shell = any(re.match(r"\s*(\$ )?ldpfleet\b", b) for b in body)
        if lang not in SHELL and not (lang == "" and looks_shell):
            continue
        pending, first = "", None
        for n, raw in enumerate(body, start):
            line = raw.strip()
            shell_line = re.match(r"(\$ )?ldpfleet\b|python |export ", line)
            if lang == "" and not shell_line and not pending:
                continue
            line = re.sub(r"^\$ ", "", line)
            if first is None:
                first = n
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            command = " ".join(re.sub(r"(^|\s)#.*$", "", pending + line).split())
            pending = ""
            if command:
                yield first, command
            first = None


def python_blocks(page: str):
    for lang, start, body in blocks(page):
        if lang in ("python", "py"):
            yield start, "\n".join(body)


def main(argv: list[str]) -> int:
    rows = []
    for page in PAGES:
        rows += [(page, n, "sh", c) for n, c in commands(page)]
        if "--python" in argv:
            rows += [(page, n, "python", c) for n, c in python_blocks(page)]
    if "--json" in argv:
        print(json.dumps([dict(page=p, line=n, kind=k, text=c) for p, n, k, c in rows]))
    else:
        for p, n, k, c in rows:
            text = c if k == "sh" else f"<python block, {c.count(chr(10)) + 1} lines>"
            print(f"{p}:{n}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
