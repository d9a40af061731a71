"""Held-out user inputs that went wrong (helper F's battery, scripts/F2_user_inputs.py):
one test per fix, written failing first."""

from __future__ import annotations

from pathlib import Path

import numpy as np
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


# --- gcdp datasets: the documented loaders and prepare(data=...) on users' own data ---------

ARFF = (
    '@relation x\n@attribute "user" numeric\n@attribute "YAVG" numeric\n'
    "@attribute class {A,B}\n@data\n1,0.5,A\n30,0.7,B\n"
)


def _arff(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "w.arff"
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def _fields(error: ParameterError) -> tuple:
    return error.field, error.limit is not None, error.value is not None


def test_prepare_refuses_an_unknown_dataset():
    """``prepare("mnist")`` ran the WISDM protocol, silently."""
    from ldpfleet.app.gcdp_datasets import prepare

    with pytest.raises(ParameterError) as info:
        prepare("mnist")
    assert _fields(info.value) == ("dataset", True, True)
    assert "'mnist'" in info.value.reason and "occupancy" in info.value.reason


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("no user attribute", ARFF.replace('"user"', '"uid"'), ["'user'"]),
        ("a word for a number", ARFF.replace("0.5", "abc"), ["line 6", "YAVG", "'abc'"]),
        ("sparse row", ARFF.replace("1,0.5,A", "{0 1, 1 0.5, 2 A}"), ["line 6"]),
        ("user id 1.5", ARFF.replace("1,0.5", "1.5,0.5"), ["user", "1.5"]),
        ("user id inf", ARFF.replace("1,0.5", "inf,0.5"), ["user", "inf"]),
        ("latin-1", ARFF.replace("class", "cl\xe9").encode("latin-1"), ["UTF-8"]),
    ],
)
def test_load_wisdm_arff_refuses_odd_files_naming_what(tmp_path, name, text, words):
    """A KeyError, a bare float() ValueError, a UnicodeDecodeError, or (user ids 1.5 and
    inf) a silent cast to another user."""
    from ldpfleet.app.gcdp_datasets import load_wisdm_arff

    with pytest.raises(ParameterError) as info:
        load_wisdm_arff(_arff(tmp_path, text))
    assert _fields(info.value) == ("data", True, True)
    for word in words:
        assert word in info.value.reason, (name, info.value.reason)


def test_load_wisdm_arff_reads_crlf_and_a_bom(tmp_path):
    from ldpfleet.app.gcdp_datasets import load_wisdm_arff

    for text in (ARFF.replace("\n", "\r\n"), "\ufeff" + ARFF):
        table = load_wisdm_arff(_arff(tmp_path, text))
        assert table.user.tolist() == [1, 30] and table.activity.tolist() == ["A", "B"]


def test_the_loaders_refuse_a_missing_file(tmp_path):
    from ldpfleet.app.gcdp_datasets import load_intel, load_wisdm_arff

    for load, path in ((load_wisdm_arff, tmp_path / "nope.arff"), (load_intel, tmp_path)):
        with pytest.raises(ParameterError) as info:
            load(path)
        assert _fields(info.value) == ("data", True, True)
        assert "nope.arff" in info.value.reason or "intelTemperatureTrain.csv" in str(info.value)


def _intel_folder(tmp_path: Path) -> Path:
    rng = np.random.default_rng(0)
    for name in ("Temperature", "Humidity"):
        for part, steps in (("Train", 40), ("Test", 20)):
            cells = 20 + rng.normal(0, 1, (10, steps))
            np.savetxt(tmp_path / f"intel{name}{part}.csv", cells, delimiter=",")
    return tmp_path


def test_load_intel_refuses_a_word_naming_the_file(tmp_path):
    from ldpfleet.app.gcdp_datasets import load_intel

    folder = _intel_folder(tmp_path)
    assert [a.shape for a in load_intel(folder)] == [(10, 40), (10, 20), (10, 40), (10, 20)]
    (folder / "intelHumidityTest.csv").write_text("1,2,x\n")
    with pytest.raises(ParameterError) as info:
        load_intel(folder)
    assert _fields(info.value) == ("data", True, True)
    assert "intelHumidityTest.csv" in info.value.reason and "'x'" in info.value.reason


