"""Helper G's user trial, round 4 (a new user from the wheel, own data and own mechanisms).

Found: a legacy Excel workbook (.xls) given as a CSV source was refused as "not UTF-8
text (byte 0xd0 on line 1): save it as UTF-8" and a small Parquet file as "has a header
but no data rows" (neither says what the file is); a folder of one file per device as
"is not a regular file"; the "rows" layout's missing-value refusal offered "drop" as
"remove the row" while it removes a column (a time step) of every row; and a plugin's
``perturb`` raising inside ``ldpfleet audit`` (on the audit's canary inputs, not the
load-time grid) was named "perturb failed on inputs in [0, 1]" without the batch.
"""

from __future__ import annotations

import numpy as np
import pytest
from ldpfleet.devices.sources import SourceError, load_table
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanism_contract import contract_reports
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

SCENARIO = """
[scenario]
name = "g-user"
seed = 1
[fleet]
devices = 2
[stream]
steps = 30
eps = 2.0
w = 5
[source]
kind = "csv"
path = "{path}"
bounds = [0.0, 60.0]
{extra}
"""

BINARY = [
    ("book.xls", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + bytes(range(256)) * 4, "Excel 97-2003"),
    ("t.parquet", b"PAR1\x15\x04\x15\x00" + bytes(range(200)) + b"\x00\x00PAR1", "Parquet"),
    ("small.parquet", b"PAR1\x15\x04\x15\x00PAR1", "Parquet"),
    ("cut.parquet", b"PAR1\x15\x04\x15\x00", "Parquet"),
    ("t.h5", b"\x89HDF\r\n\x1a\n" + bytes(64), "HDF5"),
    ("t.db", b"SQLite format 3\x00" + bytes(100), "SQLite"),
    ("t.feather", b"ARROW1\x00\x00" + bytes(64) + b"ARROW1", "Arrow / Feather"),
    ("t.pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n", "PDF"),
]


@pytest.mark.parametrize(("name", "data", "what"), BINARY, ids=[b[0] for b in BINARY])
def test_a_binary_table_format_is_named_with_how_to_convert_it(tmp_path, name, data, what):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(SourceError) as caught:
        load_table(str(path))
    error = caught.value
    assert error.field == "source.path"
    assert str(path) in str(error) and what in str(error), str(error)
    assert "not a CSV or NumPy file" in str(error)
    assert "UTF-8 text" not in str(error) and "no data rows" not in str(error)


def test_a_binary_table_in_a_scenario_is_one_scenario_error(tmp_path):
    path = tmp_path / "book.xls"
    path.write_bytes(BINARY[0][1])
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(SCENARIO.format(path=path, extra=""))
    assert caught.value.field == "source.path"
    assert "Excel 97-2003" in str(caught.value)


def test_text_that_merely_starts_like_a_binary_magic_is_still_csv(tmp_path):
    """Parquet needs "PAR1" at both ends: a CSV whose header is PAR1 stays a CSV."""
    path = tmp_path / "p.csv"
    path.write_text("PAR1,PAR2\n1,2\n3,4\n")
    names, matrix = load_table(str(path))
    assert names == ["PAR1", "PAR2"] and matrix.tolist() == [[1, 2], [3, 4]]
    alone = tmp_path / "q.csv"
    alone.write_text("PAR1\n1\n2\nPAR1")  # (a last line repeating the header is refused)
    with pytest.raises(SourceError) as caught:
        load_table(str(alone))
    assert "Parquet" not in str(caught.value) and "repeat" in str(caught.value)


def test_a_folder_of_per_device_files_is_refused_saying_so(tmp_path):
    folder = tmp_path / "per-device"
    folder.mkdir()
    (folder / "a.csv").write_text("temp\n1\n2\n3\n")
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(SCENARIO.format(path=folder, extra=""))
    message = str(caught.value)
    assert caught.value.field == "source.path"
    assert "is not a regular file but a folder" in message and "join the files into one" in message


