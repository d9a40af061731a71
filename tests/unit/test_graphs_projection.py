"""Tests of devices/graphs.py (graphs, SNAP loaders, generators) and collector/projection.py."""

from __future__ import annotations

import gzip
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ldpfleet.collector.degree_postprocess import degree_prior
from ldpfleet.collector.projection import (
    METHODS,
    degree_distribution_mae,
    degree_sequence_mae,
    degree_sequence_mse,
    edge_remove,
    evaluate,
    kept_edge_ratio,
    lpea,
    project,
    random_add,
)
from ldpfleet.devices.graphs import (
    EGO_FACEBOOK,
    Graph,
    ego_facebook,
    generate,
    load_edge_list,
    load_graph,
    wiki_vote,
)
from ldpfleet.protocol.errors import ParameterError


@pytest.fixture(scope="module")
def facebook() -> Graph:
    return ego_facebook()


def edge_set(g: Graph) -> set[tuple[int, int]]:
    return {(int(i), int(j)) for i, j in g.edge_array()}


# --- loaders -------------------------------------------------------------------------------


def test_ego_facebook_counts_and_invariants(facebook):
    assert (facebook.n, facebook.edges()) == (4039, 88234)
    facebook.check()
    assert facebook.degrees().max() == 1045
    assert np.array_equal(facebook.ids, np.arange(4039))  # ids are already 0..4038


def test_ego_facebook_loads_fast():
    """Loading the 88,234 edges costs well under a second of CPU. Measured in CPU seconds
    of this process, not wall time: beside other work (load 12 on 2 cores) one load took
    1.49 s of wall time for 0.14 s of CPU (0.12-0.18 s CPU on 9 loads, quiet or busy)."""
    best = min(_cpu_seconds_of_a_load() for _ in range(2))
    assert best < 1.0


def _cpu_seconds_of_a_load() -> float:
    started = time.process_time()
    load_edge_list(EGO_FACEBOOK)
    return time.process_time() - started


def test_wiki_vote_counts_directed_to_undirected():
    g = wiki_vote()
    assert (g.n, g.edges()) == (7115, 100762)
    g.check()
    assert np.all(np.diff(g.ids) > 0)  # relabelled in sorted order of the original ids
    # the file's first arc is 30 -> 1412 (after 4 comment lines, CRLF)
    i, j = np.searchsorted(g.ids, [30, 1412])
    assert j in g.neighbours(int(i)) and i in g.neighbours(int(j))


def test_loader_crlf_comments_tabs_directed_loops_duplicates(tmp_path):
    text = (
        b"# Directed graph\r\n# FromNodeId\tToNodeId\r\n"
        b"10\t30\r\n30\t10\r\n  # indented comment\r\n\r\n"
        b"30 20\r\n20   30\r\n20\t20\r\n99 99\r\n10 20"  # no final newline
    )
    plain = tmp_path / "g.txt"
    plain.write_bytes(text)
    packed = tmp_path / "g.txt.gz"
    packed.write_bytes(gzip.compress(text))
    for path in (plain, packed):
        g = load_edge_list(path)
        g.check()
        assert g.name == "g"
        assert list(g.ids) == [10, 20, 30, 99]  # 99 only has a self loop: isolated node
        assert g.n == 4 and g.edges() == 3
        assert edge_set(g) == {(0, 1), (0, 2), (1, 2)}
        assert list(g.degrees()) == [2, 2, 2, 0]
        assert g.neighbours(1).dtype == np.int32
    assert load_edge_list(plain, name="x").name == "x"


def test_loader_relabels_in_sorted_id_order(tmp_path):
    p = tmp_path / "e.txt"
    p.write_text("500 7\n7 42\n")
    g = load_edge_list(p)
    assert list(g.ids) == [7, 42, 500]
    assert edge_set(g) == {(0, 1), (0, 2)}


