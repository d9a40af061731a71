"""A new user's first day with the newest features: a hostile-but-plausible battery (helper B,
2026-12-07, claim R7).

The features landed after claim R7's 186-case battery (scripts/F2_user_inputs.py) and never
red-teamed by someone who did not write them:

* ``[cadr] dropout`` / ``dropout_stage`` (scenarios/cadr_dropout.py, docs/cadr.md "Dropouts");
* decimal marks and digits of other scripts, integers beyond 2**53, a trailing Ctrl-Z, and
  one table of compressed files (devices/compressed.py) for CSV sources and ``[graph]`` edge
  lists;
* user mechanisms (plugins) as ``"module:Class"``: raising, NaN/inf, wrong types, state,
  slowness, in a scenario and under ``ldpfleet.run_audit``.

Every case goes through a public path (``ldpfleet.parse_scenario``, ``ldpfleet.run`` on the
memory transport, ``ldpfleet.run_audit``, the CSV reader ``load_table`` and the graph loader
``load_graph`` a scenario uses) with the outcome it must have:

* ``ok`` -- it works and a check on the result holds;
* ``refused`` -- a typed error (``ParameterError`` / ``ScenarioError``) naming the field
  (``needs``: words the message must hold, such as the field and the value).

Anything else fails: an untyped exception (a traceback for the user), a result that fails
its check (silently wrong), a refusal where the input was good, or a run past its time limit.

    python scripts/B_user_day.py                 # this interpreter's ldpfleet, one table
    python scripts/B_user_day.py --json          # the outcomes as JSON (for --compare)
    python scripts/B_user_day.py --compare MAIN_PYTHON BRANCH_PYTHON

``--compare`` runs the battery under two interpreters (say a venv holding main's wheel and
one holding this branch) and prints one row per case: main's verdict, the branch's, and the
branch's detail. Exit status 1 when a case fails (the branch's, with --compare). Files are
written to a temporary folder, nothing else.
"""

from __future__ import annotations

import argparse
import bz2
import gzip
import json
import lzma
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

TYPED = ("ParameterError", "ScenarioError", "OptionError", "SourceError")
RUN_LIMIT_S = 120.0  # a memory-transport run of a few devices takes seconds


@dataclass(frozen=True)
class Case:
    """One input, the call that takes it through a public path, and its expected outcome."""

    group: str
    name: str
    run: Callable[[], object]
    expect: str  # "ok" or "refused"
    check: Callable[[object], bool] | None = None  # for "ok": the result is right
    needs: tuple[str, ...] = ()  # for "refused": words the message must hold


def judge(case: Case) -> tuple[str, str]:
    """Run ``case``: ("pass" | "FAIL", detail)."""
    start = time.monotonic()
    try:
        result = case.run()
    except Exception as error:  # classifying every exception is the point
        kind = type(error).__name__
        text = f"{kind}: {' '.join(str(error).split())}"
        typed = any(c.__name__ in TYPED for c in type(error).__mro__)
        if not typed:
            tb = traceback.extract_tb(error.__traceback__)[-1]
            where = f"{Path(tb.filename).name}:{tb.lineno}"
            return "FAIL", f"untyped {text[:200]} at {where}"
        if case.expect == "ok":
            return "FAIL", f"refused a good input: {text[:240]}"
        missing = [w for w in case.needs if w.lower() not in str(error).lower()]
        if missing:
            return "FAIL", f"refusal lacks {missing}: {text[:240]}"
        return "pass", text[:240]
    took = time.monotonic() - start
    if case.expect == "refused":
        return "FAIL", "accepted, should be refused: " + " ".join(str(result).split())[:200]
    if took > RUN_LIMIT_S:
        return "FAIL", f"took {took:.0f} s"
    if case.check is not None:
        try:
            good = case.check(result)
        except Exception as error:
            return "FAIL", f"check raised {type(error).__name__}: {error}"
        if not good:
            return "FAIL", "wrong result: " + " ".join(str(result).split())[:240]
    return "pass", "ok: " + " ".join(str(result).split())[:200]


# --------------------------------------------------------------------------- helpers

WORK = Path(tempfile.mkdtemp(prefix="B_user_day-"))


def _write(name: str, data: bytes | str) -> Path:
    path = WORK / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _scenario(text: str):
    import ldpfleet

    return ldpfleet.parse_scenario(textwrap.dedent(text), path=WORK / "x.toml")


