"""Helper R's review (round 4): merging node labels that differ only in their Unicode
normal form (``devices.graphs._same_labels``) rewrites EVERY label of the file to NFC as
soon as one pair merges, not only the merged ones. ``Graph.ids[i]`` is documented as "the
label node i had in the source", and results.json's ``node_id`` is that id: a label such as
"Zoë" written in NFD (a macOS export) that has no twin in the file comes back as the NFC
string, which prints alike but no longer equals the file's text, so a user joining the
results to the file by label loses that node. A label that merged nothing must stay as
written (tests/unit/test_U_graph_label_forms.py pins that only for files without merges)."""

import unicodedata

from ldpfleet.devices.graphs import load_edge_list

JOSE_NFC = unicodedata.normalize("NFC", "José")
JOSE_NFD = unicodedata.normalize("NFD", "José")
ZOE_NFD = unicodedata.normalize("NFD", "Zoë")  # no other spelling of Zoë in the file


def test_a_label_that_merged_nothing_keeps_its_spelling(tmp_path):
    path = tmp_path / "contacts.txt"
    path.write_text(f"{JOSE_NFC} ana\nana {JOSE_NFD}\n{ZOE_NFD} ana\n", "utf-8")
    graph = load_edge_list(path)
    labels = [str(label) for label in graph.ids]
    assert graph.n == 3  # José merged
    assert ZOE_NFD in labels, [label.encode() for label in labels]
