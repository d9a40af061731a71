"""Helper R's review (round 4): ``MAX_LISTED_DEVICES`` went from 20,000 to 15,000 (a part
with both lists full no longer fits the codec's 2 MiB), but three docs still say a status
comes in parts of 20,000: DESIGN.md ("``MAX_LISTED_DEVICES`` (20,000)"),
docs/separate-processes.md ("more than 20,000 of either ... the j-th 20,000 of each sorted
list") and docs/reliability.md ("more than 20,000 gone or stopped devices")."""

import re
from pathlib import Path

import pytest
from ldpfleet.protocol.messages import MAX_LISTED_DEVICES

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("doc", ["DESIGN.md", "docs/separate-processes.md", "docs/reliability.md"])
def test_the_docs_state_the_part_size_the_code_uses(doc):
    text = " ".join((ROOT / doc).read_text(encoding="utf-8").split())
    # every sentence about a status sent in parts names the code's size, no other
    sentences = [s for s in re.split(r"(?<=[.;])\s", text) if "in parts" in s]
    assert sentences, doc
    sizes = {int(n.replace(",", "")) for s in sentences for n in re.findall(r"\b\d{2},\d{3}\b", s)}
    assert sizes == {MAX_LISTED_DEVICES}, (doc, sizes)
