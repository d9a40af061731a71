"""[source] keys a user writes from pandas or Excel habits get the scenario's word or the
rule (helper E's user trial, round 4): ``decimal_separator`` had no did-you-mean (too far
from ``decimal``), ``delimiter`` / ``sep`` only the list of valid keys, with no word that
the separator is detected."""

from __future__ import annotations

import pytest
from ldpfleet.scenarios.schema_errors import ScenarioError

from ldpfleet.scenario_dict import parse_scenario

TEXT = """
[scenario]
name = "keys"
[fleet]
devices = 2
[stream]
steps = 4
eps = 1.0
w = 2
[source]
kind = "csv"
path = "{path}"
bounds = [0.0, 1.0]
{line}
"""


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('decimal_separator = ","', "did you mean `decimal`?"),
        ('decimal_mark = ","', "did you mean `decimal`?"),
        ('delimiter = ";"', "the field separator is detected, not set"),
        ('sep = ";"', "the field separator is detected, not set"),
        ('encoding = "cp1252"', "the text encoding is detected, not set"),
    ],
)
def test_a_pandas_or_excel_word_gets_the_scenario_key(tmp_path, line, says):
    path = tmp_path / "x.csv"
    path.write_text("a;b\n1;2\n")
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(TEXT.format(path=path.as_posix(), line=line))
    key = line.split(" ")[0]
    assert refused.value.field == f"source.{key}" and says in str(refused.value), refused.value