def _cadr(cadr: str, graph: str = "barabasi_albert:n=60,m=3,seed=1", extra: str = ""):
    return lambda: _scenario(
        f"""
        [scenario]
        name = "drop"
        seed = 4

        [graph]
        source = "{graph}"

        [cadr]
        {cadr}
        {extra}
        """
    )


def _dropout_of(loaded) -> tuple[float, str]:
    cadr = loaded.spec.cadr
    return cadr.dropout, cadr.dropout_stage


def _table(name: str, data: bytes | str, decimal: str = "."):
    from ldpfleet.devices.sources import clear_table_cache, load_table

    path = _write(name, data)
    clear_table_cache()
    return lambda: load_table(str(path), decimal=decimal)


def _column(names_matrix, name: str) -> list[float]:
    names, matrix = names_matrix
    return matrix[:, names.index(name)].tolist()


def _csv_scenario(name: str, data: bytes | str, decimal: str = ".", column: str | int = "t"):
    path = _write(name, data)
    return lambda: _scenario(
        f"""
        [scenario]
        name = "csv"
        seed = 1

        [fleet]
        devices = 2

        [stream]
        steps = 4
        eps = 4.0
        w = 4

        [source]
        kind = "csv"
        path = "{path.name}"
        column = {json.dumps(column)}
        bounds = [0.0, 40.0]
        decimal = "{decimal}"
        """
    )


def _graph(name: str, data: bytes):
    from ldpfleet.devices.graphs import load_graph

    path = _write(name, data)
    return lambda: load_graph(str(path))


def _tar(member: str, data: bytes) -> bytes:
    import io
    import tarfile

    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        info = tarfile.TarInfo(member)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _zip(member: str, data: bytes) -> bytes:
    import io

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(member, data)
    return buf.getvalue()


# --------------------------------------------------------------------------- cadr dropout


