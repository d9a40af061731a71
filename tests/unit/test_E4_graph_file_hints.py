"""An edge list's refusal points at the real problem (helper E's user trial, round 4).

Found: an edge list of labels saved as CSV (``alice,bob`` / ``bob,carol``: pandas'
``to_csv``, a spreadsheet) was refused as "a header row of column names? delete it",
and so was networkx's ``write_edgelist`` of labelled edges with attributes (``alice bob
{"weight": 2}``): deleting line 1 only moved the refusal to line 2. Now each names the
separator, or the networkx edge data, with the command that fixes the file; a CSV with a
real header row (``source,target``) says both.
"""

from __future__ import annotations

import pytest
from ldpfleet.devices.graphs import load_edge_list
from ldpfleet.protocol.errors import ParameterError


@pytest.mark.parametrize(
    ("content", "says", "not_said"),
    [
        (b"alice,bob\nbob,carol\n", "not commas or semicolons: e.g. tr ',;'", "header row"),
        (b"alice;bob\nbob;carol\n", "not commas or semicolons", "header row"),
        (b"0,1\n1,2\n", "(ids are separated by spaces", "header row"),
        (b"source,target\nalice,bob\n", "a header row of column names? delete it", "isolated"),
        (b'alice bob {"weight": 2}\nbob carol {"weight": 1}\n', "networkx edge data", "header"),
        (b"1 2 {'weight': 0.5}\n", "data=False", "header"),
    ],
)
def test_the_refusal_names_the_separator_or_the_edge_data(tmp_path, content, says, not_said):
    path = tmp_path / "g.csv"
    path.write_bytes(content)
    with pytest.raises(ParameterError) as refused:
        load_edge_list(path)
    message = str(refused.value)
    assert says in message and not_said not in message, message
    assert refused.value.field == "g.csv" and refused.value.value is not None


def test_a_header_row_over_space_separated_edges_is_still_named(tmp_path):
    path = tmp_path / "g.txt"
    path.write_bytes(b"source,target\n1 2\n")
    with pytest.raises(ParameterError) as refused:
        load_edge_list(path)
    assert "a header row of column names?" in str(refused.value)
