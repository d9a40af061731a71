"""Helper F's user trial (issue 20): a file of labels with an integer id on one line is
refused naming THAT line (it named line 1, a line of labels, as "not integers")."""

from __future__ import annotations

import pytest
from ldpfleet.devices.graphs import load_edge_list
from ldpfleet.protocol.errors import ParameterError


def test_the_integer_among_labels_is_the_line_named(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("# users\nalice bob\nbob carol\ncarol alice\n2024 alice\n")
    with pytest.raises(ParameterError) as caught:
        load_edge_list(path)
    error = caught.value
    assert error.field == "g.txt" and error.value == "'2024 alice'" and error.limit
    assert error.reason.startswith("line 5: an integer node id '2024' in a file of labels")
    assert "1 of 4 lines hold one" in error.reason and "awk" in error.reason


def test_a_file_mostly_of_integers_still_names_its_first_label_line(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("1 2\n2 3\n3 bob\n4 1\n")
    with pytest.raises(ParameterError, match=r"line 3: node ids must be integers"):
        load_edge_list(path)
    # half and half: the first line that is not all integers, as before
    even = tmp_path / "even.txt"
    even.write_text("a b\n1 2\n")
    with pytest.raises(ParameterError, match=r"line 1: node ids must be integers"):
        load_edge_list(even)


def test_labels_only_still_load(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("alice bob\nbob carol\n")
    assert load_edge_list(path).n == 3