def _intel_data() -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    shapes = ((10, 40), (10, 20), (10, 40), (10, 20))
    return [20 + 30 * (k >= 2) + rng.normal(0, 1, s) for k, s in enumerate(shapes)]


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_prepare_intel_refuses_a_non_finite_reading_naming_mote_and_step(bad):
    """NaN was "the training interval [nan, nan] is wider than the largest float"."""
    from ldpfleet.app.gcdp_datasets import prepare

    data = _intel_data()
    data[2][3, 5] = bad
    with pytest.raises(ParameterError) as info:
        prepare("intel", data=data)
    assert _fields(info.value) == ("data", True, True)
    assert "humidity train" in info.value.reason and "mote 3, step 5" in info.value.reason


def _wisdm(**changes):
    from ldpfleet.app.gcdp_datasets import WISDM_FEATURES, WISDM_PROTECTED, WisdmTable

    rng = np.random.default_rng(2)
    columns = {name: rng.random(80) for name in (*WISDM_FEATURES, WISDM_PROTECTED)}
    columns.update(changes)
    users = np.array([1] * 30 + [2] * 30 + [30] * 20)
    return WisdmTable(users, {k: v for k, v in columns.items() if v is not None},
                      np.array(["Walking", "Jogging"] * 40))  # fmt: skip


def test_prepare_wisdm_reads_a_table_of_its_columns():
    from ldpfleet.app.gcdp_datasets import prepare

    assert prepare("wisdm", data=_wisdm()).test_f.shape == (20, 6)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"ZAVG": None}, ["'ZAVG'"]),  # a KeyError
        ({"YPEAK": None}, ["'YPEAK'"]),
        ({"YPEAK": np.full(80, np.nan)}, ["YPEAK", "training"]),  # NaN fits, silently
    ],
)
def test_prepare_wisdm_refuses_a_table_without_a_column_it_reads(changes, words):
    from ldpfleet.app.gcdp_datasets import prepare

    with pytest.raises(ParameterError) as info:
        prepare("wisdm", data=_wisdm(**changes))
    assert _fields(info.value) == ("data", True, True)
    for word in words:
        assert word in info.value.reason, info.value.reason


def test_a_node_alone_on_a_line_is_told_how_to_write_an_isolated_node(tmp_path):
    """``3`` alone (an isolated node, as networkx's adjacency lists write one) was refused
    with no hint; the loader's way to give one is a self loop ``3 3``."""
    error = _refused(tmp_path, b"1 2\n3\n")
    assert "line 2: expected two node ids, got '3'" in error.reason
    assert "'3 3'" in error.reason and "isolated" in error.reason
    tmp = tmp_path / "loop.txt"
    tmp.write_bytes(b"1 2\n3 3\n")
    graph = load_edge_list(tmp)
    assert (graph.n, graph.edges(), graph.degrees().tolist()) == (3, 1, [1, 1, 0])


@pytest.mark.parametrize(("body", "line"), [(b"1 2\n6 7\x00\n", 2), (b"1\x00 2\n", 1)])
def test_a_nul_byte_is_refused_naming_its_line(tmp_path, body, line):
    """``7\\x00`` was read as node 7: numpy's bytes arrays drop trailing NULs (found by
    scripts/F2_fuzz.py). A text edge list holds no NUL; UTF-16 is decoded before."""
    error = _refused(tmp_path, body)
    assert f"line {line}" in error.reason and "NUL" in error.reason
    assert (error.field, error.limit) == ("g.txt", "text without NUL bytes")


@pytest.mark.parametrize(
    ("body", "line"),
    [(b"user#1 user#2\nuser#2 user#3\n", 1), (b"a b\nc#d e\n", 2), (b"1 2\n3 #4\n", 2)],
)
def test_a_line_cut_by_a_hash_says_the_hash_starts_a_comment(tmp_path, body, line):
    """``user#1 user#2`` was cut to ``user`` and told it looked like a header row, ``3 #4``
    to ``3`` and told to write an isolated node as a self loop."""
    error = _refused(tmp_path, body)
    assert f"line {line}: expected two node ids" in error.reason
    assert "'#' starts a comment" in error.reason
    assert "header" not in error.reason and "isolated" not in error.reason


