"""What makes an output folder's path impossible to create, said before a run starts
(``ldpfleet run --out`` and every ``--out`` of the command line, ``ldpfleet.run(out_dir=)``):
a symbolic link on the way whose target does not exist, or a loop of links, and a folder
name longer than the file system allows. Each had ended the run in an ``OSError``
traceback from ``mkdir`` (FileExistsError, FileNotFoundError, ELOOP, ENAMETOOLONG).
Standard library only: the command line's option callbacks import it."""

from __future__ import annotations

import os
from pathlib import Path

NAME_MAX = 255  # bytes of one folder name, when the file system does not say


def out_path_problem(path: Path) -> str | None:
    """One sentence saying why ``path`` (a folder to create or reuse) cannot be one, or
    None. Only the parts that do not exist yet are judged: an existing folder passes."""
    parts = (path, *path.parents)
    # os.path's answers, not Path.exists: a name too long raises ENAMETOOLONG there
    existing = next((p for p in parts if os.path.exists(p)), None)
    for folder in parts:
        if folder == existing:
            break
        if os.path.islink(folder):  # a link that does not resolve: dangling, or a loop
            try:
                target = os.readlink(folder)
            except OSError:
                target = "?"
            return (
                f"{folder} is a symbolic link to {target}, which does not exist (or the "
                "links loop): give another path, or create the link's target folder"
            )
    limit = NAME_MAX
    if existing is not None and os.path.isdir(existing):
        try:
            limit = os.pathconf(existing, "PC_NAME_MAX")
        except (OSError, ValueError):
            limit = NAME_MAX
    for folder in parts:
        if folder == existing:
            break
        size = len(os.fsencode(folder.name))
        if size > limit:
            return (
                f"the folder name {folder.name[:24]}... is {size} bytes long, above the "
                f"file system's limit of {limit}: give a shorter one"
            )
    return None
