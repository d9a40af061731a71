"""Node labels in two Unicode normal forms (helper U, a new user's session): a contact list
merged from a macOS export ("Jose" + U+0301, NFD) and one typed elsewhere ("José", NFC)
loaded "José" as two nodes, two devices sharing his friends between them (4 devices and
degrees 1 and 1 instead of 3 devices and degree 2). They are one node now; a file whose
labels need no merging loads exactly as before."""

import unicodedata

import numpy as np
from ldpfleet.devices.graphs import load_edge_list

NFC = unicodedata.normalize("NFC", "José")
NFD = unicodedata.normalize("NFD", "José")


def _degrees(graph):
    return {str(label): len(graph.adjacency[i]) for i, label in enumerate(graph.ids)}


def test_one_person_in_two_normal_forms_is_one_node(tmp_path):
    path = tmp_path / "contacts.txt"
    path.write_text(f"{NFC} ana\nana {NFD}\n{NFD} luis\nluis ana\n{NFC} {NFD}\n", "utf-8")
    graph = load_edge_list(path)
    assert graph.n == 3
    assert _degrees(graph) == {NFC: 2, "ana": 2, "luis": 2}


def test_labels_that_need_no_merging_load_as_before(tmp_path):
    path = tmp_path / "plain.txt"
    path.write_text(f"{NFD} ana\nana bob\nbob {NFD}\n", "utf-8")
    graph = load_edge_list(path)
    assert graph.n == 3 and NFD in set(map(str, graph.ids))  # the label as written
    assert list(graph.ids) == sorted(graph.ids)
    assert all(np.all(np.diff(a) > 0) for a in graph.adjacency)
