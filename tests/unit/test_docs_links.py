"""Every relative link in README.md and docs/*.md points at a file that exists and, with a
``#fragment`` into a Markdown file, at one of its headings (GitHub's slug: lower case,
punctuation but ``-`` and ``_`` dropped, spaces to ``-``, a repeated heading ``-1``, ...).
docs/claims.md links every claim to its evidence, so a renamed section must not leave a
dead link."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT

FENCED = re.compile(r"```.*?```", re.S)
LINK = re.compile(r"\]\(([^)\s]+)\)")
FILES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower())
    return text.replace(" ", "-")


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    found, seen = set(), {}
    for match in re.finditer(r"^#{1,6} (.+)$", FENCED.sub("", path.read_text()), re.M):
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def dead_links(path: Path) -> list[str]:
    dead = []
    for match in LINK.finditer(FENCED.sub("", path.read_text())):
        target = match.group(1)
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        file, _, fragment = target.partition("#")
        dest = path.parent / file if file else path
        if not dest.exists():
            dead.append(f"{target} (no file)")
        elif fragment and dest.suffix == ".md" and fragment not in anchors(dest):
            dead.append(f"{target} (no heading)")
    return dead


def test_the_slug_follows_github():
    assert slug("Masking-delta scale (ξ against B), helper G (2026-12-05)") == (
        "masking-delta-scale-ξ-against-b-helper-g-2026-12-05"
    )
    assert slug("`ldpfleet audit all` under 3 minutes") == "ldpfleet-audit-all-under-3-minutes"


def test_a_dead_link_is_found(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("# Title\n\n[ok](#title) [gone](#nothing) [none](missing.md)\n")
    assert dead_links(page) == ["#nothing (no heading)", "missing.md (no file)"]


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_no_dead_links(path):
    assert dead_links(path) == []
