"""An integer node id outside int64 is refused with the range and a relabelling command.

Helper G's user trial (2026-12-06): a 19-digit id above 2^63 - 1 (an unsigned 64-bit id,
a hash) was refused as "node ids must be integers (at most 19 digits ...)": a 19-digit id,
with nothing saying why or what to do.
"""

from __future__ import annotations

import shutil
import subprocess

import pytest
from ldpfleet.devices.graphs import load_edge_list
from ldpfleet.protocol.errors import ParameterError

EDGES = [(0, 1), (1, 2), (2, 0), (2, 3), (4, 4)]


def _big(k: int) -> int:
    return k * 10**18 + 12345  # 3 * 10**18 + ... fits; 10**19 + ... does not


def test_a_19_digit_id_above_int64_names_the_range(tmp_path) -> None:
    p = tmp_path / "g.txt"
    p.write_text("1 2\n2 9800000000000012345\n")
    with pytest.raises(ParameterError) as info:
        load_edge_list(p)
    text = str(info.value)
    assert "line 2" in text and "9800000000000012345 is outside the 64-bit id range" in text
    assert "9223372036854775807" in text and "> edges.txt" in text


def test_an_id_inside_int64_gets_no_range_hint(tmp_path) -> None:
    p = tmp_path / "g.txt"
    p.write_text("1 2\nalice 3\n")
    with pytest.raises(ParameterError) as info:
        load_edge_list(p)
    assert "64-bit" not in str(info.value)


@pytest.mark.skipif(shutil.which("awk") is None, reason="needs awk")
def test_the_suggested_command_gives_a_graph_of_the_same_shape(tmp_path) -> None:
    p = tmp_path / "g.txt"
    p.write_text("".join(f"{_big(u)} {_big(v)}\n" for u, v in [*EDGES, (11, 2)]))
    with pytest.raises(ParameterError) as info:
        load_edge_list(p)
    command = str(info.value).split("e.g. ", 1)[1].removesuffix(")")
    subprocess.run(command, shell=True, cwd=tmp_path, check=True)
    g = load_edge_list(tmp_path / "edges.txt")
    assert g.n == 6 and sorted(g.degrees().tolist()) == [0, 1, 1, 2, 2, 4]
