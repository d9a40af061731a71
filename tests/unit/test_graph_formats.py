"""Users' own graph files (devices/graphs.py's loader, scenarios.cadr_run.scenario_graph_source):
one test per accepted format and per refusal. Before this, a KONECT file, a gzip without its
suffix, bzip2, xz, UTF-16 and a path with ':' in a scenario failed; the refusals named the line
but gave no hint (weighted columns, a header row) or no sentence at all (archives, '% bip')."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import tarfile
import zipfile
from pathlib import Path

import pytest
from ldpfleet.devices.graphs import is_generator_spec, load_edge_list, load_graph
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.scenarios.cadr_run import scenario_graph_source

EDGES = b"1 2\n2 3\n3 1\n3 4\n"  # a triangle with a tail: 4 nodes, 4 edges


def _same_as_plain(g) -> None:
    assert (g.n, g.edges(), list(g.ids)) == (4, 4, [1, 2, 3, 4])


def _refusal(tmp_path: Path, body: bytes, name: str = "g.txt") -> str:
    path = tmp_path / name
    path.write_bytes(body)
    with pytest.raises(ParameterError) as info:
        load_edge_list(path)
    return str(info.value)


# --- accepted -----------------------------------------------------------------------------


def test_konect_percent_comment_lines_are_comments(tmp_path):
    path = tmp_path / "out.example"
    path.write_bytes(b"% sym unweighted\n% 4 4 4\n" + EDGES + b"  % a trailing note\n")
    _same_as_plain(load_edge_list(path))


@pytest.mark.parametrize(
    ("compress", "name"),
    [
        (gzip.compress, "edges.txt"),  # gzip without its .gz suffix
        (gzip.compress, "edges.txt.gz"),
        (bz2.compress, "edges.txt.bz2"),
        (bz2.compress, "edges.data"),  # bzip2 by its magic bytes
        (lzma.compress, "edges.txt.xz"),
        (lzma.compress, "edges"),
    ],
)
def test_compressed_files_are_recognised_by_their_magic_bytes(tmp_path, compress, name):
    (tmp_path / name).write_bytes(compress(EDGES))
    _same_as_plain(load_edge_list(tmp_path / name))


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_text_with_a_bom_is_decoded(tmp_path, encoding):
    bom = {"utf-16": b"", "utf-16-le": b"\xff\xfe", "utf-16-be": b"\xfe\xff"}[encoding]
    path = tmp_path / "ps.txt"  # PowerShell's `>` writes UTF-16 LE with a BOM
    path.write_bytes(bom + "# from Windows\r\n1\t2\r\n2\t3\r\n3\t1\r\n3\t4\r\n".encode(encoding))
    _same_as_plain(load_edge_list(path))


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_utf16_text_without_a_bom_is_recognised_by_its_zero_bytes(tmp_path, encoding):
    path = tmp_path / "nobom.txt"  # e.g. .NET's Encoding.Unicode.GetBytes, iconv -t UTF-16LE
    path.write_bytes("% KONECT\n1 2\n2 3\r\n3 1\n3 4\n".encode(encoding))
    _same_as_plain(load_edge_list(path))


def test_a_file_with_stray_zero_bytes_is_not_taken_for_utf16(tmp_path):
    path = tmp_path / "nul.txt"  # zero bytes at both parities: not UTF-16, so refused
    path.write_bytes(b"1 2\n\x00\x002 3\n")
    with pytest.raises(ParameterError) as info:
        load_edge_list(path)
    assert info.value.field == "nul.txt" and "line 2: a NUL byte" in str(info.value)


def test_a_tilde_path_is_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "mine.txt").write_bytes(EDGES)
    _same_as_plain(load_edge_list("~/mine.txt"))
    _same_as_plain(load_graph("~/mine.txt"))


def test_files_that_loaded_before_still_load(tmp_path):
    """Tabs, CRLF, a UTF-8 BOM, '#' comments, a .gz name: unchanged."""
    path = tmp_path / "old.txt.gz"
    path.write_bytes(gzip.compress(b"\xef\xbb\xbf# SNAP\r\n1\t2\r\n2 3\n\n3 1\n3 4\n"))
    g = load_edge_list(path)
    _same_as_plain(g)
    assert g.name == "old"


# --- refused, with the line, the value and a hint -----------------------------------------


@pytest.mark.parametrize(
    ("make", "kind", "listing"),
    [
        ("zip", "a zip archive", "unzip -l"),
        ("tar", "a tar archive", "tar -tf"),
        ("tar.bz2", "a tar archive", "tar -tf"),  # how KONECT ships its graphs
        ("tar.gz", "a tar archive", "tar -tf"),
    ],
)
def test_an_archive_is_refused_with_the_advice_to_extract_the_edge_list(
    tmp_path, make, kind, listing
):
    buffer = io.BytesIO()
    if make == "zip":
        with zipfile.ZipFile(buffer, "w") as archive:
            archive.writestr("out.graph", EDGES)
    else:
        with tarfile.open(fileobj=buffer, mode="w:" + make.partition(".")[2]) as archive:
            info = tarfile.TarInfo("graph/out.graph")
            info.size = len(EDGES)
            archive.addfile(info, io.BytesIO(EDGES))
    path = tmp_path / f"download.{make}"
    path.write_bytes(buffer.getvalue())
    with pytest.raises(ParameterError) as info:
        load_edge_list(path)
    message = str(info.value)
    assert info.value.field == "graph" and repr(str(path)) in message, message
    assert f"is {kind}, not an edge list: extract the edge list" in message, message
    assert f"{listing} download.{make}" in message, message


def test_a_konect_bipartite_graph_is_refused_naming_its_header_line(tmp_path):
    message = _refusal(tmp_path, b"\n% bip unweighted\n% 3 2 2\n1 1\n1 2\n2 2\n", "out.bip")
    assert message.startswith("out.bip: line 2: a KONECT bipartite graph ('% bip')"), message
    assert "ids of the two sides collide" in message, message


@pytest.mark.parametrize(
    ("body", "what"),
    [
        (b"1 2 0.5\n2 3 1.5\n", "line 1: expected two node ids, got '1 2 0.5' (the 3rd column "
         "looks like a weight"),
        (b"1 2 1262304000\n", "(the 3rd column looks like a timestamp"),
        (b"1 2 1 1262304000\n", "(the 3rd and 4th columns look like a weight and a timestamp"),
        (b"% sym positive\n% 2 3 3\n1 2 3\n2 3 1\n", "line 3: expected two node ids, got "
         "'1 2 3' (the KONECT header on line 1 says the edges carry 'positive' weights"),
    ],
)  # fmt: skip
def test_weighted_columns_are_refused_with_the_cut_hint(tmp_path, body, what):
    message = _refusal(tmp_path, body)
    assert message.startswith("g.txt: ") and what in message, message
    assert "keep the first two columns, e.g. awk '{print $1, $2}' g.txt > edges.txt" in message, (
        message
    )


@pytest.mark.parametrize(
    ("body", "line"),
    [
        (b"source,target\n1,2\n", "line 1: expected two node ids, got 'source,target'"),
        (b"# exported\nsource target\n1 2\n", "line 2: node ids must be integers"),
        (b"from;to;weight\n", "line 1: expected two node ids, got 'from;to;weight'"),
    ],
)
def test_a_header_row_gets_a_hint(tmp_path, body, line):
    message = _refusal(tmp_path, body)
    assert line in message, message
    assert "(a header row of column names? delete it or start it with '#')" in message, message


def test_a_header_hint_is_only_for_the_first_line(tmp_path):
    message = _refusal(tmp_path, b"1 2\nalice bob\n")
    assert "line 2: node ids must be integers" in message and "header" not in message, message


@pytest.mark.parametrize(
    ("name", "body", "reason"),
    [
        ("g.bz2", b"1 2\n", "named .bz2 but not bzip2 data"),
        ("g.xz", b"1 2\n", "named .xz but not xz data"),
        ("cut.txt", bz2.compress(EDGES * 50)[:40], "broken bzip2 data"),
        ("cut2.txt", lzma.compress(EDGES * 50)[:40], "broken xz data"),
        ("bad16.txt", b"\xff\xfe1\x00 \x00\x00\xd8", "broken UTF-16 text at byte"),
    ],
)
def test_broken_compression_or_encoding_is_one_sentence(tmp_path, name, body, reason):
    (tmp_path / name).write_bytes(body)
    with pytest.raises(ParameterError) as info:
        load_graph(str(tmp_path / name))
    message = str(info.value)
    assert info.value.field == "graph" and "cannot read the edge list" in message, message
    assert reason in message, message


# --- the scenario's [graph] source --------------------------------------------------------


def test_a_relative_path_with_a_colon_is_resolved_beside_the_scenario(tmp_path, monkeypatch):
    """``graphs/a:b.txt`` was taken for a built-in or generator name and not resolved, so a
    scenario run from another folder could not find it."""
    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "run:1.txt").write_bytes(EDGES)
    scenario = tmp_path / "my.toml"
    monkeypatch.chdir(Path("/"))
    source = scenario_graph_source("graphs/run:1.txt", scenario)
    assert source == str(tmp_path / "graphs" / "run:1.txt")
    _same_as_plain(load_graph(source))


@pytest.mark.parametrize(
    "spec", ["facebook", "wiki-vote", "barabasi_albert:n=50,m=2,seed=1", "erdos_renyi:n=9,p=1"]
)
def test_names_and_generators_are_kept_as_they_are(tmp_path, spec):
    assert scenario_graph_source(spec, tmp_path / "s.toml") == spec


def test_a_scenario_tilde_path_is_expanded(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "g.txt").write_bytes(EDGES)
    assert scenario_graph_source("~/g.txt", None) == str(tmp_path / "g.txt")


def test_is_generator_spec_needs_a_known_kind_before_the_colon():
    assert is_generator_spec("watts_strogatz:n=10,k=2,p=0.1")
    assert not is_generator_spec("graphs/run:1.txt") and not is_generator_spec("C:/g.txt")
    assert not is_generator_spec("barabasi_albert")


def test_a_scenario_with_a_colon_path_loads_from_another_folder(tmp_path, monkeypatch):
    """The scenario path end to end: ``load_scenario`` + ``load_scenario_graph`` (the run,
    both sides, the partitions and mosquitto-config call it)."""
    from ldpfleet.scenarios.cadr_run import load_scenario_graph
    from ldpfleet.scenarios.schema import load_scenario

    (tmp_path / "graphs").mkdir()
    (tmp_path / "graphs" / "2026:12.txt").write_bytes(gzip.compress(EDGES))
    scenario = tmp_path / "mine.toml"
    scenario.write_text(
        '[scenario]\nname = "mine"\nseed = 0\n\n[graph]\nsource = "graphs/2026:12.txt"\n\n'
        '[cadr]\neps = 3.0\n\n[broker]\nurl = "memory"\n'
    )
    monkeypatch.chdir(Path("/"))
    graph, source = load_scenario_graph(load_scenario(scenario))
    _same_as_plain(graph)
    assert source == str(tmp_path / "graphs" / "2026:12.txt")


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("erdos_renyi:n=100000000,p=0.1,seed=1", "n must be <= 20,000"),
        ("barabasi_albert:n=2000000,m=2,seed=1", "n must be <= 1,000,000"),
        ("watts_strogatz:n=900000,k=20,p=0.1,seed=1", "about 9,000,000 edges"),
    ],
)
def test_a_generator_too_large_to_build_is_refused_before_it_runs(spec, needle):
    """Held-out: only a scenario file's [graph] source was size-checked; `bench cadr
    --graph erdos_renyi:n=100000000,p=0.1` went through devices.graphs.generate and ran
    until the kernel killed it (23 GB). The limit now sits in generate itself."""
    with pytest.raises(ParameterError, match=needle) as caught:
        load_graph(spec)
    assert caught.value.field == "n"
