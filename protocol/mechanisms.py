"""The per-report stream mechanisms a device may run, by name: the registry.

Every mechanism satisfies one contract (``protocol.mechanism_contract``: ``Cls(eps)``,
``perturb``, ``in_domain``, ``estimate_mean`` on inputs in [0, 1]) and is built by one code
path, ``stream_mechanism(name, eps)``. A name is one of:

* a built-in: ``sw`` and ``sw01`` (Square Wave, ``protocol.sw``), ``laplace``
  (``protocol.laplace``), ``duchi`` (Duchi et al.'s one-bit mechanism, ``protocol.duchi``),
  ``piecewise`` and ``hybrid`` (Wang et al., ICDE 2019, ``protocol.piecewise``,
  ``protocol.hybrid``), and ``raw`` (``protocol.raw``): the central model's identity, no
  local privacy, no budget (``eps = 0``); only allowed in scenarios whose collector performs
  a central release (``[gcdp]``);
* ``"package.module:Class"``: imported (the module must be importable wherever the
  mechanism runs: installed, or on ``PYTHONPATH`` for the runner AND its device shard
  processes, which inherit the environment);
* the name of an entry point in the group ``ldpfleet.mechanisms`` of an installed
  distribution (``[project.entry-points."ldpfleet.mechanisms"] mine = "pkg.mod:Class"``).

Names travel on the wire (``Hello`` / ``SwReport``), so they are short and plain:
``MECHANISM_NAME_PATTERN``, at most ``MAX_MECHANISM_NAME`` characters. The first build of a
(name, eps) also runs the contract's sample check (``check_mechanism``); a bad plugin gives
one sentence naming what is wrong (``ParameterError``, field ``mechanism``).
"""

from __future__ import annotations

import importlib
import logging
import re
from collections.abc import Callable
from functools import lru_cache, partial
from importlib.metadata import entry_points
from pathlib import Path

import numpy as np
from ldpfleet.protocol.duchi import DuchiMechanism
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.hybrid import HybridMechanism
from ldpfleet.protocol.laplace import LaplaceMechanism
from ldpfleet.protocol.mechanism_contract import (
    REQUIRED_METHODS,
    StreamMechanism,
    a_or_an,
    build_mechanism,
    check_budget,
    check_mechanism,
)
from ldpfleet.protocol.messages import MAX_MECHANISM_NAME, MECHANISM_NAME_PATTERN
from ldpfleet.protocol.piecewise import PiecewiseMechanism
from ldpfleet.protocol.raw import RawMechanism
from ldpfleet.protocol.sw import SquareWave

__all__ = [
    "BUILTIN_MECHANISMS",
    "ENTRY_POINT_GROUP",
    "LDP_MECHANISMS",
    "MAX_MECHANISM_NAME",
    "MECHANISM_NAME_PATTERN",
    "STREAM_MECHANISMS",
    "SW_MECHANISMS",
    "PluginImportFailed",
    "UnresolvedMechanism",
    "check_mechanism_name",
    "class_import_path",
    "is_entry_point",
    "mechanism_factory",
    "mechanism_names",
    "stream_mechanism",
]

ENTRY_POINT_GROUP = "ldpfleet.mechanisms"
log = logging.getLogger(__name__)
_NAME = re.compile(MECHANISM_NAME_PATTERN)

BUILTIN_MECHANISMS: dict[str, Callable[[float], object]] = {
    "sw": partial(SquareWave, variant="sw"),
    "sw01": partial(SquareWave, variant="sw01"),
    "laplace": LaplaceMechanism,
    "raw": RawMechanism,
    "duchi": DuchiMechanism,
    "piecewise": PiecewiseMechanism,
    "hybrid": HybridMechanism,
}
STREAM_MECHANISMS = tuple(BUILTIN_MECHANISMS)
LDP_MECHANISMS = tuple(name for name in STREAM_MECHANISMS if name != "raw")
SW_MECHANISMS = ("sw", "sw01")
# (name, eps, the class built) whose sample check passed: the class too, since a
# "__main__:Class" is re-read on each build (a notebook cell run again redefines it)
_checked: set[tuple[str, float, object]] = set()


