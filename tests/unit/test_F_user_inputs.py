"""Held-out user inputs that went wrong (helper F's battery, scripts/F2_user_inputs.py):
one test per fix, written failing first."""

from __future__ import annotations

from pathlib import Path

import pytest
from ldpfleet.devices.graphs import load_edge_list
from ldpfleet.protocol.errors import ParameterError


def _refused(tmp_path: Path, body: bytes, name: str = "g.txt") -> ParameterError:
    path = tmp_path / name
    path.write_bytes(body)
    with pytest.raises(ParameterError) as info:
        load_edge_list(path)
    return info.value


# --- graphs: a line of three ids and a line of one balanced the token count ---------------


@pytest.mark.parametrize(
    ("body", "line"),
    [
        (b"1 2 1\n5\n", 1),  # weighted triples with an isolated node listed alone
        (b"1 2 3\n4\n5 6\n", 1),
        (b"5 6\n4\n1 2 3\n", 2),
        (b"alice bob 1\ncarol\n", 1),  # labels: the same pairing across lines
    ],
)
def test_lines_of_other_widths_are_refused_even_when_the_token_count_balances(tmp_path, body, line):
    """``1 2 1`` then ``5``: four tokens on two lines, read as the edges (1, 2) and (1, 5),
    silently (the loader compared only the total count of tokens with two per line)."""
    error = _refused(tmp_path, body)
    assert f"line {line}: expected two node ids" in error.reason
    assert error.field == "g.txt"