def dropout_cases() -> list[Case]:
    g = "dropout"
    ok_fraction = lambda want: lambda r: _dropout_of(r)[0] == want  # noqa: E731
    return [
        Case(g, "dropout = 0", _cadr("dropout = 0"), "ok", ok_fraction(0.0)),
        Case(
            g, "dropout = 0.1 (6 of 60, the limit)", _cadr("dropout = 0.1"), "ok", ok_fraction(0.1)
        ),
        Case(
            g,
            "dropout = 0.11 (7 of 60: past the limit)",
            _cadr("dropout = 0.11"),
            "refused",
            needs=("dropout", "0.11", "54"),
        ),
        Case(g, "dropout = 1", _cadr("dropout = 1"), "refused", needs=("dropout",)),
        Case(g, "dropout = 1.0", _cadr("dropout = 1.0"), "refused", needs=("dropout",)),
        Case(g, "dropout = 0.999", _cadr("dropout = 0.999"), "refused", needs=("dropout", "0.999")),
        Case(g, "dropout = nan", _cadr("dropout = nan"), "refused", needs=("dropout", "nan")),
        Case(g, "dropout = inf", _cadr("dropout = inf"), "refused", needs=("dropout",)),
        Case(g, "dropout = -0.1", _cadr("dropout = -0.1"), "refused", needs=("dropout",)),
        Case(
            g,
            'dropout = "0.1" (a string)',
            _cadr('dropout = "0.1"'),
            "refused",
            needs=("dropout", "str"),
        ),
        Case(g, "dropout = true", _cadr("dropout = true"), "refused", needs=("dropout",)),
        Case(g, 'dropout = "10%"', _cadr('dropout = "10%"'), "refused", needs=("dropout",)),
        Case(
            g, "dropout = 10 (a percent)", _cadr("dropout = 10"), "refused", needs=("dropout", "10")
        ),
        Case(
            g,
            "dropout = 1e-300 (rounds to no device)",
            _cadr("dropout = 1e-300"),
            "refused",
            needs=("dropout", "1e-300", "no device"),
        ),
        Case(
            g,
            "dropout = 0.005 on 60 (rounds to 0 of 60)",
            _cadr("dropout = 0.005"),
            "refused",
            needs=("dropout", "0.005", "no device"),
        ),
        Case(
            g,
            'dropout_stage = "after_share" (misspelled)',
            _cadr('dropout = 0.05\ndropout_stage = "after_share"'),
            "refused",
            needs=("dropout_stage", "after_share", "after_shares"),
        ),
        Case(
            g,
            'dropout_stage = "AFTER_SHARES" (case)',
            _cadr('dropout = 0.05\ndropout_stage = "AFTER_SHARES"'),
            "refused",
            needs=("dropout_stage",),
        ),
        Case(
            g,
            'drop_stage = "after_keys" (misspelled key)',
            _cadr('dropout = 0.05\ndrop_stage = "after_keys"'),
            "refused",
            needs=("drop_stage",),
        ),
        # a sweep's baseline row (dropout 0, the stage of its other rows): no dropout, no
        # refusal (check_dropout: "nothing for fraction 0")
        Case(
            g,
            'dropout_stage = "during_unmask" alone (dropout 0)',
            _cadr('dropout_stage = "during_unmask"'),
            "ok",
            ok_fraction(0.0),
        ),
        Case(
            g,
            'dropout = 0.1, "during_unmask"',
            _cadr('dropout = 0.1\ndropout_stage = "during_unmask"'),
            "ok",
            lambda r: _dropout_of(r) == (0.1, "during_unmask"),
        ),
        Case(
            g,
            "dropout = 0.0084 on 60 (rounds to 1 device)",
            _cadr("dropout = 0.0084"),
            "ok",
            ok_fraction(0.0084),
        ),
        Case(
            g,
            "dropout = 0.05 on 4,039 (facebook)",
            _cadr("dropout = 0.05", graph="facebook"),
            "ok",
            ok_fraction(0.05),
        ),
        Case(
            g,
            "dropout = 0.2 on facebook (past 0.1)",
            _cadr("dropout = 0.2", graph="facebook"),
            "refused",
            needs=("dropout", "0.2", "3636"),
        ),
        Case(
            g,
            'dropout = 0.05, pipeline = "paper"',
            _cadr('dropout = 0.05\npipeline = "paper"'),
            "refused",
            needs=("dropout", "paper"),
        ),
        Case(
            g,
            'dropout = 0.05, method = "ll"',
            _cadr('dropout = 0.05\nmethod = "ll"'),
            "refused",
            needs=("dropout", "ll"),
        ),
        Case(
            g,
            "dropout = 0.05, theta = 5 (no search)",
            _cadr("dropout = 0.05\ntheta = 5"),
            "refused",
            needs=("dropout", "search"),
        ),
        Case(
            g,
            "dropout = 0.05, partitions = 2 (P > 1)",
            _cadr("dropout = 0.05", extra="[collector]\npartitions = 2"),
            "refused",
            needs=("dropout", "partitions"),
        ),
        Case(
            g,
            "dropout = 0.05 on 20 nodes (small-fleet rule)",
            _cadr("dropout = 0.05", graph="barabasi_albert:n=20,m=3,seed=1"),
            "refused",
            needs=("dropout",),
        ),
        Case(
            g,
            "[secure_sum]-style dropout under [cadr] at 0.3",
            _cadr("dropout = 0.3"),
            "refused",
            needs=("dropout", "0.3"),
        ),
    ]


# --------------------------------------------------------------------------- files

CSV = "t;h\n20,5;1\n21,25;2\n-0,5;3\n"