@pytest.mark.parametrize("body", [b"1 2\n3\n", b"1 2 3\n4 5\n", b"1 x\n"])
def test_loader_rejects_malformed_lines(tmp_path, body):
    p = tmp_path / "bad.txt"
    p.write_bytes(body)
    with pytest.raises(ParameterError):
        load_edge_list(p)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"1 2\nalice bob\n", "line 2: node ids must be integers (at most 19 digits; '#'"),
        (b"# c\n\n1 2\n2 3 4\n", "line 4: expected two node ids, got '2 3 4'"),
        (b"0,1\n1,2\n", "line 1: expected two node ids, got '0,1' (ids are separated by spaces"),
        (b"1 2\n\xff\xfe 3\n", "line 2: node ids must be integers"),
        (b"1 2\n99999999999999999999 3\n", "got '99999999999999999999 3'"),
    ],
)
def test_a_malformed_line_is_named_by_its_number(tmp_path, body, message):
    """The module docstring promises an error naming the line; a non-integer id said only
    "invalid literal for int() with base 10: b'%'"."""
    p = tmp_path / "bad.txt"
    p.write_bytes(body)
    with pytest.raises(ParameterError) as info:
        load_edge_list(p)
    assert info.value.field == "bad.txt" and message in str(info.value), str(info.value)


@pytest.mark.parametrize(
    ("body", "spec"),
    [(b"# nothing\n", None), (b"5 5\n7 7\n", None), (None, "erdos_renyi:n=5,p=0")],
)
def test_a_graph_without_edges_is_refused_for_a_degree_release(tmp_path, body, spec):
    """``load_graph`` (bench cadr, CADR-LDP scenarios) refuses a graph without edges in one
    sentence; it stopped later with "devices: ... got 0" or "degree_bound: ... got 0"."""
    if spec is None:
        spec = str(tmp_path / "g.txt")
        (tmp_path / "g.txt").write_bytes(body)
    with pytest.raises(ParameterError) as info:
        load_graph(spec)
    assert info.value.field == "graph" and "has no edges" in str(info.value), str(info.value)


def test_a_one_edge_graph_runs_the_dp_pipeline():
    """D = 1: every unit of the θ search's noisy mass can land in the empty bucket above D;
    the degree prior was 0 / 0 and the run stopped with "prior: must be a distribution"."""
    prior = degree_prior([2, -2, 4], [0, 1], 1, 2)
    assert prior == pytest.approx([0.5, 0.5])


def test_empty_edge_list(tmp_path):
    p = tmp_path / "empty.txt"
    p.write_bytes(b"# nothing\n")
    g = load_edge_list(p)
    assert g.n == 0 and g.edges() == 0


def test_graph_arrays_are_read_only_and_neighbours_checked(facebook):
    with pytest.raises(ValueError):
        facebook.adjacency[0][0] = 5
    with pytest.raises(ParameterError):
        facebook.neighbours(4039)
    with pytest.raises(ParameterError):
        Graph(n=2, adjacency=(np.array([], np.int32),))


def test_check_detects_asymmetry():
    bad = Graph(n=2, adjacency=(np.array([1], np.int32), np.array([], np.int32)))
    with pytest.raises(ParameterError):
        bad.check()


# --- generators ----------------------------------------------------------------------------

KINDS = [
    ("erdos_renyi", {"p": 0.05}),
    ("barabasi_albert", {"m": 3}),
    ("powerlaw_cluster", {"m": 3, "p": 0.3}),
    ("watts_strogatz", {"k": 6, "p": 0.1}),
]


@pytest.mark.parametrize(("kind", "params"), KINDS)
def test_generators_are_deterministic_per_seed(kind, params):
    a = generate(kind, 300, seed=5, **params)
    b = generate(kind, 300, seed=5, **params)
    c = generate(kind, 300, seed=6, **params)
    a.check()
    assert a.n == 300 and a.same_edges(b)
    assert not a.same_edges(c)


def test_generator_edge_counts_and_errors():
    assert generate("barabasi_albert", 100, seed=1, m=2).edges() == 2 * (100 - 2)
    assert generate("watts_strogatz", 100, seed=1, k=4, p=0.2).edges() == 200
    with pytest.raises(ParameterError):
        generate("nope", 10, seed=0)
    with pytest.raises(ParameterError):
        generate("erdos_renyi", 10, seed=0, m=3)
    with pytest.raises(ParameterError):
        generate("erdos_renyi", 10, seed=0, p=1.5)
    with pytest.raises(ParameterError):
        generate("barabasi_albert", 10, seed=0, m=10)


