"""``ldpfleet docs``: the documentation pages that ship with the package.

The pages are docs/*.md (with the figure docs/img/ they show and the Mosquitto
configuration docs/mosquitto/ they quote), package data of ``ldpfleet.docs``
(pyproject.toml); docs/preregistration/ is not shipped. Installed from a wheel they are in
the package's folder, ``ldpfleet/docs/``; in an editable install (``pip install -e .``)
they are read from the repository's docs/, the folder beside ``ldpfleet/`` (setuptools'
editable finder does not import a data folder without ``__init__.py`` nested in a
package, so the folder is found on disk, not imported).

- ``ldpfleet docs``: one line per page, its name and its first heading;
- ``ldpfleet docs NAME``: the page, plain Markdown on stdout (``NAME``, ``NAME.md`` or
  ``docs/NAME.md``, the path error messages give);
- ``--path``: the page's file path instead (without NAME: the folder's).

An unknown NAME is a ``ParameterError`` naming the value, the nearest page and every
page: one line, exit 2. Imports typer only (``ldpfleet --help`` loads this module).
"""

from __future__ import annotations

import sys
from pathlib import Path, PurePosixPath
from typing import Annotated

import typer
from ldpfleet.app.cli_common import user_errors

__all__ = ["doc_pages", "docs_command", "docs_root", "first_heading"]

PAGE_SUFFIX = ".md"


def docs_root() -> Path | None:
    """The folder of the shipped pages: ``ldpfleet/docs/`` of an installed wheel, else the
    ``docs/`` of the source tree an editable install runs from (the folder beside
    ``ldpfleet/`` that holds pyproject.toml), else None."""
    import ldpfleet

    package = Path(ldpfleet.__file__).resolve().parent
    installed = package / "docs"
    if installed.is_dir():
        return installed
    source_tree = package.parent
    if (source_tree / "pyproject.toml").is_file() and (source_tree / "docs").is_dir():
        return source_tree / "docs"
    return None


def doc_pages(root: Path | None = None) -> dict[str, Path]:
    """Every page, sorted by name: ``{"scenarios": .../docs/scenarios.md, ...}``."""
    root = docs_root() if root is None else root
    if root is None:
        return {}
    found = (p for p in root.glob(f"*{PAGE_SUFFIX}") if p.is_file())
    return {p.stem: p for p in sorted(found, key=lambda p: p.stem)}  # audit before audit-e2e


def first_heading(path: Path) -> str:
    """The text of the page's first Markdown heading (``# Title`` -> ``Title``), outside
    fenced code blocks; '' when it has none."""
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#")
            if not title or title[0] in " \t":
                return title.strip()
    return ""


def _page_name(name: str) -> str:
    """``scenarios``, ``scenarios.md`` and ``docs/scenarios.md`` all name one page."""
    path = PurePosixPath(name.replace("\\", "/"))
    if len(path.parts) == 2 and path.parts[0] == "docs":
        path = PurePosixPath(path.parts[1])
    if len(path.parts) == 1 and path.suffix == PAGE_SUFFIX:
        return path.stem
    return name


def find_page(name: str, pages: dict[str, Path]) -> Path:
    """The page ``name`` names, or a ``ParameterError`` naming the value, the nearest page
    (did you mean) and every page."""
    page = pages.get(_page_name(name))
    if page is not None:
        return page
    from ldpfleet.app.suggest import near_miss
    from ldpfleet.protocol.errors import ParameterError

    valid = ", ".join(pages) if pages else "none (no documentation pages found)"
    raise ParameterError(
        f"no documentation page {name!r}{near_miss(_page_name(name), pages)}; the pages: {valid}",
        field="NAME",
        limit="the name of a shipped page",
        value=name,
    )


def _write(text: str) -> None:
    """``text`` on stdout as UTF-8, the pages' own encoding, whatever the locale's (an
    ASCII stdout would refuse ε). A reader that stops early (``ldpfleet docs cadr | head``)
    ends it as click ends any command then: no traceback, exit 1."""
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:
        sys.stdout.write(text)
    else:
        sys.stdout.flush()
        buffer.write(text.encode("utf-8"))
    sys.stdout.flush()


def docs_command(
    name: Annotated[
        str | None,
        typer.Argument(
            help="A page's name (from the list), e.g. scenarios; scenarios.md and "
            "docs/scenarios.md name it too.",
            show_default=False,
        ),
    ] = None,
    path: Annotated[
        bool,
        typer.Option("--path", help="Print the page's file path (without NAME: the folder's)."),
    ] = False,
) -> None:
    """List the documentation pages that ship with the package (name and first heading),
    or print one: `ldpfleet docs scenarios`."""
    with user_errors():
        root = docs_root()
        pages = doc_pages(root)
        if name is None:
            if path:
                if root is None:
                    _no_pages()
                _write(f"{root}\n")
                return
            if not pages:
                _no_pages()
            width = max(len(n) for n in pages)
            _write("".join(f"{n:<{width}}  {first_heading(p)}\n" for n, p in pages.items()))
            return
        page = find_page(name, pages)
        _write(f"{page}\n" if path else page.read_text(encoding="utf-8"))


def _no_pages() -> None:
    from ldpfleet.protocol.errors import ParameterError

    raise ParameterError(
        "no documentation pages found: the package has no docs/ folder (reinstall ldpfleet)",
        field="docs",
        limit="a docs/ folder with at least one page",
        value=None,
    )
