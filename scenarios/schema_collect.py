"""Every refusal of a scenario at once, not one per run.

``parse_scenario`` used to stop at the first refusal: a file with three mistakes took three
runs to fix. ``Refusals`` collects them instead, and ``parse_scenario`` raises the first
found (the ``ScenarioError`` it raised before, message, ``field``, ``limit`` and ``value``
unchanged) carrying all of them in ``errors`` (docs/api.md, "Errors").

Two phases, each refusal recorded instead of raised:

- decoding (``decode_rest``): after msgspec refuses a key (its type or range, or a key
  the schema does not have) the key is taken out of the parsed TOML and the rest decoded
  again, until it decodes or ``ERRORS_COUNTED`` refusals are counted. A required key
  taken out (or missing) takes its section out with it: a section without its required
  keys cannot be checked. "missing required field" is not reported for a key that was
  refused already, nor for one an unknown key's near miss names (``stepz`` for
  ``steps``: one mistake, one line);
- the checks across keys (``Refusals.run``): each check runs on the decoded spec seen
  through ``_Guard``, which stops a check (``_Blocked``, not an error) the moment it reads
  a key already refused (by the decoding or by an earlier check: its ``field``), so that a
  value replaced by its default, or a check whose inputs were refused, cannot refuse
  again for the same mistake. Until the first refusal the checks run on the spec itself,
  exactly as before; after it, an exception that is not a ``ScenarioError`` skips the
  check (it read what an earlier refusal left meaningless). The checks of which sections
  a scenario may hold read each section through ``unless_refused`` instead, passing over
  one refused (its own refusal says it) rather than stopping (a stray ``[fleet]`` in a
  CADR-LDP file is refused beside a refused ``[cpr]`` key); ``differs_from`` tells a
  section set off its defaults by its keys not refused.

The first error found comes first; the others follow in file order (of their key; a
refusal naming no key last). ``ERRORS_SHOWN`` of them are kept in ``errors``, the count of
the others in ``omitted``.
"""

from __future__ import annotations

import datetime
import difflib
import re
import tomllib
from collections.abc import Callable
from dataclasses import replace

import msgspec
from ldpfleet.scenarios.schema_errors import (
    ScenarioError,
    _name_the_field,
    _validation_limit,
)
from ldpfleet.scenarios.schema_explain import (
    _ALIASES,
    _MISSING,
    _key_parts,
    _path_of,
    _raw_value,
    _struct_at,
    explain_invalid,
    parsed_toml,
)
from ldpfleet.scenarios.schema_sections import Scenario

# the refusals a ScenarioError's ``errors`` lists; the rest are counted (``omitted``)
ERRORS_SHOWN = 20
# where collecting stops (a file of thousands of stray keys is not worth decoding again
# for each): ``omitted`` then counts up to here
ERRORS_COUNTED = 1000


class _Blocked(BaseException):
    """A check read a key already refused: it is skipped, not an error. A
    ``BaseException``: a check's own ``except Exception`` must not catch it."""


def _key_path(field: str) -> str:
    """``source.bounds`` for ``source.bounds[0]``: the key a refusal makes unreadable."""
    return field.split("[", 1)[0]


def _under(path: str, refused: str) -> bool:
    """``path`` is ``refused`` or inside it (``stream.eps`` inside ``stream``)."""
    return path == refused or path.startswith(refused + ".")


class _Guard:
    """A section (or the whole ``Scenario``) as the checks read it after a refusal: the
    same attributes, values and ``isinstance``, except that reading a refused key raises
    ``_Blocked``; comparing a section that holds one too."""

    __slots__ = ("_guard_path", "_guard_real", "_guard_refused")

    def __init__(self, real: msgspec.Struct, path: str, refused: set[str]) -> None:
        object.__setattr__(self, "_guard_real", real)
        object.__setattr__(self, "_guard_path", path)
        object.__setattr__(self, "_guard_refused", refused)

    @property
    def __class__(self):  # isinstance(spec.source, CsvSource) as on the struct itself
        return type(self._guard_real)

    def __getattr__(self, name: str):
        real = self._guard_real
        value = getattr(real, name)
        if name not in type(real).__struct_fields__:
            return value
        path = f"{self._guard_path}.{name}" if self._guard_path else name
        if any(_under(path, refused) for refused in self._guard_refused):
            raise _Blocked(path)
        if isinstance(value, msgspec.Struct):
            return _Guard(value, path, self._guard_refused)
        return value

    def __setattr__(self, name: str, value) -> None:
        raise AttributeError(f"{type(self._guard_real).__name__} is read-only here")

    def _guard_whole(self) -> msgspec.Struct:
        """The section itself, when no key inside it is refused."""
        prefix = self._guard_path
        if any(not prefix or _under(refused, prefix) for refused in self._guard_refused):
            raise _Blocked(prefix or "(the scenario)")
        return self._guard_real

    def __eq__(self, other) -> bool:
        other = other._guard_whole() if isinstance(other, _Guard) else other
        return self._guard_whole() == other

    def __ne__(self, other) -> bool:
        return not self == other

    __hash__ = None

    def __repr__(self) -> str:
        return f"_Guard({self._guard_real!r})"