# --- projection invariants -----------------------------------------------------------------


@st.composite
def small_graphs(draw) -> Graph:
    n = draw(st.integers(1, 14))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=60))
    u = np.array([p[0] for p in pairs], dtype=np.int64)
    v = np.array([p[1] for p in pairs], dtype=np.int64)
    return Graph.from_edges(n, u, v)


def is_maximal(g: Graph, kept: Graph, theta: int) -> bool:
    """No original edge left out whose endpoints both have room."""
    k = kept.degrees()
    missing = edge_set(g) - edge_set(kept)
    return all(k[i] >= theta or k[j] >= theta for i, j in missing)


@settings(max_examples=150, deadline=None)
@given(g=small_graphs(), theta=st.integers(0, 6), seed=st.integers(0, 2**32 - 1))
def test_every_method_keeps_a_capped_subgraph(g, theta, seed):
    original = edge_set(g)
    for method in METHODS:
        kept = project(g, method, theta, np.random.default_rng(seed))
        kept.check()  # symmetric, sorted, no loops
        assert kept.n == g.n
        assert edge_set(kept) <= original
        assert kept.degrees().max(initial=0) <= theta
        if method != "ER":  # edge-addition methods stop only when nothing more fits
            assert is_maximal(g, kept, theta)
        if g.degrees().max(initial=0) <= theta:
            assert kept.same_edges(g)  # nothing needs to go
        again = project(g, method, theta, np.random.default_rng(seed))
        assert again.same_edges(kept)


@settings(max_examples=60, deadline=None)
@given(g=small_graphs(), theta=st.integers(0, 4), seed=st.integers(0, 2**32 - 1))
def test_lpea_hard_cap_survives_lying_or_noisy_answers(g, theta, seed):
    def always_yes(i, cand, kept_deg, th, rng):
        return np.ones(cand.size, dtype=bool)

    def coin(i, cand, kept_deg, th, rng):
        return rng.random(cand.size) < 0.5

    rng = np.random.default_rng(seed)
    for accept, count in ((always_yes, lambda a: 10**6), (coin, lambda a: 2.0 * a.sum() - 1)):
        kept = lpea(g, theta, rng, accept=accept, count=count, pool="all")
        kept.check()
        assert edge_set(kept) <= edge_set(g)
        assert kept.degrees().max(initial=0) <= theta


def test_lpea_key_is_injectable_and_refusals_keep_nothing():
    g = generate("powerlaw_cluster", 120, seed=3, m=3, p=0.2)
    deg = g.degrees()
    high = lpea(g, 5, np.random.default_rng(1), order="high")
    low_of_minus = lpea(g, 5, np.random.default_rng(1), key=lambda i, c: -deg[c])
    assert high.same_edges(low_of_minus)
    never = lpea(g, 5, np.random.default_rng(1), accept=lambda *a: np.zeros(a[1].size, bool))
    assert never.edges() == 0
    one_round = lpea(g, 5, np.random.default_rng(1), max_rounds=1)
    assert one_round.same_edges(lpea(g, 5, np.random.default_rng(1)))  # round 2 adds nothing


def test_lpea_low_keeps_the_matching_of_the_seed_example():
    # seed Fig. 1: edges BA, BC, BD, AC and theta = 1. LL always keeps BD and AC.
    a, b, c, d = range(4)
    g = Graph.from_edges(4, np.array([b, b, b, a]), np.array([a, c, d, c]))
    for seed in range(20):
        kept = lpea(g, 1, np.random.default_rng(seed))
        assert edge_set(kept) == {(a, c), (b, d)}
    kept_high = [lpea(g, 1, np.random.default_rng(s), order="high").edges() for s in range(20)]
    assert min(kept_high) == 1  # highest-first sometimes strands D


def test_theta_zero_and_bad_parameters(facebook):
    for method in METHODS:
        assert project(facebook, method, 0, np.random.default_rng(0)).edges() == 0
    rng = np.random.default_rng(0)
    for bad in (-1, 2.5, True):
        with pytest.raises(ParameterError):
            edge_remove(facebook, bad, rng)
    with pytest.raises(ParameterError):
        project(facebook, "XX", 4, rng)
    with pytest.raises(ParameterError):
        lpea(facebook, 4, rng, order="middle")
    with pytest.raises(ParameterError):
        lpea(facebook, 4, rng, pool="some")