def test_a_third_column_before_a_comment_keeps_its_own_hint(tmp_path):
    error = _refused(tmp_path, b"1 2 0.5  # weighted\n")
    assert "looks like a weight" in error.reason and "starts a comment" not in error.reason


# --- graphs built in code: Graph.from_edges, neighbours, generate ---------------------------


@pytest.mark.parametrize(
    ("n", "u", "v", "field"),
    [
        (3, [0.5, 1.0], [1, 2], "u[0]"),  # read as node 0, silently
        (3, [0, 1], [1, np.nan], "v[1]"),  # refused as endpoint -2^63
        (3, [0, 1], [1, np.inf], "v[1]"),
        (-1, [], [], "n"),  # ValueError from numpy
        (3.0, [0], [1], "n"),  # TypeError from numpy
        (True, [0], [1], "n"),
        (2**40, [0], [1], "n"),  # MemoryError (int32 neighbours cannot hold it anyway)
    ],
)
def test_from_edges_refuses_what_it_would_misread_or_crash_on(n, u, v, field):
    from ldpfleet.devices.graphs import Graph

    with pytest.raises(ParameterError) as info:
        Graph.from_edges(n, np.asarray(u), np.asarray(v))
    assert _fields(info.value)[0] == field and _fields(info.value)[1:] == (True, True)


def test_from_edges_still_takes_integral_floats_and_numpy_integers():
    from ldpfleet.devices.graphs import Graph

    graph = Graph.from_edges(np.int64(3), np.array([0.0, 1.0]), np.array([1, 2], np.int32))
    assert (graph.n, graph.edges()) == (3, 2)


@pytest.mark.parametrize("node", ["1", 1.0, 1.5])
def test_neighbours_refuses_a_node_that_is_not_an_integer(node):
    from ldpfleet.devices.graphs import Graph

    with pytest.raises(ParameterError) as info:
        Graph.from_edges(3, [0], [1]).neighbours(node)
    assert _fields(info.value) == ("i", True, True)


@pytest.mark.parametrize("seed", ["x", 1.5, None])
def test_generate_refuses_a_seed_that_is_not_an_integer(seed):
    from ldpfleet.devices.graphs import generate

    with pytest.raises(ParameterError) as info:
        generate("barabasi_albert", 10, seed=seed, m=2)
    assert _fields(info.value)[0] == "seed"


def test_an_empty_graph_spec_is_refused_as_empty():
    """``load_graph("")`` said it could not read the edge list '.' (a directory)."""
    from ldpfleet.devices.graphs import load_graph

    with pytest.raises(ParameterError) as info:
        load_graph("  ")
    assert _fields(info.value) == ("graph", True, True) and "empty" in info.value.reason


def test_occupancy_files_may_start_with_the_home_folder(tmp_path, monkeypatch):
    """``--train-file=~/train.csv`` (no shell expands a ``~`` after ``=``) was "No such
    file or directory: '~/train.csv'"; edge lists and scenario paths expand it."""
    from ldpfleet.app.gcdp_datasets import OCC_TEST_FILE, OCC_TRAIN_FILE, occupancy_windows

    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "train.csv").write_bytes(OCC_TRAIN_FILE.read_bytes())
    (tmp_path / "test.csv").write_bytes(OCC_TEST_FILE.read_bytes())
    mine = occupancy_windows(None, 30, train_file="~/train.csv", test_file="~/test.csv")
    shipped = occupancy_windows(None, 30)
    assert np.array_equal(mine.test_f, shipped.test_f)
    assert np.array_equal(mine.train_f, shipped.train_f)
    from ldpfleet.app.gcdp_datasets import prepare  # the bench's path: its head reads dates

    prepared = prepare("occupancy", train_file="~/train.csv", test_file="~/test.csv")
    assert prepared.protocol_head["train_file"] == str(tmp_path / "train.csv")