def check_mechanism_name(name: object) -> str:
    """``name`` is a well-formed mechanism name (not whether it resolves)."""
    if isinstance(name, str) and ".py:" in name:  # "path/to/file.py:Class"
        module = name.rpartition(":")[0].replace("\\", "/").rpartition("/")[2]
        raise ParameterError(
            f"a file path is not a mechanism name, got {name!r}: put the file's folder on "
            f"PYTHONPATH and name it 'module:Class' (here "
            f"'{module.removesuffix('.py')}:{name.rpartition(':')[2] or 'Class'}')",
            field="mechanism",
            limit="a 'module:Class' name, not a file path",
            value=name,
        )
    if not isinstance(name, str) or not _NAME.match(name):
        raise ParameterError(
            f"must be a built-in ({', '.join(STREAM_MECHANISMS)}), 'package.module:Class' or "
            f"an entry-point name (letters, digits, '_', '.', '-', one ':'; at most "
            f"{MAX_MECHANISM_NAME} characters), got {name!r}",
            field="mechanism",
            limit=(
                f"a built-in ({', '.join(STREAM_MECHANISMS)}), 'package.module:Class' or an "
                f"entry-point name (at most {MAX_MECHANISM_NAME} characters)"
            ),
            value=name,
        )
    return name


class UnresolvedMechanism(ParameterError):
    """A mechanism name that does not lead to a class (not found, not importable, not a
    class): raised before any budget is involved, so a scenario does not quote one."""


class PluginImportFailed(UnresolvedMechanism):
    """The plugin's module was found but its import failed: a dependency it imports is not
    installed, or its own code raised. Its entry point (if any) is right: the fix is in
    the environment or in the plugin, not in the entry points."""


def _own_module(missing: str | None, module_name: str) -> bool:
    """Whether the module not found is the one named (or a package above it), rather
    than something that module imports."""
    return missing is None or module_name == missing or module_name.startswith(f"{missing}.")


def _import_class(name: str) -> type:
    module_name, _, attribute = name.partition(":")
    try:
        target: object = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if not _own_module(error.name, module_name):  # the plugin's dependency is missing
            raise PluginImportFailed(
                f"{name!r}: {module_name!r} imports {error.name!r}, which is not installed "
                "(install it wherever the mechanism runs: the runner and its device "
                "processes)",
                field="mechanism",
                limit="a plugin whose imports are installed",
                value=name,
            ) from None
        raise UnresolvedMechanism(
            f"{name!r}: module {error.name!r} not found (install it, or put its folder on "
            f"PYTHONPATH for the runner and its device processes){_here_hint(error.name)}",
            field="mechanism",
            limit="an importable module",
            value=name,
        ) from None
    except (Exception, SystemExit) as error:  # the plugin's own import failed
        raise PluginImportFailed(
            f"{name!r}: importing {module_name!r} failed: {error}",
            field="mechanism",
            limit="a plugin module that imports",
            value=name,
        ) from None
    for part in attribute.split("."):
        if not hasattr(target, part):
            raise UnresolvedMechanism(
                f"{name!r}: module {module_name!r} has no attribute {attribute!r}"
                f"{_close_class(target, part)}",
                field="mechanism",
                limit="'module:Class' naming a class of the module",
                value=name,
            )
        target = getattr(target, part)
    if not isinstance(target, type):
        raise UnresolvedMechanism(
            f"{name!r} is not a class (got {a_or_an(type(target).__name__)}); the contract "
            "constructs Cls(eps)",
            field="mechanism",
            limit="a class, constructed as Cls(eps)",
            value=name,
        )
    return target


