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
