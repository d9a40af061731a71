"""The checks a ``[gcdp]`` scenario passes on load: a csv source, a window the stream
fills, and a public calibration file laid out like the fleet's (its columns, its label
column of 0 and 1, its records in date order; for the "rows" layout a row per node and no
sensor-id column or header of time-step numbers read as data).
"""

from __future__ import annotations

import json
from pathlib import Path

from ldpfleet.collector.gcdp.evaluation import check_date_order
from ldpfleet.devices.sources import (
    CsvSpec,
    SourceError,
    closest_name,
    column_name,
    dropped_columns,
    table_columns,
)
from ldpfleet.protocol.messages import MAX_RELEASE
from ldpfleet.scenarios.schema_errors import ScenarioError
from ldpfleet.scenarios.schema_loaded import LoadedScenario, _looked_in, resolve_data_path
from ldpfleet.scenarios.schema_sections import CsvSource, GcdpSection


def _check_gcdp(loaded: LoadedScenario, where: str) -> None:
    """``[gcdp]``: a csv source (layout "column", or "rows": one node per row), at least one
    window, a readable calibration file laid out like the fleet (the fleet's columns and the
    utility column; in the "rows" layout a row per node)."""

    spec = loaded.spec
    section = spec.gcdp
    _check_gcdp_source_kind(spec, where)
    if spec.fleet.devices > MAX_RELEASE:
        raise ScenarioError(
            f"{where}fleet.devices: a GC-DP release has one coordinate per device, at most "
            f"{MAX_RELEASE}; got {spec.fleet.devices}",
            limit=f"<= {MAX_RELEASE} with [gcdp]",
        )
    if spec.stream.steps < section.window:
        raise ScenarioError(
            f"{where}gcdp.window: {section.window} exceeds stream.steps ({spec.stream.steps}); "
            "no window would be released",
            limit=f"<= stream.steps ({spec.stream.steps})",
        )
    if section.utility_column is not None and spec.source.missing == "drop":
        raise ScenarioError(
            f'{where}source.missing: "drop" removes the calibration file\'s time steps with a '
            "gap from the channels but not from gcdp.utility_column's labels, which would no "
            'longer line up; use "previous" or "interpolate"',
            limit='one of "refuse", "previous", "interpolate" with gcdp.utility_column',
        )
    try:
        calibration = loaded.calibration_spec()
    except SourceError as error:  # the file itself, or a setting of the fleet's source
        whose = "" if error.field == "source.path" else f" ({error.field} of the fleet)"
        if error.field == "source.path" and "not found" in error.reason:
            # where it was looked for, as source.path's refusal says
            whose = _looked_in(section.calibration_path, loaded.path)
        raise ScenarioError(
            f"{where}gcdp.calibration_path: {error.reason}{whose}",
            limit="a readable data file laid out like the fleet's source",
        ) from None
    source_path = resolve_data_path(spec.source.path, loaded.path)  # as the devices read it
    if _same_file(source_path, calibration.path):  # eps_cal = 0 needs PUBLIC calibration data
        raise ScenarioError(
            f"{where}gcdp.calibration_path: {section.calibration_path} is the fleet's own "
            "source.path: the calibration is public (eps_cal = 0) and must not read the "
            "protected readings; give a separate public file",
            limit="a public file other than source.path",
            value=section.calibration_path,
        )
    for field, path in (("source.path", source_path), ("gcdp.calibration_path", calibration.path)):
        try:  # windows are consecutive records: a shuffled file averaged unrelated minutes
            check_date_order(path)
        except ValueError as error:
            raise ScenarioError(f"{where}{field}: {error}", limit="records in date order") from None
    if spec.source.layout == "rows":
        _check_gcdp_rows(loaded, calibration, where)
    names, _ = table_columns(calibration.path, calibration.header, calibration.decimal)
    _check_calibration_steps(section, calibration, where)
    if section.utility_column is not None:
        _check_utility_column(section, calibration, names, where)


def _check_gcdp_source_kind(spec, where: str) -> None:
    """A scenario with ``[gcdp]`` (one refused too: ``scenarios.schema``) streams from a
    csv file."""
    if not isinstance(spec.source, CsvSource):
        raise ScenarioError(
            f"{where}source.kind: [gcdp] calibrates on a data file laid out like the fleet: "
            'needs kind = "csv" (layout = "column": a column per channel, or "rows": a row '
            "per node)",
            limit='"csv" with [gcdp]',
        )


def _check_calibration_steps(section: GcdpSection, calibration: CsvSpec, where: str) -> None:
    """``gcdp.calibration_steps`` (default: the file's records) within the calibration
    file's records and at least ``max(window, 8)``."""
    from ldpfleet.devices.sources import replay_cycles

    records = replay_cycles(calibration, 1)["records"]
    length = section.calibration_steps or records
    if length > records:  # a cycled public file adds no information, only M x length floats
        raise ScenarioError(
            f"{where}gcdp.calibration_steps: {calibration.path} holds {records} records "
            f"(time steps) per node; more would replay them again, adding nothing but memory "
            f"(devices x steps values): need at most {records}, got {length}",
            limit=f"<= {records} (the calibration file's records)",
        )
    if length < max(section.window, 8):
        raise ScenarioError(
            f"{where}gcdp.calibration_steps: need at least max(window, 8) = "
            f"{max(section.window, 8)} calibration records, got {length}",
            limit=f">= max(window, 8) = {max(section.window, 8)}",
        )


