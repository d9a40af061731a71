"""A mechanism's load-time check under a time limit (above the protocol layer, which
stays pure: no threads, no clocks).

``protocol.mechanisms.stream_mechanism`` runs the contract's sample check on the first
build of each (name, eps) and remembers it passed. A plugin whose ``perturb`` (or
``in_domain``, ``estimate_mean``) never returns hung ``ldpfleet run`` and ``ldpfleet
audit`` at load, forever, without a word: where a scenario is loaded and where the audit
command loads a plugin, :func:`mechanism_in_time` makes that first build in a worker
thread joined with ``LOAD_CHECK_SECONDS``; later builds find the check done.

Also the plugin's folder for the device shard processes (``export_plugin_folder`` in the
runner, ``use_plugin_path`` in each shard): a plugin the caller's script made importable
with ``sys.path.insert`` is imported by the shards from the same folder.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from types import ModuleType

from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanisms import stream_mechanism

# Seconds the load-time check may take (the built-ins need milliseconds, a pure-Python
# plugin on its 557 inputs well under one second): a plugin past it is refused.
LOAD_CHECK_SECONDS = 60.0


def mechanism_in_time(name: str, eps: float):
    """``stream_mechanism(name, eps)`` in a worker thread joined with
    ``LOAD_CHECK_SECONDS``. Past the limit, one sentence (``ParameterError``, field
    ``mechanism``); the blocked call is left to its daemon thread (Python cannot stop it),
    which the exiting command does not wait for. The check's own errors are raised as
    they are."""
    outcome: list = []

    def work() -> None:
        try:
            outcome.append(stream_mechanism(name, eps))
        except BaseException as error:  # handed to the caller's thread as it is
            outcome.append(error)

    worker = threading.Thread(target=work, name=f"ldpfleet-check {name}", daemon=True)
    worker.start()
    worker.join(LOAD_CHECK_SECONDS)
    if worker.is_alive():
        raise ParameterError(
            f"{name!r} did not finish the load-time check within {LOAD_CHECK_SECONDS:g} s "
            "(perturb, in_domain or estimate_mean on a few hundred inputs): a plugin that "
            "blocks (a network call, a lock, input()) or is that slow cannot serve a device",
            field="mechanism",
            limit=f"a load-time check that finishes within {LOAD_CHECK_SECONDS:g} s",
            value=name,
        )
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]


# The device shard processes of a run (``[fleet] shards`` > 1, ``scenarios.shards``) are
# fresh interpreters: they do not see folders the caller's script added to ``sys.path``
# (``sys.path.insert(0, "plugins")`` before ``run_scenario``), so a plugin importable only
# that way failed in every shard ("module not found") while the runner had loaded it. The
# runner names, in this variable of the environment the shards inherit, the folder each
# plugin's module was imported from; a shard appends those folders to its ``sys.path``
# before it loads the scenario (appended: what the shard can import by itself comes first).
PLUGIN_PATH_VARIABLE = "LDPFLEET_PLUGIN_PATH"
_EXPORT_LOCK = threading.Lock()


def plugin_folder(mechanism: str) -> Path | None:
    """The ``sys.path`` folder this process imported the plugin ``'module:Class'`` from,
    or None for a built-in or entry-point name (no ``:``) and a ``__main__`` class (refused
    apart: ``runner.check_main_mechanism``). The module must be imported already (loading a
    scenario imports it). A module that no ``sys.path`` folder explains (built in memory
    and put in ``sys.modules``, imported from a zip file or by a custom importer) raises
    ``ParameterError`` naming ``mechanism``: the device processes could not import it."""
    if ":" not in mechanism or mechanism.startswith("__main__:"):
        return None
    module_name = mechanism.partition(":")[0]
    top = module_name.partition(".")[0]
    module = sys.modules.get(module_name) or sys.modules.get(top)
    if module is None:
        return None  # not imported here: the shards resolve it as this process would
    top_module = sys.modules.get(top, module)
    folder = _import_root(top_module)
    if folder is None or not _on_sys_path(folder):
        raise ParameterError(
            f"{mechanism!r}: module {top!r} was not imported from a folder on sys.path "
            f"({getattr(top_module, '__file__', None) or 'no file'}), so the device "
            "processes of [fleet] shards > 1 cannot import it: put it in a module file whose "
            "folder is on sys.path (or PYTHONPATH), install it, or run the devices in this "
            "process ([fleet] shards = 1, or broker='memory')",
            field="mechanism",
            limit="a plugin module imported from a folder on sys.path",
            value=mechanism,
        )
    return folder


def _import_root(module: ModuleType) -> Path | None:
    """The folder a top-level module or package was found in (None: no file)."""
    spec = getattr(module, "__spec__", None)
    locations = list(getattr(spec, "submodule_search_locations", None) or [])
    origin = getattr(spec, "origin", None) if spec is not None else None
    if origin and getattr(spec, "has_location", False) and os.path.isfile(origin):
        path = Path(origin).resolve()
        # a package's __init__.py sits in its own folder, one level below the root
        return path.parent.parent if locations else path.parent
    if locations:  # a namespace package: the folder above its first portion
        return Path(locations[0]).resolve().parent
    return None


def _on_sys_path(folder: Path) -> bool:
    """Whether ``folder`` is one of this process's ``sys.path`` folders ('' is the cwd)."""
    for entry in sys.path:
        try:
            if Path(entry or os.getcwd()).resolve() == folder:
                return True
        except OSError:
            continue
    return False


def export_plugin_folder(mechanism: str, environ: MutableMapping[str, str] = os.environ) -> None:
    """Name the folder of plugin ``mechanism`` (``plugin_folder``) in ``environ``'s
    ``PLUGIN_PATH_VARIABLE`` (this process's environment, which the device shard
    processes inherit), after the folders named there already. Call it before the shards
    start; ``ParameterError`` as ``plugin_folder``."""
    folder = plugin_folder(mechanism)
    if folder is None:
        return
    with _EXPORT_LOCK:  # runs in threads may export at once
        named = [f for f in environ.get(PLUGIN_PATH_VARIABLE, "").split(os.pathsep) if f]
        if str(folder) not in named:
            environ[PLUGIN_PATH_VARIABLE] = os.pathsep.join([*named, str(folder)])


def use_plugin_path(environ: Mapping[str, str] = os.environ) -> list[str]:
    """In a device shard process: append to ``sys.path`` the folders the runner named in
    ``PLUGIN_PATH_VARIABLE`` that it lacks; returns those appended."""
    added = []
    for folder in environ.get(PLUGIN_PATH_VARIABLE, "").split(os.pathsep):
        if folder and folder not in sys.path:
            sys.path.append(folder)
            added.append(folder)
    return added