def unless_refused(read: Callable[[], object], otherwise: object = None) -> object:
    """``read()``, or ``otherwise`` when it reads a key refused already: for a check that
    goes on past what a refusal left unknown (a section refused whole, whose own refusal
    says it) instead of being skipped whole (``_Blocked``)."""
    try:
        return read()
    except _Blocked:
        return otherwise


def differs_from(section, default: msgspec.Struct) -> bool:
    """``section != default`` as a check reads it: whether a key of ``section`` not refused
    already differs from its default. A refused key is not counted: the value it gets once
    corrected may be its default (a ``[cpr]`` with only ``min_cycles`` refused may be the
    defaults), so only the other keys show that the section was set."""
    if not isinstance(section, _Guard):
        return section != default
    return any(
        unless_refused(lambda n=name: getattr(section, n) != getattr(default, n), False)
        for name in type(default).__struct_fields__
    )


def refused_already(loaded) -> bool:
    """Whether a refusal was recorded before the check reading ``loaded`` (``Refusals.view``
    hands the checks the spec through ``_Guard`` from the first refusal on)."""
    return type(loaded.spec) is _Guard


class Refusals:
    """The refusals of one scenario text, as ``parse_scenario`` finds them."""

    def __init__(self, text: str, where: str) -> None:
        self.text = text
        self.where = where
        self.errors: list[ScenarioError] = []
        self.counted = 0  # refusals found, kept or not
        self.refused: set[str] = set()  # key paths (no indices) the checks must not read
        self.claimed: set[str] = set()  # keys an unknown key's near miss names

    def blocks(self, path: str) -> bool:
        """Whether ``path`` is refused (itself or its section)."""
        return any(_under(_key_path(path), refused) for refused in self.refused)

    def refuse(self, path: str) -> None:
        self.refused.add(_key_path(path))

    @property
    def full(self) -> bool:
        return self.counted >= ERRORS_COUNTED

    def add(self, error: ScenarioError) -> None:
        """Record ``error`` (its field, value and limit named as a raised one's are), unless
        it names a key already refused (a consequence of that refusal)."""
        _name_the_field(error, self.where, self.text)
        if error.field is not None and self.errors and self.blocks(error.field):
            return
        self.counted += 1
        if len(self.errors) < ERRORS_COUNTED:
            self.errors.append(error)
        if error.field is not None:
            self.refuse(error.field)

    def view(self, loaded):
        """``loaded`` as the next check reads it: itself until the first refusal, then
        through ``_Guard``."""
        if not self.errors and not self.refused:
            return loaded
        return replace(loaded, spec=_Guard(loaded.spec, "", self.refused))

    def run(self, check: Callable, loaded, where: str) -> None:
        """Run ``check(loaded, where)``; record its ``ScenarioError``."""
        if self.full:
            return
        seen = self.view(loaded)
        try:
            check(seen, where)
        except _Blocked:
            pass
        except ScenarioError as error:
            self.add(error)
        except Exception:
            if seen is loaded:  # no refusal before: an error as it always was
                raise
            # else the check read what an earlier refusal left meaningless: skipped

    def absent(self, spec, name: str) -> bool:
        """Section ``name`` is missing from the scenario, and not because it was refused
        or misspelled (``[strem]``: the unknown section's refusal says it)."""
        if name in self.refused or name in self.claimed:
            return False
        return getattr(spec, name) is None

    def position(self, error: ScenarioError) -> tuple:
        """Where ``error``'s key is in the file: its sections' and keys' order there (an
        absent key after its section's keys; no key: last)."""
        if error.field is None:
            return (float("inf"),)
        try:
            node = parsed_toml(self.text)
        except tomllib.TOMLDecodeError:
            return (float("inf"),)
        place: list[float] = []
        for part in _key_parts(error.field):
            if isinstance(node, dict) and isinstance(part, str):
                keys = list(node)
                place.append(keys.index(part) if part in keys else len(keys))
                node = node.get(part)
            elif isinstance(node, list) and isinstance(part, int):
                place.append(part)
                node = node[part] if part < len(node) else None
            else:
                break
        return tuple(place)

    def raise_any(self) -> None:
        """Raise the first refusal found, carrying all of them (``errors``, ``omitted``)."""
        if not self.errors:
            return
        first, rest = self.errors[0], self.errors[1:]
        ordered = [first, *sorted(rest, key=self.position)]
        first.errors = tuple(ordered[:ERRORS_SHOWN])
        first.omitted = self.counted - len(first.errors)
        raise first