def _check_utility_column(
    section: GcdpSection, calibration: CsvSpec, names: list[str], where: str
) -> None:
    """``gcdp.utility_column``: a numeric column of the calibration file (``names``), with
    a label of 0 or 1 on every row; matched as every column name is (``column_name``:
    Unicode normal form, spaces around it), refused with ``source.column``'s "did you
    mean" hint (``closest_name``)."""
    column = column_name(section.utility_column, names)
    if column not in names:
        dropped = dropped_columns(calibration.path, calibration.header, calibration.decimal)
        if column in dropped:  # there, but not numbers ("yes" / "no")
            value, line, _ = dropped[column]
            raise ScenarioError(
                f"{where}gcdp.utility_column: {section.utility_column!r} of "
                f"{calibration.path} holds {value!r} on line {line}: the labels must be the "
                "numbers 0 and 1 (recode the column)",
                limit="a column of the numbers 0 and 1",
            )
        raise ScenarioError(
            f"{where}gcdp.utility_column: {section.utility_column!r} is not a column of "
            f"{calibration.path}{closest_name(section.utility_column, names)} "
            f"(columns: {', '.join(names)})",
            limit=f"one of {', '.join(json.dumps(n) for n in names)}",
        )
    try:  # every value of the label column must be a number (the others' are checked)
        CsvSpec(
            calibration.path,
            column,
            header=calibration.header,
            decimal=calibration.decimal,
        )
    except SourceError as error:
        reason = error.reason
        if reason.startswith("missing value ") and ": set source.missing" in reason:
            # source.missing fills the channels, never the labels (the refusal's hint
            # named a setting that does not apply to this column)
            reason = (
                reason.split(": set source.missing", 1)[0] + ": the labels are never "
                "filled (source.missing applies to the channels): give every "
                "calibration row its label, or remove the row from the file"
            )
        raise ScenarioError(
            f"{where}gcdp.utility_column: {reason}",
            limit="a column of the numbers 0 and 1, on every row",
        ) from None


def _check_gcdp_rows(loaded: LoadedScenario, calibration: CsvSpec, where: str) -> None:
    """``[gcdp]`` over a "rows" source: node i is row i of ``source.path`` and is
    calibrated on row i of ``gcdp.calibration_path`` (the same sensor in the same order), so
    each file needs a row per device; the rows hold no time-aligned label column and are
    replayed from their first value (no calibration stride)."""
    spec, section = loaded.spec, loaded.spec.gcdp
    devices = spec.fleet.devices
    if section.utility_column is not None:
        raise ScenarioError(
            f'{where}gcdp.utility_column: a "rows" file (a row per node) has no label column '
            f"lined up with its time steps; got {section.utility_column!r}: leave it unset "
            '(mu = 1) or use layout = "column" with the labels as a column',
            limit='unset with source.layout = "rows"',
        )
    if section.calibration_stride:
        raise ScenarioError(
            f'{where}gcdp.calibration_stride: the "rows" layout replays each row from its '
            f"first value, so a stride would be ignored; need 0, got {section.calibration_stride}",
            limit='0 with source.layout = "rows"',
        )
    source = loaded.source_spec()
    for field, spec in (("source.path", source), ("gcdp.calibration_path", calibration)):
        rows = table_columns(spec.path, spec.header, spec.decimal)[1]
        if rows < devices:
            field = "fleet.devices" if field == "source.path" else field
            raise ScenarioError(
                f'{where}{field}: {spec.path} has {rows} rows and the "rows" layout makes '
                f"row i node i, so at most {rows} devices (a device past the last row would "
                f"replay another node's row); got fleet.devices = {devices}",
                limit=f"fleet.devices <= {rows} (the file's rows)",
            )
        _refuse_sensor_ids(spec, min(rows, devices), f"{where}{field}")


def _refuse_sensor_ids(spec: CsvSpec, rows: int, where: str) -> None:
    """A "rows" file whose first column numbers its first ``rows`` rows (the nodes':
    0..n-1 or 1..n) holds sensor ids, and one whose first row numbers its columns a header
    of time steps detected as data: the layout would replay them as readings. Refused."""
    from ldpfleet.devices.sources import csv_stream, replay_cycles

    def numbered(values: list[float]) -> int | None:
        if len(values) >= 3:  # two values 0, 1 could be readings
            for start in (0, 1):
                if values == [float(start + i) for i in range(len(values))]:
                    return start
        return None

    first = [float(csv_stream(spec, i, rows, 1)[0][0]) for i in range(rows)]
    start = numbered(first)
    if start is not None:
        raise ScenarioError(
            f"{where}: the first column of {spec.path} holds {start}, {start + 1}, ..., "
            f'{start + rows - 1} down its first {rows} rows: a sensor id, which the "rows" '
            "layout would replay as each node's first reading; remove it (for a "
            "comma-separated file: cut -d, -f2- FILE > NEW)",
            limit="no sensor-id column",
        )
    records = replay_cycles(spec, 1)["records"]
    start = numbered([float(v) for v in csv_stream(spec, 0, rows, records)[0]])
    if start is not None:
        raise ScenarioError(
            f"{where}: the first line of {spec.path} holds {start}, {start + 1}, ..., "
            f"{start + records - 1}: a header of time-step numbers, read as data (node 0's "
            "readings); remove the line, or set source.header = true, which applies to "
            "gcdp.calibration_path too (both files then need the header line)",
            limit="no line of time-step numbers read as data",
        )


def _same_file(a, b) -> bool:
    """Whether two resolved data paths name one file (symlinks and spellings included)."""
    try:
        return Path(a).resolve().samefile(Path(b).resolve())
    except OSError:
        return False
