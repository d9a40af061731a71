"""A researcher's own contact graph (helper Q): node ids are names (``user_17``,
``alice``), as networkx's ``read_edgelist`` and most exports write them. They were refused
on line 3 with "(a header row of column names? ...)", a hint about a line that is not a
header. Now a file whose every id is a label loads (labels relabelled in sorted order);
a file mixing integer ids and labels is still refused (a typo), and a header row over
labelled edges is refused instead of becoming an edge."""

from __future__ import annotations

import pytest
from ldpfleet.devices.graphs import load_edge_list
from ldpfleet.protocol.errors import ParameterError

BODY = (
    b"# my lab's contacts\n"
    b"alice\tbob\n"
    b"bob carol\n"
    b"carol alice\n"
    b"carol carol\n"  # self loop: dropped, carol stays
    b"bob alice\n"  # the reverse arc: one edge
    b"alice bob\n"  # a duplicate
    b"island_x island_y\n"  # a disconnected part
)


def _load(tmp_path, body, name="g.txt"):
    path = tmp_path / name
    path.write_bytes(body)
    return load_edge_list(path)


def test_label_ids_load_like_integer_ids(tmp_path):
    graph = _load(tmp_path, BODY)
    assert graph.n == 5 and graph.edges() == 4
    assert list(graph.ids) == ["alice", "bob", "carol", "island_x", "island_y"]
    assert sorted(graph.neighbours(0).tolist()) == [1, 2]  # alice - bob, carol
    assert graph.neighbours(3).tolist() == [4]


def test_label_ids_match_the_integer_version(tmp_path):
    relabelled = BODY
    for k, label in enumerate([b"alice", b"bob", b"carol", b"island_x", b"island_y"]):
        relabelled = relabelled.replace(label, str(10 + k).encode())
    a, b = _load(tmp_path, BODY), _load(tmp_path, relabelled, "int.txt")
    assert sorted(map(tuple, a.edge_array().tolist())) == sorted(
        map(tuple, b.edge_array().tolist())
    )


@pytest.mark.parametrize("header", [b"source target\n", b"Source\tTarget\n", b"from to\n"])
def test_a_header_row_over_labels_is_refused(tmp_path, header):
    with pytest.raises(ParameterError) as info:
        _load(tmp_path, b"# x\n" + header + BODY)
    message = str(info.value)
    assert "line 2" in message and "header row" in message, message


@pytest.mark.parametrize("body", [b"1 2\nalice bob\n", b"1 x\n", b"alice bob\n2 3\n"])
def test_mixing_integer_ids_and_labels_is_refused(tmp_path, body):
    with pytest.raises(ParameterError) as info:
        _load(tmp_path, body)
    assert "node ids must be integers" in str(info.value)
    assert "labels (alice bob) are node ids only when no id of the file is an integer" in str(
        info.value
    )


def test_a_comment_at_the_end_of_a_line_is_a_comment(tmp_path):
    """``1 2  # friends`` was refused as "the 3rd and 4th columns look like a weight and a
    timestamp (KONECT)"; networkx's read_edgelist, which writes and reads such files,
    treats ``#`` anywhere as the start of a comment."""
    graph = _load(tmp_path, b"# header\n1 2  # friends\n2\t3# colleagues\n")
    assert graph.n == 3 and graph.edges() == 2
    labelled = _load(tmp_path, b"alice bob # met 2019\nbob carol\n", "l.txt")
    assert list(labelled.ids) == ["alice", "bob", "carol"]


def test_a_bad_line_with_a_comment_is_still_named(tmp_path):
    with pytest.raises(ParameterError) as info:
        _load(tmp_path, b"1 2\n1 2 0.5 # weighted\n")
    assert "line 2: expected two node ids" in str(info.value), str(info.value)


def test_an_excel_workbook_is_named_as_one(tmp_path):
    """An .xlsx was "a zip archive ... extract the edge list from it (... KONECT's is
    out.NAME)"."""
    import zipfile

    book = tmp_path / "edges.xlsx"
    with zipfile.ZipFile(book, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("xl/worksheets/sheet1.xml", "<sheet/>")
    with pytest.raises(ParameterError) as info:
        load_edge_list(book)
    message = str(info.value)
    assert "Excel workbook" in message and "KONECT" not in message, message