def _validation_error(error: msgspec.ValidationError, where: str, text: str) -> ScenarioError:
    """msgspec's refusal of a key's type or range (or of an unknown key) as the
    ``ScenarioError`` naming the key, helpfully (``explain_invalid``)."""
    key = _path_of(str(error))
    reason = str(error).split(" - at")[0]
    explained = explain_invalid(reason, key, text)
    limit = _validation_limit(reason, explained)
    return ScenarioError(f"{where}{key}: {explained}", limit=limit)


def _pop(raw: dict, parts: list[str]) -> bool:
    """Take the key at ``parts`` out of the parsed TOML ``raw``; False if it is not there."""
    node = raw
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, dict) or parts[-1] not in node:
        return False
    del node[parts[-1]]
    return True


def _near_miss_key(owner: list[str], name: str, raw: dict) -> str | None:
    """The key an unknown key ``name`` of section ``owner`` stands for, as
    ``explain_invalid``'s "did you mean" finds it; None if none."""
    struct = _struct_at(owner, raw)
    if struct is None:
        return None
    names = list(struct.__struct_fields__)
    close = (
        [_ALIASES[name]]
        if name in _ALIASES and _ALIASES[name] in names
        else difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    )
    return ".".join([*owner, close[0]]) if close else None


# the one required section of a scenario: put back (and refused) when it was taken out,
# so that the other sections are still decoded
_PLACEHOLDER = {"scenario": {"name": "refused"}}


def decode_rest(
    first: msgspec.ValidationError, text: str, where: str, found: Refusals
) -> Scenario | None:
    """Record msgspec's refusal ``first`` of ``text`` and every later one, taking each
    refused key out and decoding the rest again; the spec decoded from what is left, or
    None when nothing decodes."""
    original = parsed_toml(text)
    raw = tomllib.loads(text)  # a copy to take keys out of
    error = first
    while not found.full:
        message = str(error)
        at = re.search(r"- at `\$([^`]*)`", message)
        at_parts = _key_parts(at.group(1)) if at else []
        keys: list[str] = []
        for part in at_parts:  # the key holding a refused list item: the list
            if not isinstance(part, str):
                break
            keys.append(part)
        named = re.search(r"field `([^`]*)`", message)
        if "missing required field" in message and named is not None:
            missing = ".".join([*keys, named.group(1)])
            if not found.blocks(missing) and missing not in found.claimed:
                found.add(_validation_error(error, where, text))
            if keys:  # its section cannot be checked without it
                if not _pop(raw, keys):
                    return None
                found.refuse(".".join(keys))
            elif named.group(1) in _PLACEHOLDER and named.group(1) not in raw:
                raw[named.group(1)] = dict(_PLACEHOLDER[named.group(1)])
                found.refuse(named.group(1))
            else:
                return None
        else:
            if "unknown field" in message and named is not None:
                claim = _near_miss_key(keys, named.group(1), original)
                keys = [*keys, named.group(1)]
                if claim is not None:
                    found.claimed.add(claim)
            found.add(_validation_error(error, where, text))
            if not keys or not _pop(raw, keys):
                return None
            found.refuse(".".join(keys))
        try:
            spec = msgspec.convert(
                raw,
                Scenario,
                builtin_types=(datetime.datetime, datetime.date, datetime.time),
                str_keys=True,
            )
        except msgspec.ValidationError as again:
            error = again
            continue
        # a near miss names a key the file does not hold: what reads it reads a default
        for claim in found.claimed:
            if _key_parts(claim) and _raw_value(_key_parts(claim), raw) is _MISSING:
                found.refuse(claim)
        return spec
    return None