def file_cases() -> list[Case]:
    g = "files"
    want = [20.5, 21.25, -0.5]
    col_t = lambda r: _column(r, "t") == want  # noqa: E731
    fw = "ｔ；ｈ\n".replace("ｔ", "t").replace("ｈ", "h").replace("；", ";")
    fw_rows = "２０，５;1\n２１，２５;2\n"
    raw_csv = CSV.encode()
    edges = b"# g\n1 2\n2 3\n3 1\n3 4\n"
    four_nodes = lambda graph: graph.n == 4 and graph.edges() == 4  # noqa: E731
    return [
        Case(g, "csv decimal comma", _table("a.csv", CSV, ","), "ok", col_t),
        Case(
            g, "csv.gz decimal comma", _table("a.csv.gz", gzip.compress(raw_csv), ","), "ok", col_t
        ),
        Case(
            g, "csv.bz2 decimal comma", _table("a.csv.bz2", bz2.compress(raw_csv), ","), "ok", col_t
        ),
        Case(
            g, "csv.xz decimal comma", _table("a.csv.xz", lzma.compress(raw_csv), ","), "ok", col_t
        ),
        Case(
            g,
            "csv.gz cut short",
            _table("cut.csv.gz", gzip.compress(raw_csv)[:-9], ","),
            "refused",
            needs=("source.path", "gzip"),
        ),
        Case(
            g,
            "csv.xz cut short",
            _table("cut.csv.xz", lzma.compress(raw_csv)[:30], ","),
            "refused",
            needs=("source.path", "xz"),
        ),
        Case(
            g,
            "csv.zip (a zipped CSV)",
            _table("a.zip", _zip("a.csv", raw_csv), ","),
            "refused",
            needs=("zip",),
        ),
        Case(
            g,
            "empty .csv.gz",
            _table("e.csv.gz", gzip.compress(b""), ","),
            "refused",
            needs=("source.path",),
        ),
        Case(g, "empty file", _table("e.csv", b""), "refused", needs=("source.path",)),
        Case(g, "BOM + decimal comma", _table("bom.csv", "\ufeff" + CSV, ","), "ok", col_t),
        Case(
            g,
            "BOM + decimal comma, gz",
            _table("bom.csv.gz", gzip.compress(("\ufeff" + CSV).encode()), ","),
            "ok",
            col_t,
        ),
        Case(
            g,
            "UTF-16 (Excel 'Unicode Text') + decimal comma, tabs",
            _table("u16.txt", CSV.replace(";", "\t").encode("utf-16"), ","),
            "ok",
            col_t,
        ),
        Case(
            g,
            "UTF-16LE without a BOM (iconv) + decimal comma",
            _table("u16le.csv", CSV.encode("utf-16-le"), ","),
            "ok",
            col_t,
        ),
        Case(
            g,
            "UTF-16BE without a BOM + decimal comma",
            _table("u16be.csv", CSV.encode("utf-16-be"), ","),
            "ok",
            col_t,
        ),
        Case(
            g,
            "BOM + Excel 'sep=;' line + decimal comma",
            _table("bomsep.csv", "\ufeffsep=;\n" + CSV, ","),
            "ok",
            col_t,
        ),
        Case(
            g,
            "one column of full-width '２０，５' under decimal ','",
            _table("fw-one.csv", "t\n２０，５\n２１，５\n", ","),
            "refused",
            needs=("no numeric columns", "U+FF0C"),
        ),
        Case(
            g, "decimal comma, Ctrl-Z at the end", _table("z.csv", CSV + "\x1a", ","), "ok", col_t
        ),
        Case(
            g,
            "decimal comma, CRLF lines",
            _table("crlf.csv", CSV.replace("\n", "\r\n"), ","),
            "ok",
            col_t,
        ),
        Case(
            g,
            "decimal comma file read with decimal '.'",
            _table("dc.csv", CSV),
            "refused",
            needs=("decimal",),
        ),
        Case(
            g,
            "decimal = ',' on a comma-separated file",
            _table("cs.csv", "t,h\n20.5,1\n", ","),
            "refused",
            needs=("decimal", ","),
        ),
        Case(g, 'decimal = ";"', _table("sc.csv", CSV, ";"), "refused", needs=("decimal", ";")),
        Case(
            g,
            "full-width digits, ASCII comma, decimal ','",
            _table("fw1.csv", "t;h\n２０,５;1\n２１,２５;2\n", ","),
            "ok",
            lambda r: _column(r, "t") == [20.5, 21.25],
        ),
        Case(
            g,
            "full-width digits and comma '，' under decimal ','",
            _table("fw2.csv", fw + fw_rows, ","),
            "refused",
            needs=("t", "，", "U+FF0C"),
        ),
        Case(
            g,
            "full-width digits and comma '，' under decimal '.'",
            _table("fw3.csv", fw + fw_rows),
            "refused",
            needs=("，", "U+FF0C"),
        ),
        Case(
            g,
            "Arabic digits with Arabic decimal separator under ','",
            _table("ar.csv", "t;h\n٢٠٫٥;1\n", ","),
            "refused",
            needs=("U+066B",),
        ),
        Case(
            g,
            "integer beyond 2**53 (a nanosecond clock)",
            _table("big.csv", "t;h\n1733550000000000001;1\n", ","),
            "refused",
            needs=("2**53",),
        ),
        Case(
            g,
            "integer 2**53 exactly",
            _table("b53.csv", "t;h\n9007199254740992;1\n", ","),
            "ok",
            lambda r: _column(r, "t") == [2.0**53],
        ),
        Case(
            g,
            "grouped '1.234,5' under decimal ','",
            _table("grp.csv", "t;h\n1.234,5;1\n", ","),
            "ok",
            lambda r: _column(r, "t") == [1234.5],
        ),
        Case(
            g,
            "one column of decimal commas, a header",
            _table("one.csv", "t\n20,5\n-0,5\n", ","),
            "ok",
            lambda r: _column(r, "t") == [20.5, -0.5],
        ),
        Case(
            g,
            "one column of decimal commas, no header",
            _table("one-nh.csv", "20,5\n21,5\n", ","),
            "refused",
            needs=("header line",),
        ),
        Case(
            g,
            "comma-separated integers under decimal ','",
            _table("cs-int.csv", "t,h\n20,1\n21,2\n", ","),
            "refused",
            needs=("decimal",),
        ),
        Case(
            g,
            "French '1 234,5' (space grouping), first value",
            _table("fr-sp.csv", "t;h\n1 234,5;1\n1 240,5;2\n", ","),
            "ok",
            lambda r: r[1][:, 0].tolist() == [1234.5, 1240.5],  # column 0 is t, not h
        ),
        Case(
            g,
            "French '1\u202f234,5' (narrow no-break space)",
            _table("fr-nn.csv", "t;h\n1\u202f234,5;1\n", ","),
            "ok",
            lambda r: _column(r, "t") == [1234.5],
        ),
        Case(
            g,
            "'1 234' (space grouping, no comma) later in a column",
            _table("fr-nc.csv", "t;h\n20,5;1\n1 234;2\n", ","),
            "refused",
            needs=("'1 234'",),
        ),
        Case(
            g,
            "'1,234.5' under decimal ','",
            _table("en-g.csv", "t;h\n1,234.5;1\n", ","),
            "refused",
            needs=("groups its digits",),
        ),
        Case(
            g,
            "scenario: full-width comma column named by index 0",
            _csv_scenario("s-fw0.csv", fw + fw_rows, ",", column=0),
            "refused",
            needs=("U+FF0C",),
        ),
        Case(
            g,
            "scenario: full-width stop column by index 0 (decimal '.')",
            _csv_scenario("s-fs0.csv", "t,h\n２１．５,1\n２２．５,2\n", ".", column=0),
            "refused",
            needs=("U+FF0E",),
        ),
        Case(
            g,
            "scenario: Arabic separator column by index 0 (decimal ',')",
            _csv_scenario("s-ar0.csv", "t;h\n٢٠٫٥;1\n٢١٫٥;2\n", ",", column=0),
            "refused",
            needs=("U+066B", "','"),
        ),
        Case(
            g,
            "scenario: minus sign '−' column by index 0",
            _csv_scenario("s-mi0.csv", "t,h\n\u22123.5,1\n\u22122.5,2\n", ".", column=0),
            "refused",
            needs=("U+2212",),
        ),
        Case(
            g,
            "scenario: integer beyond 2**53 in a column not read",
            _csv_scenario("s-big.csv", "t;h\n20,5;1733550000000000001\n21,5;1\n", ","),
            "ok",
        ),
        Case(
            g,
            "scenario: integer beyond 2**53 in the column read",
            _csv_scenario("s-big2.csv", "t;h\n1733550000000000001;1\n", ",", column="t"),
            "refused",
            needs=("2**53",),
        ),
        Case(
            g,
            "scenario: header only, gz",
            _csv_scenario("s-ho.csv.gz", gzip.compress(b"t;h\n"), ","),
            "refused",
            needs=("source",),
        ),
        Case(
            g,
            "scenario: decimal comma csv.gz",
            _csv_scenario("s.csv.gz", gzip.compress(raw_csv), ","),
            "ok",
        ),
        Case(
            g,
            "scenario: full-width comma, decimal ','",
            _csv_scenario("s-fw.csv", fw + fw_rows, ","),
            "refused",
            needs=("source", "U+FF0C"),
        ),
        Case(
            g,
            "csv .tar.gz (a downloaded data set)",
            _table("d.tar.gz", gzip.compress(_tar("d.csv", raw_csv)), ","),
            "refused",
            needs=("tar -tf d.tar.gz",),
        ),
        Case(
            g,
            "csv .csv.gz.gz (gzipped twice)",
            _table("d.csv.gz.gz", gzip.compress(gzip.compress(raw_csv)), ","),
            "ok",
            col_t,
        ),
        Case(
            g,
            "csv .zst",
            _table("d.csv.zst", b"\x28\xb5\x2f\xfd" + bytes(40), ","),
            "refused",
            needs=("zstd -d",),
        ),
        Case(
            g,
            "csv .7z",
            _table("d.7z", b"7z\xbc\xaf\x27\x1c" + bytes(40), ","),
            "refused",
            needs=("7z l",),
        ),
        Case(
            g,
            "csv .Z (Unix compress)",
            _table("d.csv.Z", b"\x1f\x9d\x90" + b"abc" * 9, ","),
            "refused",
            needs=("gzip -d",),
        ),
        Case(
            g,
            "edge list .zst",
            _graph("g.txt.zst", b"\x28\xb5\x2f\xfd" + bytes(40)),
            "refused",
            needs=("zstd -d",),
        ),
        Case(
            g,
            "edge list .lz4",
            _graph("g.txt.lz4", b"\x04\x22\x4d\x18" + bytes(40)),
            "refused",
            needs=("lz4 -d",),
        ),
        Case(g, "edge list .gz", _graph("g.txt.gz", gzip.compress(edges)), "ok", four_nodes),
        Case(g, "edge list .bz2", _graph("g.txt.bz2", bz2.compress(edges)), "ok", four_nodes),
        Case(g, "edge list .xz", _graph("g.txt.xz", lzma.compress(edges)), "ok", four_nodes),
        Case(g, "edge list .zip", _graph("g.zip", _zip("g.txt", edges)), "refused", needs=("zip",)),
        Case(
            g,
            "edge list .gz cut short",
            _graph("gc.txt.gz", gzip.compress(edges)[:-6]),
            "refused",
            needs=("gzip",),
        ),
        Case(
            g,
            "edge list .gz holding nothing",
            _graph("ge.txt.gz", gzip.compress(b"")),
            "refused",
            needs=("edge",),
        ),
        Case(
            g,
            "edge list with BOM and CRLF",
            _graph("gb.txt", b"\xef\xbb\xbf" + edges.replace(b"\n", b"\r\n")),
            "ok",
            four_nodes,
        ),
        Case(
            g,
            "edge list with Ctrl-Z at the end",
            _graph("gz.txt", edges + b"\x1a"),
            "ok",
            four_nodes,
        ),
        Case(
            g,
            "edge list of full-width digits",
            _graph("gfw.txt", "１ ２\n２ ３\n３ １\n３ ４\n".encode()),
            "ok",
            four_nodes,
        ),
        Case(
            g,
            "edge list, UTF-16 with Ctrl-Z at the end",
            _graph("g16.txt", (edges.decode() + "\x1a").encode("utf-16")),
            "ok",
            four_nodes,
        ),
        Case(
            g,
            "edge list with Ctrl-Z inside",
            _graph("gzi.txt", b"1 2\n2\x1a 3\n3 1\n"),
            "refused",
            needs=("line 2",),
        ),
        Case(
            g,
            "edge list .bz2 cut short",
            _graph("gc.txt.bz2", bz2.compress(edges)[:-8]),
            "refused",
            needs=("bzip2",),
        ),
        Case(
            g,
            "edge list .gz inside .gz",
            _graph("gg.txt.gz.gz", gzip.compress(gzip.compress(edges))),
            "ok",
            four_nodes,
        ),
        Case(
            g,
            "edge list with node ids beyond 2**63",
            _graph("gbig.txt", b"1 2\n2 99999999999999999999\n"),
            "refused",
            needs=("99999999999999999999",),
        ),
    ]