def test_a_junk_token_is_refused_before_any_array_of_its_width(tmp_path):
    """One corrupt 5,000-byte token among 4,000 edges: numpy's fixed-width bytes array
    of every token took 40 MB (a 1 MB token among 100,000 edges: 200 GB, a MemoryError or
    the kernel's OOM killer) before the refusal."""
    import tracemalloc

    body = b"".join(b"%d %d\n" % (k, k + 1) for k in range(4000)) + b"x" * 5000 + b" 7\n"
    path = tmp_path / "junk.txt"
    path.write_bytes(body)
    tracemalloc.start()
    try:
        with pytest.raises(ParameterError) as info:
            load_edge_list(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 10_000_000, peak  # the file's bytes and tokens: about 1 MB
    assert "line 4001" in info.value.reason and "5000 bytes" in info.value.reason
    assert (info.value.limit, info.value.value) == ("node ids of at most 256 bytes", 5000)


def test_long_labels_within_the_limit_still_load(tmp_path):
    label = "https://example.org/" + "a" * 200
    path = tmp_path / "urls.txt"
    path.write_text(f"{label} b\nb c\n")
    graph = load_edge_list(path)
    assert (graph.n, graph.edges(), graph.ids.tolist()) == (3, 2, ["b", "c", label])


def test_an_underscore_is_not_digit_grouping_in_an_id(tmp_path):
    """``1_000`` was node 1000 (Python's int() reads the grouping); a CSV source refuses it."""
    error = _refused(tmp_path, b"1_000 2\n2 3\n")
    assert "line 1: node ids must be integers" in error.reason


def test_load_wisdm_arff_reads_quoted_attribute_names_with_spaces(tmp_path):
    """``@attribute 'y avg' numeric`` was named ``'y`` (split at the space)."""
    from ldpfleet.app.gcdp_datasets import load_wisdm_arff

    text = ARFF.replace('"YAVG"', "'y avg'").replace("@attribute class", "@ATTRIBUTE 'the class'")
    table = load_wisdm_arff(_arff(tmp_path, text))
    assert list(table.columns) == ["y avg"] and table.activity.tolist() == ["A", "B"]


def _occupancy_data(records: int = 600, tests: int = 300) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    out = []
    for k in (records, tests):
        occupied = (np.arange(k) // 60) % 2
        x = np.c_[
            21 + occupied + rng.normal(0, 0.2, k),
            27 + rng.normal(0, 0.5, k),
            400 * occupied + abs(rng.normal(0, 20, k)),
            450 + 300 * occupied + rng.normal(0, 15, k),
            0.0045 + rng.normal(0, 1e-4, k),
        ]
        out += [x, occupied]
    return out


def test_prepare_occupancy_reads_arrays():
    from ldpfleet.app.gcdp_datasets import prepare

    prepared = prepare("occupancy", data=_occupancy_data())
    assert prepared.test_f.shape == (10, 5) and np.all(np.isfinite(prepared.test_f))


@pytest.mark.parametrize(
    ("part", "change", "field"),
    [
        (2, lambda x: np.where(np.arange(x.size).reshape(x.shape) == 12, np.nan, x), "test_x"),
        (0, lambda x: np.where(np.arange(x.size).reshape(x.shape) == 7, np.inf, x), "train_x"),
        (1, lambda y: y * 2, "train_y"),  # a label 2, read as occupied
        (0, lambda x: x[:, :4], "train_x"),  # a numpy broadcast ValueError
        (1, lambda y: y[:-5], "train_y"),  # a numpy reshape ValueError
    ],
)
def test_prepare_occupancy_refuses_arrays_it_would_misread(part, change, field):
    """NaN test readings were released as NaN features; labels 0/2 read as 0/1."""
    from ldpfleet.app.gcdp_datasets import prepare

    data = _occupancy_data()
    data[part] = change(data[part])
    with pytest.raises(ParameterError) as info:
        prepare("occupancy", data=data)
    assert _fields(info.value)[0] == field and info.value.limit is not None


def test_prepare_occupancy_refuses_three_arrays():
    from ldpfleet.app.gcdp_datasets import prepare

    with pytest.raises(ParameterError) as info:
        prepare("occupancy", data=_occupancy_data()[:3])
    assert _fields(info.value) == ("data", True, True)