def test_projections_deterministic_per_seed_on_facebook(facebook):
    for fn in (edge_remove, random_add, lpea):
        a = fn(facebook, 32, np.random.default_rng(7))
        b = fn(facebook, 32, np.random.default_rng(7))
        c = fn(facebook, 32, np.random.default_rng(8))
        assert a.same_edges(b)
        assert not a.same_edges(c)
        assert a.degrees().max() <= 32


# --- metrics -------------------------------------------------------------------------------


def test_metrics_by_hand():
    d = np.array([0, 1, 1, 2])
    k = np.array([0, 0, 1, 1])
    assert degree_sequence_mae(d, k) == pytest.approx(0.5)
    assert degree_sequence_mse(d, k) == pytest.approx(0.5)
    # P = (.25, .5, .25), Q = (.5, .5, 0) on k = 0..2: |P - Q| = (.25, 0, .25)
    assert degree_distribution_mae(d, k) == pytest.approx(0.5 / 3)
    assert degree_distribution_mae(d, k, reduce="sum") == pytest.approx(0.5)
    assert kept_edge_ratio(d, k) == pytest.approx(0.5)
    assert kept_edge_ratio(np.zeros(3), np.zeros(3)) == 1.0
    # the common support reaches the larger maximum of either sequence
    assert degree_distribution_mae([0], [3]) == pytest.approx(2 / 4)


def test_metrics_accept_graphs_and_reject_bad_input(facebook):
    kept = random_add(facebook, 16, np.random.default_rng(0))
    assert kept_edge_ratio(facebook, kept) == pytest.approx(kept.edges() / facebook.edges())
    with pytest.raises(ParameterError):
        degree_sequence_mae([1, 2], [1])
    with pytest.raises(ParameterError):
        degree_distribution_mae([1.5], [1])
    with pytest.raises(ParameterError):
        degree_distribution_mae([-1], [1])
    with pytest.raises(ParameterError):
        degree_distribution_mae([1], [1], reduce="max")


# --- seed Table 2 ordering -----------------------------------------------------------------


@pytest.mark.parametrize("theta", [16, 64, 128])
def test_table2_ordering_on_ego_facebook(facebook, theta):
    scores = {m: evaluate(facebook, m, theta, seeds=[0, 1, 2]) for m in METHODS}
    mae = {m: s.seq_mae for m, s in scores.items()}
    ratio = {m: s.kept_ratio for m, s in scores.items()}
    assert min(mae, key=mae.get) == "LL"
    assert max(ratio, key=ratio.get) == "LL"
    # the seed's LL figures (31.02, 13.38, 4.71), 20 runs; ours agree within 5 %
    assert mae["LL"] == pytest.approx({16: 31.02, 64: 13.38, 128: 4.71}[theta], rel=0.05)


@pytest.mark.parametrize("name", ["missing.txt", "missing.txt.gz", ".", "bad.gz", "cut.txt.gz"])
def test_an_unreadable_edge_list_is_one_sentence_naming_the_graph(tmp_path, name):
    """A missing file, a directory or a broken gzip was a FileNotFoundError /
    IsADirectoryError / BadGzipFile / EOFError traceback from `bench cadr --graph`."""
    import gzip

    (tmp_path / "bad.gz").write_bytes(b"not gzip")
    (tmp_path / "cut.txt.gz").write_bytes(gzip.compress(b"0 1\n1 2\n" * 100)[:30])
    spec = str(tmp_path / name)
    with pytest.raises(ParameterError) as info:
        load_graph(spec)
    msg = str(info.value)
    assert info.value.field == "graph" and "cannot read the edge list" in msg, msg
    assert repr(spec) in msg and "barabasi_albert" in msg, msg


def test_an_edge_list_saved_with_a_utf8_bom_loads(tmp_path):
    """Notepad's BOM made the first id '\\ufeff0': 'node ids must be integers'."""
    p = tmp_path / "bom.txt"
    p.write_bytes(b"\xef\xbb\xbf0 1\r\n1 2\r\n")
    g = load_edge_list(p)
    assert g.n == 3 and g.edges() == 2