# --------------------------------------------------------------------------- plugins

PLUGINS = '''
import math
import time

import numpy as np


class _RR:
    def __init__(self, eps):
        self.eps = float(eps)
        self.p = math.exp(eps) / (math.exp(eps) + 1)
        self.output_low, self.output_high = 0.0, 1.0

    def perturb(self, x, rng):
        x = np.asarray(x, dtype=float)
        bit = rng.random(x.shape) < x
        keep = rng.random(x.shape) < self.p
        return np.where(keep, bit, ~bit).astype(float)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y == 0) | (y == 1)

    def estimate_mean(self, y):
        m = float(np.mean(y)) if len(y) else 0.5
        return (m - (1 - self.p)) / (2 * self.p - 1)


class Good(_RR):
    pass


class Counter(_RR):
    """State that leaves the reports alone."""

    def __init__(self, eps):
        super().__init__(eps)
        self.calls = 0

    def perturb(self, x, rng):
        self.calls += 1
        return super().perturb(x, rng)


class RaisesLater(_RR):
    """Passes the load-time sample (5 calls), then raises on a device."""

    calls = 0

    def perturb(self, x, rng):
        type(self).calls += 1
        if type(self).calls > 8:
            raise RuntimeError("sensor firmware says no")
        return super().perturb(x, rng)


class NanLater(_RR):
    calls = 0

    def perturb(self, x, rng):
        type(self).calls += 1
        out = super().perturb(x, rng)
        return out * np.nan if type(self).calls > 8 else out


class InfMean(_RR):
    def estimate_mean(self, y):
        return math.inf


class NanMean(_RR):
    def estimate_mean(self, y):
        return float("nan")


class StrMean(_RR):
    def estimate_mean(self, y):
        return "0.5"


class ListOut(_RR):
    def perturb(self, x, rng):
        return list(super().perturb(x, rng))


class IntMaskDomain(_RR):
    def in_domain(self, y):
        return np.ones(np.shape(y), dtype=int)


class RaisesInit(_RR):
    def __init__(self, eps):
        raise RuntimeError("no licence for this device")


class BareAssert(_RR):
    def __init__(self, eps):
        assert eps <= 0.5
        super().__init__(eps)


class SlowAtLoad(_RR):
    """0.2 s a call: slow, not hung."""

    def perturb(self, x, rng):
        time.sleep(0.2)
        return super().perturb(x, rng)


class Exits(_RR):
    def perturb(self, x, rng):
        raise SystemExit(3)


class KeyboardLike(_RR):
    def perturb(self, x, rng):
        raise KeyboardInterrupt


class Memo(_RR):
    """RAPPOR-like memoisation: reports depend on earlier calls."""

    def __init__(self, eps):
        super().__init__(eps)
        self.seen = {}

    def perturb(self, x, rng):
        out = super().perturb(x, rng)
        for i, v in enumerate(np.asarray(x).tolist()):
            out[i] = self.seen.setdefault(v, out[i])
        return out


class Float32(_RR):
    def perturb(self, x, rng):
        return super().perturb(x, rng).astype(np.float32)


class EpsWrong(_RR):
    def __init__(self, eps):
        super().__init__(eps)
        self.eps = 2 * eps
'''