def test_the_rows_layout_gap_refusal_says_what_drop_removes(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("1,2,3,,5\n1,2,3,4,5\n")
    extra = 'layout = "rows"\nheader = false'
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(SCENARIO.format(path=path, extra=extra))
    message = str(caught.value)
    assert "missing value '' in column '3' at line 1" in message, message
    assert '"drop" (remove that time step, the column, from every row)' in message
    column = tmp_path / "col.csv"
    column.write_text("temp\n1\n\n3\nNA\n")  # (a blank line is skipped: NA is the gap)
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(SCENARIO.format(path=column, extra=""))
    assert '"drop" (remove the row)' in str(caught.value)


class RaisesAt075:
    """Passes the load-time grid, raises on the audit's canary input 0.75."""

    eps = 1.0

    def __init__(self, eps=1.0):
        self.eps = float(eps)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        if np.any(x == 0.75):
            raise RuntimeError("bad reading")
        return x + rng.random(x.shape)

    def in_domain(self, y):
        return np.ones(np.shape(y), dtype=bool)

    def estimate_mean(self, y):
        return float(np.mean(y)) - 0.5


@pytest.mark.parametrize(
    ("x", "shown"),
    [
        (np.full(8, 0.75), "(on a batch of 8 inputs, all 0.75)"),
        (np.array([0.1, 0.75, 0.9]), "(on a batch of 3 inputs from 0.1 to 0.9)"),
        (np.array([0.75]), "(on a batch of 1 input, all 0.75)"),
        (np.full(1024, 0.75), "(on a batch of 1,024 inputs, all 0.75)"),
    ],
)
def test_a_raising_perturb_names_the_batch_it_raised_on(x, shown):
    with pytest.raises(ParameterError) as caught:
        contract_reports(RaisesAt075(1.0), x, np.random.default_rng(0), "m:RaisesAt075")
    message = str(caught.value)
    assert "perturb failed on inputs in [0, 1]: bad reading " + shown in message, message
    assert caught.value.field == "mechanism"


def test_the_audit_of_a_plugin_raising_on_its_canary_names_the_batch():
    import ldpfleet

    with pytest.raises(ParameterError) as caught:
        ldpfleet.run_audit(RaisesAt075, 1.0, trials=200)
    assert "perturb failed on inputs in [0, 1]: bad reading (on a batch of" in str(caught.value)


class _RR:
    """One-bit randomised response, for the stated-attribute tests below."""

    def __init__(self, eps):
        self._eps = float(eps)

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        bit = rng.random(x.shape) < x
        keep = rng.random(x.shape) < 1 / (1 + np.exp(-self._eps))
        return np.where(keep, bit, ~bit).astype(float)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y == 0.0) | (y == 1.0)

    def estimate_mean(self, y):
        p = 1 / (1 + np.exp(-self._eps))
        return float(np.mean((np.asarray(y, float) - (1 - p)) / (2 * p - 1)))


class EpsPropertyRaises(_RR):
    @property
    def eps(self):
        raise RuntimeError("not ready")


class OutputLowRaises(_RR):
    output_high = 1.0

    @property
    def output_low(self):
        raise KeyError("low")


class EpsProperty(_RR):
    @property
    def eps(self):
        return self._eps


@pytest.mark.parametrize(
    ("cls", "attr", "why"),
    [
        (EpsPropertyRaises, "eps", "not ready"),
        (OutputLowRaises, "output_low", "KeyError: 'low'"),
    ],
)
def test_a_stated_attribute_that_raises_is_one_sentence(cls, attr, why):
    """A property ``eps`` that raised ended ``ldpfleet run`` and ``ldpfleet audit`` in a
    traceback with exit status 1."""
    from ldpfleet.protocol.mechanism_contract import build_mechanism

    with pytest.raises(ParameterError) as caught:
        build_mechanism(cls, 0.5, "m:Cls")
    message = str(caught.value)
    assert caught.value.field == "mechanism"
    assert f"'m:Cls' raised reading its {attr}: {why}" in message, message
    assert caught.value.limit == f"{attr} readable without raising"


def test_an_eps_property_that_answers_is_checked_like_an_attribute():
    from ldpfleet.protocol.mechanism_contract import build_mechanism

    assert build_mechanism(EpsProperty, 0.5, "m:EpsProperty").eps == 0.5
