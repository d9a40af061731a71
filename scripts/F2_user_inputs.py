"""Held-out user inputs through the public paths: a fuzz battery (helper F, issues 19/20).

Every case is a realistic odd input a user could bring (a graph file, an Occupancy-format
CSV, a stream for ``detect_period``, a mechanism plugin) with the outcome it must have:

* ``ok`` -- it works, and a check on the result holds (the node count of a graph, the
  records of a CSV, the period of a stream...);
* ``refused`` -- a typed error (``ParameterError`` / ``ScenarioError`` / ``OptionError``
  / ``RemoteProtocolError``) naming the field; for a ``ParameterError`` also ``limit`` and
  ``value`` when the raising module has been converted (reported, not failed).

Anything else is a failure: an untyped exception (a traceback for the user), a result
that fails its check (silently wrong), or a result where a refusal was due.

    python scripts/F2_user_inputs.py [--only GROUP ...] [--verbose]

GROUP: graph, occupancy, datasets, sources, period, plugin, cli (default: all).

Exit status 1 when a case fails. Files are written to a temporary folder, nothing else.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import math
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TYPED = ("ParameterError", "ScenarioError", "OptionError", "RemoteProtocolError")


@dataclass(frozen=True)
class Case:
    """One input, the call that takes it through a public path, and its expected outcome."""

    group: str
    name: str
    run: Callable[[], object]
    expect: str  # "ok" or "refused"
    check: Callable[[object], bool] | None = None  # for "ok": the result is sensible


@dataclass(frozen=True)
class Outcome:
    case: Case
    verdict: str  # "pass", "FAIL"
    detail: str
    fields_complete: bool = True  # a refusal carries field, limit and value


def run_case(case: Case) -> Outcome:
    """Run ``case`` and judge it (see the module docstring)."""
    try:
        result = case.run()
    except Exception as error:  # classifying every exception is the point
        kind = type(error).__name__
        typed = any(c.__name__ in TYPED for c in type(error).__mro__)
        field = getattr(error, "field", None)
        complete = not (
            kind == "ParameterError"
            and (getattr(error, "limit", None) is None or getattr(error, "value", None) is None)
        )
        text = f"{kind}: {str(error)[:160]}"
        if not typed:
            tb = traceback.extract_tb(error.__traceback__)[-1]
            return Outcome(case, "FAIL", f"untyped {text} at {tb.filename}:{tb.lineno}")
        if case.expect == "ok":
            return Outcome(case, "FAIL", f"refused a good input: {text}", complete)
        if field is None and kind == "ParameterError":
            return Outcome(case, "FAIL", f"refusal without field: {text}", complete)
        return Outcome(case, "pass", text, complete)
    if case.expect == "refused":
        return Outcome(case, "FAIL", f"accepted, expected a refusal: {_short(result)}")
    if case.check is not None and not case.check(result):
        return Outcome(case, "FAIL", f"wrong result: {_short(result)}")
    return Outcome(case, "pass", f"ok: {_short(result)}")


def _short(result: object) -> str:
    text = repr(result)
    return text if len(text) <= 160 else text[:157] + "..."


# --- graphs ----------------------------------------------------------------------------------


def graph_cases(folder: Path) -> list[Case]:
    """Edge lists through ``devices.graphs.load_graph`` (``bench cadr --graph``, a
    scenario's ``[graph] source``)."""
    from ldpfleet.devices.graphs import load_graph

    def write(name: str, data: bytes | str) -> str:
        path = folder / name
        path.write_bytes(data.encode() if isinstance(data, str) else data)
        return str(path)

    def shape(n: int, m: int) -> Callable[[object], bool]:
        return lambda g: (g.n, g.edges()) == (n, m) and g.check() is None

    def load(name: str, data: bytes | str) -> Callable[[], object]:
        path = write(name, data)
        return lambda: load_graph(path)

    triangle = "1 2\n2 3\n3 1\n"
    cases = [
        ("snap comments", "# Directed graph\n# Nodes: 3 Edges: 3\n# FromNodeId\tToNodeId\n"
         "1\t2\n2\t3\n3\t1\n", "ok", shape(3, 3)),
        ("tsv", "1\t2\n2\t3\n3\t1\n", "ok", shape(3, 3)),
        ("whitespace runs", "  1    2  \n\t2 \t 3\n3 1   \n", "ok", shape(3, 3)),
        ("csv", "1,2\n2,3\n3,1\n", "refused", None),
        ("csv with header", "source,target\n1,2\n2,3\n", "refused", None),
        ("weighted triples", "1 2 0.5\n2 3 1.5\n", "refused", None),
        ("duplicate and reversed edges", "1 2\n2 1\n1 2\n2 3\n", "ok", shape(3, 2)),
        ("self loops", "1 1\n1 2\n3 3\n", "ok", shape(3, 1)),
        ("non-contiguous ids", "10 2000\n2000 7\n", "ok", shape(3, 2)),
        ("string ids", "alice bob\nbob carol\n", "ok", shape(3, 2)),
        ("huge integer ids", "9223372036854775806 1\n1 9223372036854775805\n", "ok",
         shape(3, 2)),
        ("ids beyond int64", "99999999999999999999 1\n1 2\n", "refused", None),
        ("negative ids", "-1 -2\n-2 5\n", "ok", shape(3, 2)),
        ("single edge", "0 1\n", "ok", shape(2, 1)),
        ("empty file", "", "refused", None),
        ("only comments", "# nothing\n", "refused", None),
        ("only self loops", "1 1\n2 2\n", "refused", None),
        ("isolated node alone on a line", "1 2\n3\n", "refused", None),
        ("weighted triple, then a lone id", "1 2 1\n5\n", "refused", None),  # 4 tokens
        ("digit grouping 1_000", "1_000 2\n2 3\n", "refused", None),
        ("a 100 kB junk token", "1 2\n" + "x" * 100_000 + " 3\n", "refused", None),
        ("URL labels", "https://a.org/" + "p" * 200 + " b\nb c\n", "ok", shape(3, 2)),
        ("isolated node as a self loop", "1 2\n3 3\n", "ok", shape(3, 1)),
        ("crlf", triangle.replace("\n", "\r\n"), "ok", shape(3, 3)),
        ("utf-8 bom", "\ufeff" + triangle, "ok", shape(3, 3)),
        ("utf-16 bom", triangle.encode("utf-16"), "ok", shape(3, 3)),
        ("no final newline", "1 2\n2 3", "ok", shape(3, 2)),
        ("trailing comment", "1 2 # friends\n2 3\n", "ok", shape(3, 2)),
        ("konect header", "% sym unweighted\n% 2 3 3\n1 2\n2 3\n", "ok", shape(3, 2)),
        ("float ids (read as labels)", "1.0 2.0\n2.0 3.0\n", "ok", shape(3, 2)),
        ("mixed ints and labels", "1 2\nalice 3\n", "refused", None),
        ("latin-1 labels", "caf\xe9 b\nb c\n".encode("latin-1"), "refused", None),
        ("nul bytes", b"1 2\n\x00\x00\n", "refused", None),
        ("binary noise", bytes(range(256)) * 4, "refused", None),
    ]  # fmt: skip
    out = [
        Case("graph", name, load(f"g{k}.txt", data), expect, check)
        for k, (name, data, expect, check) in enumerate(cases)
    ]
    gz = write("g-gz.txt.gz", gzip.compress(triangle.encode()))
    out.append(Case("graph", "gzip", lambda: load_graph(gz), "ok", shape(3, 3)))
    gz_named = write("g-gz-nosuffix.txt", gzip.compress(triangle.encode()))
    out.append(
        Case("graph", "gzip without suffix", lambda: load_graph(gz_named), "ok", shape(3, 3))
    )
    bz = write("g.txt.bz2", bz2.compress(triangle.encode()))
    out.append(Case("graph", "bzip2", lambda: load_graph(bz), "ok", shape(3, 3)))
    cut = write("g-cut.txt.gz", gzip.compress(triangle.encode())[:12])
    out.append(Case("graph", "truncated gzip", lambda: load_graph(cut), "refused"))
    fake = write("g-fake.gz", triangle)
    out.append(Case("graph", "named .gz, plain text", lambda: load_graph(fake), "refused"))
    missing = str(folder / "does-not-exist.txt")
    out.append(Case("graph", "missing file", lambda: load_graph(missing), "refused"))
    out.append(Case("graph", "a folder", lambda: load_graph(str(folder)), "refused"))
    big = "\n".join(f"{i} {i + 1}" for i in range(0, 20000, 2)) + "\n"
    out.append(Case("graph", "10,000 disjoint edges", load("g-big.txt", big), "ok",
                    shape(20000, 10000)))  # fmt: skip
    from ldpfleet.devices.graphs import Graph, generate

    code = [  # graphs built in code (Graph.from_edges, generate)
        ("from_edges float endpoints", lambda: Graph.from_edges(3, np.array([0.5]), [1])),
        ("from_edges NaN endpoint", lambda: Graph.from_edges(3, [0], np.array([np.nan]))),
        ("from_edges n = -1", lambda: Graph.from_edges(-1, [], [])),
        ("from_edges n = 2**40", lambda: Graph.from_edges(2**40, [0], [1])),
        ("neighbours('1')", lambda: Graph.from_edges(3, [0], [1]).neighbours("1")),
        ("generate seed 'x'", lambda: generate("barabasi_albert", 10, seed="x", m=2)),
        ("empty graph spec", lambda: load_graph("")),
    ]
    out += [Case("graph", name, run, "refused") for name, run in code]
    out.append(Case("graph", "from_edges integral floats",
                    lambda: Graph.from_edges(3, np.array([0.0, 1.0]), [1, 2]), "ok",
                    shape(3, 2)))  # fmt: skip
    out.append(Case("graph", "generator spec, m >= n",
                    lambda: load_graph("barabasi_albert:n=3,m=5"), "refused"))  # fmt: skip
    out.append(Case("graph", "generator spec, p nan",
                    lambda: load_graph("erdos_renyi:n=30,p=nan"), "refused"))  # fmt: skip
    out.append(Case("graph", "generator spec, n negative",
                    lambda: load_graph("erdos_renyi:n=-3,p=0.5"), "refused"))  # fmt: skip
    return out


# --- Occupancy-format CSVs -------------------------------------------------------------------

OCC_HEADER = ["date", "Temperature", "Humidity", "Light", "CO2", "HumidityRatio", "Occupancy"]


def _occupancy_rows(records: int, seed: int) -> list[list[str]]:
    """``records`` rows of plausible Occupancy data, one a minute, occupancy in blocks of
    60 minutes (so windows of both classes, in time order)."""
    rng = np.random.default_rng(seed)
    rows = []
    for k in range(records):
        occupied = (k // 60) % 2
        minute = f"2015-02-{4 + k // 1440:02d} {(k // 60) % 24:02d}:{k % 60:02d}:00"
        rows.append([
            minute,
            f"{21 + occupied + rng.normal(0, 0.2):.3f}",
            f"{27 + rng.normal(0, 0.5):.3f}",
            f"{400 * occupied + abs(rng.normal(0, 20)):.1f}",
            f"{450 + 300 * occupied + rng.normal(0, 15):.1f}",
            f"{0.0045 + rng.normal(0, 1e-4):.6f}",
            str(occupied),
        ])  # fmt: skip
    return rows


def _csv(header: list[str], rows: list[list[str]], sep: str = ",", end: str = "\n",
         quote: bool = False) -> str:  # fmt: skip
    def cell(value: str) -> str:
        return f'"{value}"' if quote else value

    return "".join(sep.join(cell(v) for v in row) + end for row in [header, *rows])


def occupancy_cases(folder: Path) -> list[Case]:
    """Occupancy-format files through ``bench gcdp --train-file/--test-file``'s reader
    (``app.gcdp_datasets.occupancy_windows``: loading, windowing, the time-order and class
    checks)."""
    from ldpfleet.app.gcdp_datasets import occupancy_windows

    rows = _occupancy_rows(600, seed=1)
    good = _csv(OCC_HEADER, rows)
    test_path = folder / "occ-test.csv"
    test_path.write_text(_csv(OCC_HEADER, _occupancy_rows(300, seed=2)))

    def windows(name: str, text: str | bytes, as_test: bool = False) -> Callable[[], object]:
        path = folder / name
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        if as_test:
            return lambda: occupancy_windows(None, 30, train_file=test_path, test_file=path)
        return lambda: occupancy_windows(None, 30, train_file=path, test_file=test_path)

    def windows_of(count: int) -> Callable[[object], bool]:
        def check(w) -> bool:
            return (
                w.train_f.shape[1] == 5
                and np.all(np.isfinite(w.train_f))
                and w.train_f.shape[0] == count  # refit: the whole training file
                and w.test_f.shape[0] == 10
            )

        return check

    reordered = [OCC_HEADER[i] for i in (6, 3, 0, 5, 1, 4, 2)]
    reordered_rows = [[r[OCC_HEADER.index(c)] for c in reordered] for r in rows]
    extra = [*OCC_HEADER, "Building", "Note"]
    extra_rows = [[*r, "B7", "ok, fine"] for r in rows]
    missing_value = [list(r) for r in rows]
    missing_value[7][2] = ""
    nan_value = [list(r) for r in rows]
    nan_value[9][1] = "NaN"
    us_dates = [[_us_date(r[0]), *r[1:]] for r in rows]
    one_class = [[*r[:-1], "1"] for r in rows]
    bad_label = [list(r) for r in rows]
    bad_label[5][-1] = "2"
    shuffled = list(rows)
    np.random.default_rng(3).shuffle(shuffled)
    no_date = [r[1:] for r in rows]
    row_ids = [[str(k + 1), *r] for k, r in enumerate(rows)]
    backwards = [list(r) for r in rows]
    backwards[100][0], backwards[101][0] = backwards[101][0], backwards[100][0]
    cases = [
        ("plain csv", good, "ok", windows_of(20)),
        ("shipped layout (quoted, row ids)", _csv(OCC_HEADER, row_ids, quote=True)
         .replace('"date"', '"date"', 1), "ok", windows_of(20)),
        ("reordered columns", _csv(reordered, reordered_rows), "ok", windows_of(20)),
        ("extra columns, quoted comma", _csv(extra, [[*r[:-1], f'"{r[-1]}"'] for r in
                                                     extra_rows]), "ok", windows_of(20)),
        ("crlf", _csv(OCC_HEADER, rows, end="\r\n"), "ok", windows_of(20)),
        ("utf-8 bom", "\ufeff" + good, "ok", windows_of(20)),
        ("semicolon", _csv(OCC_HEADER, rows, sep=";"), "ok", windows_of(20)),
        ("tab", _csv(OCC_HEADER, rows, sep="\t"), "ok", windows_of(20)),
        ("quoted everything", _csv(OCC_HEADER, rows, quote=True), "ok", windows_of(20)),
        ("no date column", _csv(OCC_HEADER[1:], no_date), "ok", windows_of(20)),
        ("us dates (m/d/Y H:M)", _csv(OCC_HEADER, us_dates), "ok", windows_of(20)),
        ("gzip", gzip.compress(good.encode()), "ok", windows_of(20)),
        ("missing value", _csv(OCC_HEADER, missing_value), "refused", None),
        ("NaN value", _csv(OCC_HEADER, nan_value), "refused", None),
        ("one-row file", _csv(OCC_HEADER, rows[:1]), "refused", None),
        ("header only", _csv(OCC_HEADER, []), "refused", None),
        ("empty file", "", "refused", None),
        ("all one class", _csv(OCC_HEADER, one_class), "refused", None),
        ("label 2", _csv(OCC_HEADER, bad_label), "refused", None),
        ("shuffled rows", _csv(OCC_HEADER, shuffled), "refused", None),
        ("shuffled rows, no date", _csv(OCC_HEADER[1:], [r[1:] for r in shuffled]),
         "refused", None),
        ("dates going back", _csv(OCC_HEADER, backwards), "refused", None),
        ("missing Occupancy column", _csv(OCC_HEADER[:-1], [r[:-1] for r in rows]),
         "refused", None),
        ("lower-case header", _csv([c.lower() for c in OCC_HEADER], rows), "refused", None),
        ("short row", _csv(OCC_HEADER, [*rows[:10], rows[10][:-2], *rows[11:]]), "refused",
         None),
        ("latin-1 text", good.replace("date", "dat\xe9", 1).encode("latin-1"), "refused", None),
        ("xlsx-like zip", b"PK\x03\x04" + b"\x00" * 100, "refused", None),
        ("excel comma decimals, semicolons",
         _csv(OCC_HEADER, [[v.replace(".", ",") for v in r] for r in rows], sep=";"),
         "refused", None),
    ]  # fmt: skip
    out = [
        Case("occupancy", name, windows(f"occ{k}.csv", text), expect, check)
        for k, (name, text, expect, check) in enumerate(cases)
    ]
    out.append(Case("occupancy", "one-class test file",
                    windows("occ-test-one.csv", _csv(OCC_HEADER, one_class[:300]), True),
                    "refused"))  # fmt: skip
    out.append(Case("occupancy", "missing file", lambda: occupancy_windows(
        None, 30, train_file=folder / "nope.csv", test_file=test_path), "refused"))  # fmt: skip
    return out


def _occupancy_arrays(nan_test: bool = False) -> list[np.ndarray]:
    """(train_x, train_y, test_x, test_y) of :func:`_occupancy_rows` as arrays."""
    out = []
    for records, seed in ((600, 1), (300, 2)):
        rows = _occupancy_rows(records, seed)
        out += [np.array([[float(v) for v in r[1:6]] for r in rows]),
                np.array([int(r[6]) for r in rows])]  # fmt: skip
    if nan_test:
        out[2][12, 3] = np.nan
    return out


def _us_date(iso: str) -> str:
    day, time = iso.split(" ")
    year, month, dom = day.split("-")
    return f"{int(month)}/{int(dom)}/{year} {time[:5]}"


# --- the other data sets of bench gcdp: their loaders and prepare(data=...) ---------------


def dataset_cases(folder: Path) -> list[Case]:
    """``app.gcdp_datasets``'s documented loaders (``load_wisdm_arff``, ``load_intel``) on
    users' files and ``prepare(dataset, data=...)`` on users' arrays."""
    from ldpfleet.app.gcdp_datasets import (
        WISDM_FEATURES,
        WISDM_PROTECTED,
        WisdmTable,
        load_intel,
        load_wisdm_arff,
        prepare,
    )

    arff = (
        '@relation x\n@attribute "user" numeric\n@attribute "YAVG" numeric\n'
        "@attribute class {A,B}\n@data\n1,0.5,A\n30,0.7,B\n"
    )

    def wisdm_file(name: str, text: str | bytes) -> Callable[[], object]:
        path = folder / f"{name}.arff"
        path.write_bytes(text.encode() if isinstance(text, str) else text)
        return lambda: load_wisdm_arff(path)

    rng = np.random.default_rng(5)
    intel = folder / "intel"
    intel.mkdir()
    for name in ("Temperature", "Humidity"):
        for part, steps in (("Train", 40), ("Test", 20)):
            cells = 20 + rng.normal(0, 1, (10, steps))
            np.savetxt(intel / f"intel{name}{part}.csv", cells, delimiter=",")
    arrays = [20 + 30 * (k >= 2) + rng.normal(0, 1, (10, s)) for k, s in enumerate((40, 20) * 2)]
    with_nan = [a.copy() for a in arrays]
    with_nan[1][2, 3] = np.nan
    columns = {name: rng.random(80) for name in (*WISDM_FEATURES, WISDM_PROTECTED)}
    users = np.array([1] * 30 + [2] * 30 + [30] * 20)
    activity = np.array(["Walking", "Jogging"] * 40)

    def table(**changes) -> WisdmTable:
        cols = {k: v for k, v in {**columns, **changes}.items() if v is not None}
        return WisdmTable(users, cols, activity)

    def wisdm_ok(t) -> bool:
        return t.user.tolist() == [1, 30] and t.activity.tolist() == ["A", "B"]

    return [
        Case("datasets", "arff plain", wisdm_file("a0", arff), "ok", wisdm_ok),
        Case("datasets", "arff crlf", wisdm_file("a1", arff.replace("\n", "\r\n")), "ok",
             wisdm_ok),
        Case("datasets", "arff bom", wisdm_file("a2", "\ufeff" + arff), "ok", wisdm_ok),
        Case("datasets", "arff no user", wisdm_file("a3", arff.replace('"user"', '"id"')),
             "refused"),
        Case("datasets", "arff word for a number", wisdm_file("a4", arff.replace("0.5", "x")),
             "refused"),
        Case("datasets", "arff sparse row",
             wisdm_file("a5", arff.replace("1,0.5,A", "{0 1, 1 0.5, 2 A}")), "refused"),
        Case("datasets", "arff user id 1.5", wisdm_file("a6", arff.replace("1,0.5", "1.5,0.5")),
             "refused"),
        Case("datasets", "arff latin-1",
             wisdm_file("a7", arff.replace("class", "cl\xe9").encode("latin-1")), "refused"),
        Case("datasets", "arff missing", lambda: load_wisdm_arff(folder / "nope.arff"),
             "refused"),
        Case("datasets", "intel folder", lambda: load_intel(intel), "ok",
             lambda a: [x.shape for x in a] == [(10, 40), (10, 20), (10, 40), (10, 20)]),
        Case("datasets", "intel missing folder", lambda: load_intel(folder / "nope"),
             "refused"),
        Case("datasets", "prepare intel arrays", lambda: prepare("intel", data=arrays), "ok",
             lambda p: np.all(np.isfinite(p.test_f))),
        Case("datasets", "prepare intel NaN", lambda: prepare("intel", data=with_nan),
             "refused"),
        Case("datasets", "prepare intel 9 motes",
             lambda: prepare("intel", data=[a[:9] for a in arrays]), "refused"),
        Case("datasets", "prepare wisdm table", lambda: prepare("wisdm", data=table()), "ok",
             lambda p: p.test_f.shape == (20, 6)),
        Case("datasets", "prepare wisdm no ZAVG", lambda: prepare("wisdm", data=table(
            ZAVG=None)), "refused"),
        Case("datasets", "prepare wisdm YPEAK all NaN", lambda: prepare("wisdm", data=table(
            YPEAK=np.full(80, np.nan))), "refused"),
        Case("datasets", "prepare wisdm one class", lambda: prepare("wisdm", data=WisdmTable(
            users, columns, np.array(["Walking"] * 80))), "refused"),
        Case("datasets", "prepare unknown dataset", lambda: prepare("mnist"), "refused"),
        Case("datasets", "prepare occupancy NaN test reading", lambda: prepare(
            "occupancy", data=_occupancy_arrays(nan_test=True)), "refused"),
        Case("datasets", "prepare occupancy arrays", lambda: prepare(
            "occupancy", data=_occupancy_arrays()), "ok",
             lambda p: np.all(np.isfinite(p.test_f))),
    ]  # fmt: skip


# --- scenario CSV sources: the same readings in other spellings ----------------------------


def source_cases(folder: Path) -> list[Case]:
    """A scenario's ``[source] kind = "csv"`` file through ``ldpfleet.run`` on the memory
    transport. Every accepted spelling of the same readings (CRLF, a BOM, ``;``, quotes,
    gzip, a leading row id...) must give the per-device true means of the plain file, bit
    for bit: the file was read right, not just read."""
    import ldpfleet

    rng = np.random.default_rng(0)
    n = 200
    light = np.round(np.abs(rng.normal(300, 150, n)), 2)
    co2 = np.round(rng.normal(600, 50, n), 1)
    dates = [f"2015-02-04 {k // 60:02d}:{k % 60:02d}:00" for k in range(n)]
    header = ["date", "Light", "CO2"]
    rows = [[dates[k], str(light[k]), str(co2[k])] for k in range(n)]

    def run(name: str, data: str | bytes) -> Callable[[], list[float]]:
        def go() -> list[float]:
            path = folder / f"src-{name}.csv"
            path.write_bytes(data.encode() if isinstance(data, str) else data)
            spec = {
                "scenario": {"name": "f2-source", "seed": 1},
                "fleet": {"devices": 2},
                "stream": {"steps": 50, "eps": 2.0, "w": 5},
                "source": {"kind": "csv", "path": str(path), "column": "Light",
                           "bounds": [0.0, 1700.0]},
            }  # fmt: skip
            out = folder / f"run-src-{name}"
            results = ldpfleet.run(ldpfleet.parse_scenario(spec), broker="memory", out_dir=out)
            return [d["true_mean"] for d in results["per_device"].values()]

        return go

    plain = _csv(header, rows)
    reference: list[list[float]] = []

    def same_as_plain(means: list[float]) -> bool:
        if not reference:
            reference.append(run("plain", plain)())
        return means == reference[0]

    missing = [list(r) for r in rows]
    missing[7][1] = ""
    spellings = [
        ("crlf", _csv(header, rows, end="\r\n")),
        ("bom", "\ufeff" + plain),
        ("semicolon", _csv(header, rows, sep=";")),
        ("tab", _csv(header, rows, sep="\t")),
        ("quoted", _csv(header, rows, quote=True)),
        ("row ids (UCI layout)", _csv(header, [[str(k + 1), *r] for k, r in enumerate(rows)],
                                      quote=True)),
        ("gzip", gzip.compress(plain.encode())),
        ("cr line ends", _csv(header, rows, end="\r")),
        ("padded header", _csv(["date", " Light ", "CO2"], rows)),
        ("trailing separator", plain.replace("\n", ",\n")),
        ("blank lines", plain.replace("\n", "\n\n")),
        ("scientific notation", _csv(header, [[r[0], f"{float(r[1]):.6e}", r[2]] for r in rows])),
        ("utf-16", plain.encode("utf-16")),  # with its BOM: read since 2026-12-06 (helper P)
    ]  # fmt: skip
    refusals = [
        ("missing value", _csv(header, missing)),
        ("header only", _csv(header, [])),
        ("empty", ""),
        ("decimal commas", _csv(header, [[v.replace(".", ",") for v in r] for r in rows], ";")),
        ("no such column", _csv(["date", "Lux", "CO2"], rows)),
        ("column named twice", _csv(["date", "Light", "Light"], rows)),
        ("latin-1", _csv(["dat\xe9", "Light", "CO2"], rows).encode("latin-1")),
    ]  # fmt: skip
    return [
        *(Case("sources", name, run(f"ok{k}", data), "ok", same_as_plain)
          for k, (name, data) in enumerate(spellings)),
        *(Case("sources", name, run(f"bad{k}", data), "refused")
          for k, (name, data) in enumerate(refusals)),
    ]  # fmt: skip


# --- streams for detect_period ---------------------------------------------------------------


def period_cases() -> list[Case]:
    """Streams through ``ldpfleet.detect_period``."""
    import ldpfleet

    rng = np.random.default_rng(20261205)
    t = np.arange(480)
    periodic = 0.5 + 0.4 * np.sin(2 * np.pi * t / 24) + rng.normal(0, 0.1, t.size)

    def period_is(expected: int | None) -> Callable[[object], bool]:
        return lambda est: est.period == expected

    def abstains_or_any(est) -> bool:
        return est.period is None or isinstance(est.period, int)

    class ArrayLike:
        """A pandas-Series-like object: ``__array__`` and ``__len__``, no list."""

        def __init__(self, values: np.ndarray) -> None:
            self._values = values

        def __array__(self, dtype=None, copy=None):
            return self._values if dtype is None else self._values.astype(dtype)

        def __len__(self) -> int:
            return self._values.size

    with_nan = periodic.copy()
    with_nan[17] = np.nan
    with_inf = periodic.copy()
    with_inf[3] = np.inf
    cases = [
        ("float64 array", periodic, "ok", period_is(24)),
        ("python list", periodic.tolist(), "ok", period_is(24)),
        ("tuple", tuple(periodic.tolist()), "ok", period_is(24)),
        ("float32", periodic.astype(np.float32), "ok", period_is(24)),
        ("int array", np.round(periodic * 100).astype(np.int64), "ok", period_is(24)),
        ("bool array", periodic > 0.5, "ok", abstains_or_any),
        ("1e300 scale", periodic * 1e300, "ok", period_is(24)),
        ("1e-300 scale", periodic * 1e-300, "ok", period_is(24)),
        ("negative values", periodic - 10, "ok", period_is(24)),
        ("column vector (n, 1)", periodic[:, None], "refused", None),
        ("2-D (2, n)", np.stack([periodic, periodic]), "refused", None),
        ("0-d scalar", np.float64(1.0), "refused", None),
        ("NaN", with_nan, "refused", None),
        ("inf", with_inf, "refused", None),
        # too short for any period (max_period = n // min_cycles < 2): an abstention, as
        # for a fleet's short streams under cpr_many, not a refusal
        ("length 0", [], "ok", period_is(None)),
        ("length 1", [0.5], "ok", period_is(None)),
        ("length 2", [0.5, 0.6], "ok", period_is(None)),
        ("length 3", [0.5, 0.6, 0.7], "ok", period_is(None)),
        ("constant", np.full(480, 0.3), "ok", period_is(None)),
        ("all zero", np.zeros(480), "ok", period_is(None)),
        ("strings", ["a"] * 480, "refused", None),
        ("numeric strings (a CSV column)", [str(v) for v in periodic], "ok", period_is(24)),
        ("complex", periodic.astype(complex), "refused", None),
        ("object array with None", np.array([*periodic[:-1], None], dtype=object), "refused",
         None),
        ("array-like (__array__)", ArrayLike(periodic), "ok", period_is(24)),
        ("generator", (v for v in periodic), "refused", None),
        ("masked array", np.ma.masked_array(periodic, mask=t == 5), "refused", None),
        ("white noise", rng.normal(0, 1, 480), "ok", period_is(None)),
        # a counter-like offset (float64 keeps 1e-7 of 1e9 exactly enough for a 0.4 swing)
        ("int values offset 1e9", 10**9 + np.round(periodic * 100).astype(np.int64), "ok",
         period_is(24)),
    ]  # fmt: skip
    return [
        Case("period", name, (lambda s=stream: ldpfleet.detect_period(s)), expect, check)
        for name, stream, expect, check in cases
    ]


# --- user mechanism plugins ------------------------------------------------------------------


PLUGINS = '''
import math
import numpy as np

class Base:
    """Warner RR on a bit drawn with probability x (the docs' BitRR): a complete contract."""
    def __init__(self, eps):
        self.eps = eps
        self.keep = math.exp(eps) / (1 + math.exp(eps))
        self.calls = 0
    def perturb(self, x, rng):
        self.calls += 1
        bit = rng.random(np.shape(x)) < x
        flip = rng.random(np.shape(x)) >= self.keep
        return (bit ^ flip).astype(float)
    def in_domain(self, y):
        y = np.asarray(y)
        return (y == 0.0) | (y == 1.0)
    def estimate_mean(self, y):
        return float((np.mean(y) - (1 - self.keep)) / (2 * self.keep - 1))

class NoEps(Base):
    """Declares no eps attribute (optional in the contract)."""
    def __init__(self, eps):
        super().__init__(eps)
        del self.eps

class OutOfDomain(Base):
    """Reports 7.0 always: refused at load."""
    def perturb(self, x, rng):
        return np.full(np.shape(x), 7.0)

class OutOfDomainLater(Base):
    """Honest on the load-time probe; a device's last 10 of 40 reports 7.0 (out of in_domain)."""
    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        if np.size(x) == 40:  # a device's whole stream (memory transport), not the probe
            y = y.copy()
            y[-10:] = 7.0
        return y

class Raises(Base):
    def perturb(self, x, rng):
        raise RuntimeError("boom")

class RaisesLater(Base):
    def perturb(self, x, rng):
        y = super().perturb(x, rng)
        if np.size(x) == 40:  # a device's whole stream (memory transport), not the probe
            raise RuntimeError("boom later")
        return y

class NanMean(Base):
    """estimate_mean answers NaN once reports arrive in bulk (the probe passes)."""
    def estimate_mean(self, y):
        return float("nan") if np.size(y) == 40 else super().estimate_mean(y)

class WrongEps(Base):
    def __init__(self, eps):
        super().__init__(eps)
        self.eps = 2 * eps

class CtorRaises(Base):
    def __init__(self, eps):
        raise ZeroDivisionError("no")

not_a_class = 3
'''

PLUGIN_SCENARIO = {
    "scenario": {"name": "f2-plugin", "seed": 1},
    "fleet": {"devices": 4},
    "stream": {"steps": 40, "eps": 2.0, "w": 5},
    "source": {"kind": "synthetic", "shape": "sine", "period": 10, "bounds": [-1.0, 1.0]},
}


def plugin_cases(folder: Path) -> list[Case]:
    """User mechanisms through ``ldpfleet.get_mechanism``, ``ldpfleet.run_audit`` and a
    scenario run on the memory transport (``ldpfleet.run``)."""
    import ldpfleet

    (folder / "f2_user_plugins.py").write_text(PLUGINS)
    sys.path.insert(0, str(folder))

    def run(name: str) -> Callable[[], object]:
        def go() -> dict:
            spec = {
                **PLUGIN_SCENARIO,
                "stream": {**PLUGIN_SCENARIO["stream"], "mechanism": f"f2_user_plugins:{name}"},
            }
            out = folder / f"run-{name}"
            return ldpfleet.run(ldpfleet.parse_scenario(spec), broker="memory", out_dir=out)

        return go

    def clean(results: dict) -> bool:
        return (results["reports_rejected"], results["reports_lost"]) == (0, 0) and results[
            "reports_received"
        ] == 4 * 40 // 5  # one report per window of w = 5 steps

    def none_aggregated(results: dict) -> bool:
        """Every bad report is refused and counted, none reaches a mean."""
        means = [d.get("mean_estimate") for d in results["per_device"].values()]
        counted = results["reports_rejected"] + len(results["fleet"].get("device_errors", []))
        return counted > 0 and all(m is None or math.isfinite(m) for m in means)

    out = [
        Case("plugin", "get_mechanism Base", lambda: ldpfleet.get_mechanism(
            "f2_user_plugins:Base", 1.0), "ok"),
        Case("plugin", "get_mechanism NoEps (eps optional)", lambda: ldpfleet.get_mechanism(
            "f2_user_plugins:NoEps", 1.0), "ok"),
        Case("plugin", "run NoEps", run("NoEps"), "ok", clean),
        Case("plugin", "run_audit NoEps (an honest eps-LDP mechanism)", lambda: ldpfleet.run_audit(
            "f2_user_plugins:NoEps", 1.0, trials=2000), "ok",
             lambda r: r.verdict != "violation"),
        Case("plugin", "run OutOfDomainLater", run("OutOfDomainLater"), "ok", none_aggregated),
        Case("plugin", "run RaisesLater", run("RaisesLater"), "ok", none_aggregated),
        Case("plugin", "run NanMean", run("NanMean"), "ok",
             lambda r: any("estimate_mean" in w for w in r.get("warnings", []))),
    ]  # fmt: skip
    for name in ("OutOfDomain", "Raises", "WrongEps", "CtorRaises", "not_a_class", "Missing"):
        spec = f"f2_user_plugins:{name}"
        out.append(Case("plugin", f"get_mechanism {name}",
                        lambda s=spec: ldpfleet.get_mechanism(s, 1.0), "refused"))  # fmt: skip
        out.append(Case("plugin", f"run {name}", run(name), "refused"))
    out.append(Case("plugin", "run_audit OutOfDomain", lambda: ldpfleet.run_audit(
        "f2_user_plugins:OutOfDomain", 1.0, trials=200), "refused"))  # fmt: skip
    out.append(Case("plugin", "no such module",
                    lambda: ldpfleet.get_mechanism("f2_nope:X", 1.0), "refused"))  # fmt: skip
    out.append(Case("plugin", "eps nan", lambda: ldpfleet.get_mechanism(
        "piecewise", float("nan")), "refused"))  # fmt: skip
    return out


# --- the command line ------------------------------------------------------------------------


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str


def _cli(*args: str, cwd: Path | None = None, home: Path | None = None) -> CliResult:
    """``ldpfleet ARGS`` in a child process (this interpreter's), at most 300 s; ``home``
    is its ``HOME``."""
    import os
    import subprocess

    command = [sys.executable, "-m", "ldpfleet.app.cli", *args]
    env = {**os.environ, "HOME": str(home)} if home is not None else None
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=cwd, env=env)
    return CliResult(done.returncode, done.stdout, done.stderr)


def _exit(code: int) -> Callable[[CliResult], bool]:
    """The exit status is ``code``, and no traceback reached the user."""
    return lambda r: r.code == code and "Traceback" not in r.stderr + r.stdout


def _nonprivate_f1_above(floor: float) -> Callable[[CliResult], bool]:
    """Exit 0, and the non-private F1 of the synthetic Occupancy files (occupied: Light
    +400 lux, CO2 +300 ppm, 20+ sigma apart) above ``floor``: the file was read right."""

    def check(result: CliResult) -> bool:
        import json

        if not _exit(0)(result):
            return False
        return json.loads(result.stdout)["f1"]["NonPrivate"]["1.0"] > floor

    return check


def cli_cases(folder: Path) -> list[Case]:
    """The same odd inputs through the commands (``bench cadr --graph``, ``bench gcdp
    --train-file/--test-file``, ``run FILE -b memory``): exit 0 with a result, or exit 2
    with a sentence; never a traceback."""
    odd_graph = folder / "odd-graph.txt"  # BOM, both comment kinds, CRLF, TABs, duplicates
    lines = ["\ufeff# my graph", "% made by hand"]
    for i in range(60):
        for j in ((i * 7 + 1) % 60, (i * 13 + 5) % 60, (i + 1) % 60):
            lines.append(f"{1000 + i}\t{1000 + j}" if i % 2 else f"{1000 + j} {1000 + i}")
    odd_graph.write_bytes(("\r\n".join(lines) + "\r\n").encode())
    weighted = folder / "weighted.txt"
    weighted.write_text("1 2 0.5\n2 3 1.0\n")
    balanced = folder / "balanced.txt"
    balanced.write_text("1 2 1\n5\n")
    empty = folder / "empty.txt"
    empty.write_text("")
    train, test = folder / "train.csv", folder / "test.csv"
    train.write_bytes(("\ufeff" + _csv(OCC_HEADER, _occupancy_rows(600, 1), end="\r\n")).encode())
    test.write_text(_csv(OCC_HEADER, _occupancy_rows(300, 2), sep=";"))
    one_class = folder / "one-class.csv"
    one_class.write_text(_csv(OCC_HEADER, [[*r[:-1], "0"] for r in _occupancy_rows(300, 2)]))

    def scenario(name: str, graph: Path) -> str:
        path = folder / f"{name}.toml"
        path.write_text(
            f'[scenario]\nname = "{name}"\nseed = 0\n\n[graph]\nsource = "{graph}"\n\n'
            '[cadr]\nmethod = "ll"\neps = 3.0\nalpha = 0.1\n'
        )
        return str(path)

    gcdp = ("bench", "gcdp", "--eps", "1", "--draws", "1", "--method", "NonPrivate,GC-DP")
    runs = [
        ("bench cadr odd graph", ("bench", "cadr", "--graph", str(odd_graph), "--runs", "1"),
         _exit(0)),
        ("bench cadr weighted", ("bench", "cadr", "--graph", str(weighted)), _exit(2)),
        ("bench cadr balanced widths", ("bench", "cadr", "--graph", str(balanced)), _exit(2)),
        ("bench cadr empty", ("bench", "cadr", "--graph", str(empty)), _exit(2)),
        ("run [graph] odd graph", ("run", scenario("odd", odd_graph), "-b", "memory", "-o",
                                   str(folder / "run-odd")), _exit(0)),
        ("run [graph] weighted", ("run", scenario("weighted", weighted), "-b", "memory", "-o",
                                  str(folder / "run-w")), _exit(2)),
        ("bench gcdp odd files", (*gcdp, "--train-file", str(train), "--test-file", str(test)),
         _nonprivate_f1_above(90.0)),
        ("bench gcdp one-class test", (*gcdp, "--train-file", str(train), "--test-file",
                                       str(one_class)), _exit(2)),
        ("bench gcdp missing file", (*gcdp, "--train-file", str(folder / "nope.csv")),
         _exit(2)),
        ("bench gcdp graph as csv", (*gcdp, "--train-file", str(odd_graph)), _exit(2)),
    ]  # fmt: skip
    cases = [
        Case("cli", name, (lambda a=args: _cli(*a, cwd=folder)), "ok", check)
        for name, args, check in runs
    ]
    tilde = (*gcdp, "--train-file=~/train.csv", "--test-file=~/test.csv")  # no shell expands
    cases.append(Case("cli", "bench gcdp --train-file=~/...", lambda: _cli(
        *tilde, cwd=folder, home=folder), "ok", _nonprivate_f1_above(90.0)))  # fmt: skip
    return cases


# --- main ------------------------------------------------------------------------------------

GROUPS = {
    "graph": graph_cases,
    "occupancy": occupancy_cases,
    "datasets": dataset_cases,
    "sources": source_cases,
    "period": lambda folder: period_cases(),
    "plugin": plugin_cases,
    "cli": cli_cases,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=sorted(GROUPS), action="append")
    parser.add_argument("--verbose", action="store_true", help="print passing cases too")
    args = parser.parse_args(argv)
    failures = incomplete = total = 0
    with tempfile.TemporaryDirectory(prefix="F2-") as tmp:
        for group in args.only or list(GROUPS):
            for case in GROUPS[group](Path(tmp)):
                outcome = run_case(case)
                total += 1
                failures += outcome.verdict == "FAIL"
                incomplete += not outcome.fields_complete
                mark = "" if outcome.fields_complete else " [no limit/value]"
                if outcome.verdict == "FAIL" or args.verbose or mark:
                    print(f"{outcome.verdict:4} {group:9} {case.name:38} {outcome.detail}{mark}")
    print(f"{total} cases: {total - failures} pass, {failures} FAIL; "
          f"{incomplete} refusals without limit/value")  # fmt: skip
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