def _plugin_module() -> str:
    folder = WORK / "plugins"
    folder.mkdir(exist_ok=True)
    (folder / "bday_plugins.py").write_text(PLUGINS)
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    return "bday_plugins"


def _stream(mechanism: str, devices: int = 3, steps: int = 20) -> str:
    return textwrap.dedent(
        f"""
        [scenario]
        name = "plug"
        seed = 5

        [fleet]
        devices = {devices}

        [stream]
        steps = {steps}
        eps = 4.0
        w = 4
        mechanism = "{mechanism}"
        reconstruct = "none"

        [source]
        kind = "synthetic"
        bounds = [0.0, 40.0]
        """
    )


def _load_plugin(cls: str):
    return lambda: _scenario(_stream(f"{_plugin_module()}:{cls}"))


def _run_plugin(cls: str):
    def go():
        import ldpfleet

        out = WORK / f"run-{cls}"
        return ldpfleet.run(
            ldpfleet.parse_scenario(_stream(f"{_plugin_module()}:{cls}")),
            broker="memory",
            out_dir=str(out),
        )

    return go


def _audit_plugin(cls: str):
    def go():
        import ldpfleet

        return ldpfleet.run_audit(f"{_plugin_module()}:{cls}", 1.0, trials=400)

    return go


def _device_errors(results) -> list:
    return list((results.get("fleet") or {}).get("device_errors") or [])


