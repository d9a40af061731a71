"""The scenario file (TOML) schema, its loader, and the plans built from it.

A scenario is validated completely when it is loaded: unknown keys, wrong types and bad
values raise ``ScenarioError`` with one sentence naming the key (``stream.eps``), the
value and the limit; a scenario with several mistakes raises the first found with all of
them in its ``errors``. ``docs/scenarios.md`` documents every key.

This module loads a scenario (``parse_scenario``, ``load_scenario``) and is the public
import path of everything about scenario files; the work is done by modules with one job
each, whose names it re-exports:

- ``schema_sections``: the msgspec structs of the sections (the schema proper) and the
  limits they share (``SEED_MAX``, ``BOUNDS_RULE``, ...);
- ``schema_explain``: msgspec's refusals made helpful (``explain_invalid``, near misses);
- ``schema_errors``: ``ScenarioError`` and the key, value and limit a refusal names;
- ``schema_loaded``: ``LoadedScenario`` (the plans built from a scenario) and
  ``resolve_data_path``;
- ``schema_checks``, ``schema_gcdp_checks``, ``schema_cadr_checks``: the checks on load
  beyond types and ranges (stream stage; ``[gcdp]``; CADR-LDP), with ``schema_graph``;
- ``schema_collect``: every refusal at once (``Refusals``: decoding again without each
  refused key; the checks that do not read a refused key), raised as one
  ``ScenarioError`` with ``errors``.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import msgspec
from ldpfleet.collector.reconstruct import compatible
from ldpfleet.devices.sources import SourceError
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.builtin import find_scenario
from ldpfleet.scenarios.schema_cadr_checks import (
    _check_cadr_sections,
    _check_graph_source,
)
from ldpfleet.scenarios.schema_checks import (
    CLIP_FIELDS,
    FAULTS_CHECKS,
    SECAGG_FIELDS,
    _check_batch_length,
    _check_bulk_sections,
    _check_bulk_source,
    _check_bulk_stream,
    _check_collector,
    _check_cpr,
    _check_finite_value,
    _check_full_graph,
    _check_mechanism,
    _check_mechanism_name,
    _check_plugin,
    _check_secagg_session,
    _check_secure_sum,
    _check_source_bounds,
    _check_stream_lengths,
    _check_window_length,
)
from ldpfleet.scenarios.schema_collect import (
    Refusals,
    _Blocked,
    _validation_error,
    decode_rest,
    refused_already,
    unless_refused,
)
from ldpfleet.scenarios.schema_errors import (
    _LEADING_KEY,
    _SOURCE_RULES,
    ScenarioError,
    _mechanism_name_rule,
    _name_the_field,
    _reconstruct_rule,
    _schema_rule,
    _section_key_of,
    _source_rule,
    _stated_limit,
    _stream_rule,
    _validation_limit,
)
from ldpfleet.scenarios.schema_explain import (
    _ALIASES,
    _MISSING,
    _PARAMETER_WORDS,
    _allowed_values,
    _builtin_near_miss,
    _field_type,
    _key_parts,
    _near_miss,
    _parameter_hint,
    _path_of,
    _raw_value,
    _struct_at,
    _top_level_key,
    explain_invalid,
)
from ldpfleet.scenarios.schema_gcdp_checks import (
    _check_gcdp,
    _check_gcdp_rows,
    _check_gcdp_source_kind,
    _refuse_sensor_ids,
)
from ldpfleet.scenarios.schema_graph import broker_url_problem
from ldpfleet.scenarios.schema_loaded import (
    LoadedScenario,
    _inside_data,
    _looked_in,
    resolve_data_path,
)
from ldpfleet.scenarios.schema_sections import (
    BOUNDS_RULE,
    BROKER_URL_RULE,
    DEVICE_CONNECTIONS_AUTO_MAX,
    SEED_MAX,
    SHARD_AUTO_DEVICES,
    BrokerSection,
    CadrSection,
    CollectorSection,
    CprSection,
    CsvSource,
    FaultsSection,
    FleetSection,
    GcdpSection,
    GraphSection,
    Ident,
    Period,
    PeriodicSource,
    Positive,
    PrivacySection,
    Scenario,
    ScenarioMeta,
    SecureSumSection,
    StreamSection,
    SyntheticSource,
    _on_load,
    _Section,
)

# the public names: defined here or in the modules this one gathers
__all__ = [
    "BOUNDS_RULE",
    "BROKER_URL_RULE",
    "CLIP_FIELDS",
    "DEVICE_CONNECTIONS_AUTO_MAX",
    "SECAGG_FIELDS",
    "SEED_MAX",
    "SHARD_AUTO_DEVICES",
    "BrokerSection",
    "CadrSection",
    "CollectorSection",
    "CprSection",
    "CsvSource",
    "FaultsSection",
    "FleetSection",
    "GcdpSection",
    "GraphSection",
    "Ident",
    "LoadedScenario",
    "Period",
    "PeriodicSource",
    "Positive",
    "PrivacySection",
    "Scenario",
    "ScenarioError",
    "ScenarioMeta",
    "SecureSumSection",
    "StreamSection",
    "SyntheticSource",
    "explain_invalid",
    "load_scenario",
    "parse_scenario",
    "resolve_data_path",
]
# names private to the one-module schema this was, kept importable from here (a test
# imports ``_check_full_graph``); none is a seam: patch a name where it is defined
__all__ += [
    "_ALIASES",
    "_LEADING_KEY",
    "_MISSING",
    "_PARAMETER_WORDS",
    "_SOURCE_RULES",
    "_Section",
    "_allowed_values",
    "_builtin_near_miss",
    "_check_collector",
    "_check_full_graph",
    "_check_gcdp",
    "_check_gcdp_rows",
    "_check_graph_source",
    "_check_mechanism",
    "_check_plugin",
    "_check_secagg_session",
    "_check_source_bounds",
    "_check_stream_lengths",
    "_field_type",
    "_inside_data",
    "_key_parts",
    "_looked_in",
    "_mechanism_name_rule",
    "_name_the_field",
    "_near_miss",
    "_on_load",
    "_parameter_hint",
    "_parse_scenario",
    "_path_of",
    "_raw_value",
    "_reconstruct_rule",
    "_refuse_sensor_ids",
    "_schema_rule",
    "_section_key_of",
    "_source_rule",
    "_stated_limit",
    "_stream_rule",
    "_struct_at",
    "_top_level_key",
    "_validation_limit",
]


def parse_scenario(text: str, path: Path | None = None) -> LoadedScenario:
    """Validate scenario TOML text; ``ScenarioError`` says which key is wrong and why (in
    its message, and as ``field``, ``value`` and ``limit``: ``_name_the_field``). A text
    with several mistakes raises the first found with every one in its ``errors``
    (``scenarios.schema_collect``)."""
    where = f"{path}: " if path else ""
    found = Refusals(text if isinstance(text, str) else "", where)
    try:
        loaded = _parse_scenario(text, path, where, found)
    except ScenarioError as error:  # a refusal nothing can be checked after (not TOML)
        _name_the_field(error, where, text if isinstance(text, str) else "")
        raise
    found.raise_any()
    return loaded


def _parse_scenario(
    text: str, path: Path | None, where: str, found: Refusals
) -> LoadedScenario | None:
    """``parse_scenario``'s checks, in order: each refusal is recorded in ``found`` and the
    checks it leaves meaningful go on (None: nothing decoded)."""
    spec = _decode(text, where, found)
    if spec is None:
        return None
    loaded = LoadedScenario(spec, path, text)
    for check in _spec_checks():
        found.run(check, loaded, where)
    if _is_cadr(spec, found):
        for check in (_check_cadr_sections, _check_graph_source):
            found.run(check, loaded, where)
        return loaded
    found.run(lambda _loaded, _where: _check_sections(spec, found, where), loaded, where)
    for check in _STREAM_CHECKS:
        found.run(check, loaded, where)
    return loaded


def _spec_checks() -> list:
    """The checks every scenario passes after decoding: each number finite (one check per
    key), the broker URL."""
    checks = [
        functools.partial(_check_finite_key, section=section, name=name)
        for section, struct in _section_structs()
        for name in struct.__struct_fields__
    ]
    return [*checks, _check_broker_url]


@functools.cache
def _section_structs() -> tuple[tuple[str, type], ...]:
    """(section, struct) of every section struct, in ``Scenario``'s order (the order the
    finiteness checks run in, ``_spec_checks``)."""
    pairs = []
    for section in Scenario.__struct_fields__:
        for struct in _field_type(Scenario, section):
            if isinstance(struct, type) and issubclass(struct, _Section):
                pairs.append((section, struct))
    return tuple(pairs)


def _check_finite_key(loaded: LoadedScenario, where: str, *, section: str, name: str) -> None:
    """``_check_finite_value`` for key ``section.name`` (when the section is of a struct
    that has it: ``[source]``'s kinds differ)."""
    value = getattr(loaded.spec, section)
    if isinstance(value, _Section) and name in value.__class__.__struct_fields__:
        _check_finite_value(section, name, getattr(value, name), where)


def _check_broker_url(loaded: LoadedScenario, where: str) -> None:
    url_problem = broker_url_problem(loaded.spec.broker.url)
    if url_problem is not None:
        raise ScenarioError(f"{where}broker.url: {url_problem}", limit=BROKER_URL_RULE)


def _is_cadr(spec: Scenario, found: Refusals) -> bool:
    """A CADR-LDP scenario: it has ``[graph]`` or ``[cadr]``, even one refused."""
    refused = {_key_parts(path)[0] for path in found.refused if _key_parts(path)}
    return spec.cadr is not None or spec.graph is not None or bool(refused & {"cadr", "graph"})


def _decode(text: str, where: str, found: Refusals | None = None) -> Scenario | None:
    """The scenario TOML ``text`` decoded into the schema's structs: msgspec's refusal of
    a key's type or range, or of the TOML, made a ``ScenarioError``. With ``found``, a
    refusal of a key's type or range is recorded there and the rest decoded without that
    key (``schema_collect.decode_rest``; None: nothing decodes)."""
    if not isinstance(text, str):  # a Path was "'PosixPath' object has no attribute 'encode'"
        raise ScenarioError(
            f"{where}parse_scenario takes the scenario's TOML text (a str), got "
            f"{type(text).__name__} {text!r:.60}; for a file or a built-in name use "
            "load_scenario(path_or_name)",
            limit="TOML text (a str)",
        )
    try:
        spec = msgspec.toml.decode(text.encode(), type=Scenario)
    except msgspec.ValidationError as error:
        if found is not None:
            return decode_rest(error, text, where, found)
        raise _validation_error(error, where, text) from None
    except msgspec.DecodeError as error:
        shown = _toml_error_line(str(error), text)
        raise ScenarioError(f"{where}not valid TOML: {shown}", limit="valid TOML") from None
    return spec


def _toml_error_line(error: str, text: str) -> str:
    """The TOML parser's refusal with the line it points at: ``Cannot overwrite a value
    (at line 4, column 9)`` named neither the key set twice nor the line's text."""
    found = re.search(r"\(at line (\d+), column \d+\)", error)
    lines = text.splitlines()
    if found is None or not 1 <= int(found.group(1)) <= len(lines):
        return error
    line = lines[int(found.group(1)) - 1].strip()
    if not line or len(line) > 120:
        return error
    shown = f"{error}: `{line}`"
    if error.startswith("Cannot overwrite a value"):
        key = line.split("=", 1)[0].strip()
        shown += f" (`{key}` is set twice in its table)" if "=" in line else " (set twice)"
    return shown


def _check_sections(spec: Scenario, found: Refusals, where: str) -> None:
    """A stream scenario has [fleet], [stream] and [source]: the first missing is refused
    (not one refused already, or misspelled: its own refusal says it), and every missing
    one is marked refused, so that the checks reading it are skipped."""
    missing = [name for name in ("fleet", "stream", "source") if found.absent(spec, name)]
    for name in ("fleet", "stream", "source"):  # the first missing: by its refusal
        if name not in missing[:1] and getattr(spec, name) is None:
            found.refuse(name)
    if missing:
        raise ScenarioError(
            f"{where}{missing[0]}: a stream scenario needs [fleet], [stream] and [source] "
            "(a CADR-LDP scenario needs [graph] and [cadr] instead)",
            limit="required: [fleet], [stream] and [source]",
        )


def _check_mechanism_step(loaded: LoadedScenario, where: str) -> None:
    """``_check_mechanism``; once a refusal is recorded, a plugin is checked by its name and
    budget only, its module not imported: user code runs only for a scenario nothing was
    refused in before this check (as when the first refusal stopped the load). With
    ``stream.eps`` or ``stream.w`` refused, the mechanism's name is still checked
    (``_check_mechanism_name``): it does not depend on them."""
    try:
        _check_mechanism(loaded.spec, where, resolve=not refused_already(loaded))
    except _Blocked:
        _check_mechanism_name(loaded.spec.stream.mechanism, where)
        raise


def _check_stream_config(loaded: LoadedScenario, where: str) -> None:
    try:
        loaded.stream_config("check")
    except ParameterError as error:
        limit = _stream_rule(error.field)
        raise ScenarioError(f"{where}stream.{error.field}: {error.reason}", limit=limit) from None


def _check_faults_part(loaded: LoadedScenario, where: str, *, part: int) -> None:
    """Check ``part`` of ``[faults]``'s checks (``FAULTS_CHECKS``), with ``[faults]``."""
    if loaded.spec.faults is not None:
        FAULTS_CHECKS[part](loaded.spec, where)


def _check_secure_sum_if_any(loaded: LoadedScenario, where: str) -> None:
    if loaded.spec.secure_sum is not None:
        _check_secure_sum(loaded, where)


def _check_bulk_part(loaded: LoadedScenario, where: str, *, part: int) -> None:
    """Part ``part`` of the bulk checks (``_check_bulk_stream``, ``_check_bulk_sections``,
    ``_check_bulk_source``), for ``fleet.connection = "bulk"``: refused on load, naming
    the key, the limit and the value, is everything bulk gateways cannot do
    (docs/scenario-reference.md, "Bulk gateways")."""
    if loaded.spec.fleet.connection != "bulk":
        return
    if part == 0:
        _check_bulk_stream(loaded, where)
    elif part == 1:
        _check_bulk_sections(loaded.spec, where)
    else:
        _check_bulk_source(loaded.spec.source, where)


def _check_trace(loaded: LoadedScenario, where: str) -> None:
    spec = loaded.spec
    if spec.fleet.connection != "bulk" and spec.collector.trace == "none":
        raise ScenarioError(
            f'{where}collector.trace: "none" (no trace recorder) is only for fleet.connection '
            f'= "bulk"; every other run records its trace ("all" or "control"), got "none"',
            limit='one of "all", "control" (unless fleet.connection = "bulk")',
        )


def _check_reconstruct(loaded: LoadedScenario, where: str) -> None:
    stream = loaded.spec.stream
    if not compatible(stream.reconstruct, stream.mechanism):
        raise ScenarioError(
            f"{where}stream.reconstruct: {stream.reconstruct!r} cannot reconstruct "
            f"{stream.mechanism!r} reports (cpr/sw/sw_moving/sw_filter need sw or sw01; "
            "laplace needs laplace)",
            limit=_reconstruct_rule(stream.mechanism),
        )


def _check_source(loaded: LoadedScenario, where: str) -> None:
    spec = loaded.spec
    try:
        loaded.source_spec()
    except SourceError as error:
        looked = _looked_in(spec.source.path, loaded.path) if "not found" in str(error) else ""
        # a DecimalMarkError carries its own limit (a NumPy file: "'.' for a NumPy file")
        limit = getattr(error, "limit", None) or _source_rule(spec.source.__class__, error.field)
        raise ScenarioError(f"{where}{error}{looked}", limit=limit) from None


def _check_gcdp_if_any(loaded: LoadedScenario, where: str) -> None:
    """``[gcdp]``'s checks; of a ``[gcdp]`` refused whole (its required key refused or
    missing, or the section misspelled), the one that does not read it: a csv source."""
    gcdp = unless_refused(lambda: loaded.spec.gcdp, otherwise=_REFUSED_WHOLE)
    if gcdp is _REFUSED_WHOLE:
        _check_gcdp_source_kind(loaded.spec, where)
    elif gcdp is not None:
        _check_gcdp(loaded, where)


# a section refused whole, as ``_check_gcdp_if_any`` reads it
_REFUSED_WHOLE = object()


# the checks of a stream scenario after its sections (``_check_sections``), in order: each
# ``(loaded, where)``, each raising its refusal (``Refusals.run`` records it and goes on)
_STREAM_CHECKS = (
    lambda loaded, where: _check_source_bounds(loaded.spec, where),
    _check_mechanism_step,
    _check_stream_config,
    lambda loaded, where: _check_collector(loaded.spec.collector, where),
    lambda loaded, where: _check_cpr(loaded.spec, where),
    *(functools.partial(_check_faults_part, part=part) for part in range(len(FAULTS_CHECKS))),
    _check_secure_sum_if_any,
    functools.partial(_check_bulk_part, part=0),
    functools.partial(_check_bulk_part, part=1),
    functools.partial(_check_bulk_part, part=2),
    _check_trace,
    _check_reconstruct,
    _check_source,
    _check_gcdp_if_any,
    # after [gcdp]'s own window rule
    lambda loaded, where: _check_batch_length(loaded.spec.stream, where),
    lambda loaded, where: _check_window_length(loaded.spec.stream, where),
)


def load_scenario(path: str | Path) -> LoadedScenario:
    """Read and validate a scenario file, or the built-in scenario of that name
    (``quickstart``; ``ldpfleet scenarios`` lists them)."""
    path = find_scenario(path)
    if not path.exists():
        raise ScenarioError(
            f"scenario file {path} does not exist{_builtin_near_miss(path)} (`ldpfleet "
            "scenarios` lists the built-in ones, which run by name: `ldpfleet run quickstart`)",
            limit="an existing file or a built-in scenario's name",
        )
    if not path.is_file():
        raise ScenarioError(
            f"{path} is a directory, not a scenario file (a .toml file)",
            limit="a file, not a directory",
        )
    from ldpfleet.devices.text_decode import broken_utf16_reason, decode_text

    try:
        # UTF-8 (a Windows byte-order mark dropped) or UTF-16 (PowerShell's `>`, Notepad's
        # "Unicode"), as the CSV and edge-list readers: UTF-16 was "not UTF-8 (byte 0xff)"
        text = decode_text(path.read_bytes())
    except UnicodeDecodeError as exc:
        broken = broken_utf16_reason(exc)
        if broken is not None:
            raise ScenarioError(
                f"scenario file {path} cannot be read: it {broken}",
                limit="a readable UTF-8 file",
            ) from None
        raw = exc.object[: exc.start]
        line = raw.count(b"\n") + 1
        column = len(raw[raw.rfind(b"\n") + 1 :].decode("utf-8", "replace")) + 1
        raise ScenarioError(
            f"scenario file {path} cannot be read: it is not UTF-8 text (byte "
            f"{exc.object[exc.start]:#04x} at line {line}, column {column}); save it as UTF-8",
            limit="a readable UTF-8 file",
        ) from None
    except OSError as exc:
        raise ScenarioError(
            f"scenario file {path} cannot be read: {exc}", limit="a readable UTF-8 file"
        ) from None
    return parse_scenario(text, path)