def _close_class(owner: object, missing: str) -> str:
    """`` (did you mean 'Duchi'?)``: the class of ``owner`` whose name is closest to the
    ``missing`` one (case included: ``mymechs:duchi`` for ``Duchi``), or ``""``."""
    import difflib

    try:
        classes = [n for n in vars(owner) if isinstance(getattr(owner, n, None), type)]
    except TypeError:  # an object without a __dict__
        return ""
    by_case = [n for n in classes if n.lower() == missing.lower()]
    close = by_case or difflib.get_close_matches(missing, classes, n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _colon_hint(name: str) -> str:
    """``; to name class 'Duchi' of module 'mymechs', write 'mymechs:Duchi'`` for a dotted
    name without a colon (``mymechs.Duchi``, the way Python imports read), else ``""``."""
    if ":" in name or "." not in name:
        return ""
    module, _, cls = name.rpartition(".")
    if not cls.isidentifier() or not all(part.isidentifier() for part in module.split(".")):
        return ""  # '..' was told to write '.:', 'a..b' 'a.:b'
    return f"; to name class {cls!r} of module {module!r}, write {module + ':' + cls!r}"


def _here_hint(module: str | None) -> str:
    """A hint when the missing top-level module is a file or package in the current
    directory: ``ldpfleet`` (a console script) does not import from there, which a user
    who just wrote ``mymech.py`` beside the scenario does not expect."""
    top = (module or "").partition(".")[0]
    if not top:
        return ""
    here = Path.cwd()
    found = here / f"{top}.py" if (here / f"{top}.py").is_file() else here / top / "__init__.py"
    if not found.is_file():
        return ""
    shown = f"{top}.py" if found.name != "__init__.py" else f"{top}/"
    return (
        f"; {shown} is in the current directory, which is not on the import path: "
        "run with PYTHONPATH=. (exported, so device shard processes see it too)"
    )


def _entry_point_class(name: str) -> type:
    found = entry_points(group=ENTRY_POINT_GROUP).select(name=name)
    if not found:
        raise UnresolvedMechanism(
            f"{name!r} is not a built-in ({', '.join(STREAM_MECHANISMS)}), not "
            f"'package.module:Class', and no installed package registers it in the entry-point "
            f"group {ENTRY_POINT_GROUP!r}{registered_clause()}{_colon_hint(name)}",
            field="mechanism",
            limit=(
                f"a built-in ({', '.join(STREAM_MECHANISMS)}), 'package.module:Class' or a "
                f"name registered in the entry-point group {ENTRY_POINT_GROUP!r}"
            ),
            value=name,
        )
    targets = {each.value.replace(" ", ""): each for each in found}
    if len(targets) > 1:  # two packages claim the name: which one runs is an accident
        claims = "; ".join(
            f"{_distribution(each)} -> {target!r}" for target, each in sorted(targets.items())
        )
        raise UnresolvedMechanism(
            f"{name!r} is registered in the entry-point group {ENTRY_POINT_GROUP!r} by more "
            f"than one installed package ({claims}): name the one to use by its import path "
            f"(mechanism = {sorted(targets)[0]!r}), or uninstall the other",
            field="mechanism",
            limit="a name one installed package registers",
            value=name,
        )
    entry = next(iter(found))
    target = entry.value.replace(" ", "")
    where = (
        f"entry point {name!r} of group {ENTRY_POINT_GROUP!r} (distribution "
        f"{_distribution(entry)}) points to {target!r}"
    )
    fix_target = "fix the target in that package's entry points (pyproject.toml) and reinstall it"
    if ":" not in target:  # "pkg.mod": a module, no class (it said "has no attribute ''")
        raise UnresolvedMechanism(
            f"{where}: {target!r} names a module, not a class (write it "
            f"{target + ':Class'!r}); {fix_target}",
            field="mechanism",
            limit="an entry point naming 'module:Class'",
            value=name,
        )
    try:
        return _import_class(target)
    except ParameterError as error:  # name the entry point, its distribution and target
        rest = error.reason.removeprefix(repr(target))  # ": ..." or " is not a class ..."
        detail = rest if rest.startswith(":") else f", which{rest}"
        # the target imports but fails: its dependency or its code, not the entry point
        fix = "then retry" if isinstance(error, PluginImportFailed) else fix_target
        raise type(error)(
            f"{where}{detail}; {fix}", field="mechanism", limit=error.limit, value=name
        ) from None


def registered_clause() -> str:
    """`` (registered: a, b)``: the names installed packages register in the group (what a
    mistyped name was probably meant to be), or ``""`` when there are none."""
    try:
        names = sorted({entry.name for entry in entry_points(group=ENTRY_POINT_GROUP)})
    except Exception:  # a broken installed distribution: say nothing rather than fail
        return ""
    return f" (registered: {', '.join(names)})" if names else ""


def is_entry_point(name: str) -> bool:
    """Whether an installed distribution registers ``name`` in the entry-point group
    ``ldpfleet.mechanisms`` (whether or not its target imports): the audit and the CLI
    then report the entry point's own failure rather than "unknown mechanism"."""
    try:
        return bool(entry_points(group=ENTRY_POINT_GROUP).select(name=name))
    except Exception:  # a broken installed distribution: not resolvable as an entry point
        return False


def _distribution(entry) -> str:
    """The name of the installed distribution that registers ``entry`` (or a stand-in)."""
    dist = getattr(entry, "dist", None)
    return repr(dist.name) if dist is not None else "an installed package"


def mechanism_factory(name: str) -> Callable[[float], object]:
    """The constructor ``Cls(eps)`` for ``name`` (built-in, import path, or entry point)."""
    check_mechanism_name(name)
    if name in BUILTIN_MECHANISMS:
        _warn_if_shadowed(name)
        return BUILTIN_MECHANISMS[name]
    if name.startswith("__main__:"):  # a script's or notebook's own class: re-read each
        return _import_class(name)  # time (a cell run again redefines it; no import cost)
    return _plugin_class(name)


@lru_cache(maxsize=len(BUILTIN_MECHANISMS))
def _warn_if_shadowed(name: str) -> str | None:
    """A built-in name wins over an installed entry point of the same name: say so once
    per name and process (a logging warning, on stderr unless logging is configured),
    naming the distribution, its target and the import path that reaches the plugin.
    Returns the warning (None: nothing is shadowed)."""
    try:
        found = list(entry_points(group=ENTRY_POINT_GROUP).select(name=name))
    except Exception:  # a broken installed distribution must not stop a built-in
        return None
    if not found:
        return None
    shadowed = "; ".join(
        f"{_distribution(entry)} -> {entry.value.replace(' ', '')!r}" for entry in found
    )
    target = found[0].value.replace(" ", "")
    warning = (
        f"mechanism {name!r} is the built-in; the entry point {name!r} of group "
        f"{ENTRY_POINT_GROUP!r} ({shadowed}) is shadowed by it and not used: name the "
        f"plugin by its import path, mechanism = {target!r}"
    )
    log.warning("%s", warning)
    return warning


@lru_cache(maxsize=64)
def _plugin_class(name: str) -> type:
    """Import once per name (a failure is not cached: fix the plugin and retry)."""
    if ":" in name:
        return _import_class(name)
    return _entry_point_class(name)


def class_import_path(mechanism: object) -> str:
    """The name ``"module:Class"`` of a mechanism class given as itself (one defined in a
    notebook or a script is ``"__main__:Class"``), checked to lead back to that very
    class: a class redefined since its name was first resolved (a notebook cell run
    again) replaces the earlier one. Raises ``ParameterError`` (field ``mechanism``) for
    an instance (every side builds ``Cls(eps)`` itself: pass the class), a class defined
    inside a function (no import path reaches it) and anything else that is not a class
    (``check_mechanism_name``'s sentence)."""
    if not isinstance(mechanism, type):
        if all(hasattr(mechanism, method) for method in REQUIRED_METHODS):
            raise ParameterError(
                f"pass the class (or its 'module:Class' name), not an instance: every side "
                f"builds Cls(eps) itself; got {mechanism!r:.80}",
                field="mechanism",
                limit="a class (or its 'module:Class' name), not an instance",
                value=mechanism,
            )
        if callable(mechanism):  # functools.partial(Cls, width=2), a lambda, a function
            raise ParameterError(
                f"{mechanism!r:.80} is not a class: every side builds Cls(eps) from a name, so "
                "fix other parameters in a subclass at module level (class Wide(Cls): def "
                "__init__(self, eps): super().__init__(eps, width=2))",
                field="mechanism",
                limit="a class (or its 'module:Class' name)",
                value=mechanism,
            )
        check_mechanism_name(mechanism)  # None, a number, bytes: the usual sentence
    module, qualname = mechanism.__module__, mechanism.__qualname__
    if "<locals>" in qualname:
        raise ParameterError(
            f"class {mechanism.__name__} is defined inside a function ({qualname}), where no "
            f"import path reaches it: define it at module level (then it is "
            f"'{module}:{mechanism.__name__}')",
            field="mechanism",
            limit="a class defined at module level",
            value=mechanism,
        )
    path = check_mechanism_name(f"{module}:{qualname}")
    if _plugin_class(path) is not mechanism:  # redefined since it was first resolved
        _plugin_class.cache_clear()
        _checked.difference_update({key for key in _checked if key[0] == path})
        if _plugin_class(path) is not mechanism:
            raise ParameterError(
                f"{path!r} names another class than the one given (is it a copy, or "
                f"was {module}.{qualname} reassigned?): pass the class the module holds",
                field="mechanism",
                limit="the class the module holds",
                value=mechanism,
            )
    return path


def stream_mechanism(name: str | type, eps: float) -> StreamMechanism:
    """The mechanism ``name`` at budget ``eps`` per report (``raw``: eps must be 0).

    ``name``: a built-in (``mechanism_names()``), ``"package.module:Class"``, an entry
    point's name, or the class itself (``class_import_path``). ``eps``: a finite real
    number in (0, 50] (``raw``: 0). Returns the mechanism, an instance of its class.
    Raises ``ParameterError`` (``.field``: ``mechanism`` or ``eps``) for a name that does
    not resolve (``UnresolvedMechanism``), a budget refused, or a class that breaks the
    contract on the sample check below (the sentence says what is wrong).

    The first build of each (name, eps) runs the contract's sample check on a fixed-seed
    generator of its own (the caller's generator is never touched), with no time limit
    (this layer has no threads or clocks: ``scenarios.plugin_load.mechanism_in_time``
    makes that first build under one, where scenarios and audited plugins are loaded).
    A budget outside (0, 50] (``check_budget``) is refused for every mechanism but ``raw``
    before any plugin sees it: a plugin built at eps = 0, NaN or inf answered with a
    misleading failure of its own (``ldpfleet audit pkg.mod:Cls --eps nan``:
    "estimate_mean returned nan")."""
    if not isinstance(name, str):
        name = class_import_path(name)
    if name != "raw":
        eps = check_budget(eps)  # a float: a np.float32 budget reaches no class as such
    factory = mechanism_factory(name)
    mechanism = build_mechanism(factory, eps, name)
    key = (name, float(eps), factory)
    if key not in _checked:  # a time limit on it: scenarios.plugin_load (no threads here)
        check_mechanism(mechanism, name, np.random.default_rng(0), randomised=name != "raw")
        _checked.add(key)
    return mechanism


def mechanism_names() -> tuple[str, ...]:
    """Every mechanism name that resolves without an import path: the built-ins, then the
    names installed packages register in the entry-point group ``ldpfleet.mechanisms``."""
    registered = sorted({entry.name for entry in entry_points(group=ENTRY_POINT_GROUP)})
    return STREAM_MECHANISMS + tuple(n for n in registered if n not in BUILTIN_MECHANISMS)