def plugin_cases() -> list[Case]:
    g = "plugins"
    m = "stream.mechanism"
    complete = lambda r: r["devices_complete"] == r["devices"] and not _device_errors(r)  # noqa: E731
    return [
        Case(g, "good plugin, load", _load_plugin("Good"), "ok"),
        Case(g, "good plugin, run", _run_plugin("Good"), "ok", complete),
        Case(g, "slow plugin (0.2 s a call), run", _run_plugin("SlowAtLoad"), "ok", complete),
        Case(g, "float32 reports, run", _run_plugin("Float32"), "ok", complete),
        Case(g, "stateful counter, run", _run_plugin("Counter"), "ok", complete),
        Case(
            g, "raises in __init__", _load_plugin("RaisesInit"), "refused", needs=(m, "no licence")
        ),
        Case(
            g,
            "bare assert in __init__",
            _load_plugin("BareAssert"),
            "refused",
            needs=(m, "AssertionError"),
        ),
        Case(g, "perturb returns a list", _load_plugin("ListOut"), "refused", needs=(m, "list")),
        Case(
            g, "in_domain answers an int mask", _load_plugin("IntMaskDomain"), "refused", needs=(m,)
        ),
        Case(g, "estimate_mean answers inf", _load_plugin("InfMean"), "refused", needs=(m,)),
        Case(g, "estimate_mean answers nan", _load_plugin("NanMean"), "refused", needs=(m,)),
        Case(g, "estimate_mean answers a string", _load_plugin("StrMean"), "refused", needs=(m,)),
        Case(g, "perturb raises SystemExit", _load_plugin("Exits"), "refused", needs=(m, "exit")),
        Case(g, "states another eps", _load_plugin("EpsWrong"), "refused", needs=(m, "eps")),
        Case(
            g,
            "raises later, on devices: run ends, errors named",
            _run_plugin("RaisesLater"),
            "ok",
            lambda r: bool(_device_errors(r)) and r["devices_complete"] < r["devices"],
        ),
        Case(
            g,
            "NaN later, on devices: run ends, errors named",
            _run_plugin("NanLater"),
            "ok",
            lambda r: bool(_device_errors(r)) and r["devices_complete"] < r["devices"],
        ),
        Case(
            g,
            "audit: good plugin",
            _audit_plugin("Good"),
            "ok",
            lambda r: r.verdict == "inconclusive",
        ),
        Case(
            g,
            "audit: raises in __init__",
            _audit_plugin("RaisesInit"),
            "refused",
            needs=("mechanism", "no licence"),
        ),
        Case(
            g, "audit: estimate_mean inf", _audit_plugin("InfMean"), "refused", needs=("mechanism",)
        ),
        Case(
            g,
            "audit: memoising plugin is caught",
            _audit_plugin("Memo"),
            "ok",
            lambda r: r.verdict == "violation",
        ),
        Case(
            g,
            "audit: eps = nan",
            lambda: __import__("ldpfleet").run_audit(f"{_plugin_module()}:Good", float("nan")),
            "refused",
            needs=("eps", "nan"),
        ),
        Case(
            g,
            'a file path "plugins/bday_plugins.py:Good"',
            lambda: _scenario(_stream("plugins/bday_plugins.py:Good")),
            "refused",
            needs=(m, "bday_plugins:Good"),
        ),
        Case(
            g, "unknown class in a known module", _load_plugin("Nope"), "refused", needs=(m, "Nope")
        ),
    ]


# --------------------------------------------------------------------------- main

GROUPS = {"dropout": dropout_cases, "files": file_cases, "plugins": plugin_cases}


def run_all(only: list[str] | None) -> list[dict]:
    rows = []
    for group, make in GROUPS.items():
        if only and group not in only:
            continue
        for case in make():
            verdict, detail = judge(case)
            rows.append({"group": group, "name": case.name, "verdict": verdict, "detail": detail})
    return rows


def _print(rows: list[dict]) -> None:
    for row in rows:
        print(f"{row['verdict']:4}  {row['group']:8} {row['name']:58.58} {row['detail'][:150]}")
    failed = sum(row["verdict"] != "pass" for row in rows)
    print(f"\n{len(rows)} cases, {len(rows) - failed} passed, {failed} failed")


def _compare(main_py: str, branch_py: str, only: list[str] | None) -> int:
    extra = [a for g in only or [] for a in ("--only", g)]
    results = []
    for python in (main_py, branch_py):
        done = subprocess.run(
            [python, __file__, "--json", *extra],
            capture_output=True,
            text=True,
            cwd=tempfile.gettempdir(),
            check=False,
        )
        try:
            results.append({(r["group"], r["name"]): r for r in json.loads(done.stdout)})
        except ValueError:
            print(f"{python} did not answer JSON:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
            return 2
    main, branch = results
    print(f"{'main':4}  {'branch':6}  {'group':8} {'case':58} branch detail")
    for key, row in branch.items():
        before = main.get(key, {}).get("verdict", "-")
        print(f"{before:4}  {row['verdict']:6}  {key[0]:8} {key[1]:58.58} {row['detail'][:120]}")
    fails = [sum(r["verdict"] != "pass" for r in side.values()) for side in results]
    print(f"\n{len(branch)} cases; failed on main: {fails[0]}, on the branch: {fails[1]}")
    return 1 if fails[1] else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", choices=sorted(GROUPS))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--compare", nargs=2, metavar=("MAIN_PYTHON", "BRANCH_PYTHON"))
    args = parser.parse_args()
    if args.compare:
        return _compare(*args.compare, args.only)
    rows = run_all(args.only)
    if args.json:
        print(json.dumps(rows))
    else:
        _print(rows)
    return 1 if any(row["verdict"] != "pass" for row in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
