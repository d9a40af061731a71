"""Pin of the lower layers' long functions, for helper S2's pure refactor (split them).

    python scripts/S2_pin.py record OUT.json [--only tables,lpea,wmd,nb,runs] [--corpus C.jsonl]
    python scripts/S2_pin.py check OUT.json  [--only ...]  [--corpus C.jsonl]

``record`` writes every outcome; ``check`` recomputes them and lists the keys whose outcome
differs (exit 1), so a refactor that changed nothing exits 0. Sections:

- ``tables``: ``devices.sources._parse_table`` on the table files the source tests parse
  (a corpus recorded by ``scripts/S2_record_plugin.py``: ``PYTHONPATH=scripts
  S2_RECORD=C.jsonl pytest -p S2_record_plugin tests/unit/test_sources*.py ...``; default
  ``/tmp/S2-corpus.jsonl``, skipped when absent), the CSV files under ``data/`` and odd
  inputs written here (header only, missing values, CRLF, semicolons, quoted fields,
  non-numeric cells, decimal commas, row ids, repeated headers, dates back in time,
  Latin-1, gzip, ``.npy`` / ``.npz``), each with ``has_header`` None / True / False. The
  files are written under the fixed ``/tmp/S2-pin-tables`` (error messages name the path).
  Outcome: names, dropped / broken / gap maps, SHA-256 of the matrix and mask bytes (with
  dtype, shape, writeable flag); or the exception's type, message and field.
- ``lpea``: ``collector.projection.lpea`` on networkx ER / BA / star / path / karate graphs,
  several seeds and θ, both orders, default and injected (Warner RR, debiased count,
  noisy key, ``pool="all"``, ``max_rounds``) ingredients; the kept edges, name, and the
  generator's state after (the same draws); refused arguments by error fields.
- ``wmd``: ``collector.gcdp.sensitivity.window_masking_deltas`` on random calibration data
  (several seeds, shapes, windows, units, aggregates, masks, bounds) and the UCI Occupancy
  columns ``bench gcdp`` reads; every returned float by ``repr``; refusals by error fields.
- ``nb``: ``protocol.samplers._nb_scalar_values`` on a fresh ``_Bits`` for many
  ``(whole, fn/fd, u/v)``, thousands of values from fixed seeds; the values and the bit
  pool's and generator's state after.
- ``runs``: ``ldpfleet run`` (subprocess, fixed ``--run`` id) of a small bulk scenario
  (``tests/e2e/test_bulk_scenario.py``'s: memory, embedded, seed 9 traced on one shard, no
  reconstruction; ``scenarios.bulk_run.run_bulk_scenario``), ``scenarios/secure-sum.toml``
  and two CADR fleets on a BA graph (clip/dp, ll/paper) on memory (``broker.fanin.fan_in``
  carries their intakes): results.json without the fields that measure the machine
  (``_VARYING``: times, memory, CPU, latencies, trace keys) and the SHA-256 of every
  ``.npz`` array. (The embedded bulk run's ``fleet_mean_mae`` no longer depends on the
  order reports arrive in: the partitions keep exact integer sums since helper A's change,
  protocol/bulk.py "Fleet-mean sums".)

JSON with sorted keys; floats by ``repr`` (exact). Helper S2, 2026-12-06.
"""

from __future__ import annotations

import argparse
import base64
import bz2
import gzip
import hashlib
import io
import json
import math
import os
import shutil
import sys
from fractions import Fraction
from pathlib import Path

import networkx as nx
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TABLE_DIR = Path("/tmp/S2-pin-tables")


def _error(exc: BaseException) -> dict:
    """An exception as comparable data: type, message and the typed-error fields."""
    out = {"type": type(exc).__name__, "message": str(exc)}
    for name in ("field", "limit", "value", "reason"):
        if hasattr(exc, name):
            out[name] = repr(getattr(exc, name))
    return out


def _array(a) -> dict | None:
    if a is None:
        return None
    a = np.asarray(a)
    return {
        "dtype": str(a.dtype),
        "shape": list(a.shape),
        "sha256": hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest(),
        "writeable": bool(a.flags.writeable),
    }


# --------------------------------------------------------------------------- tables

ODD_TABLES: dict[str, bytes] = {
    "plain.csv": b"a,b,c\n1,2,3\n4,5,6\n7,8,9\n",
    "header_only.csv": b"a,b,c\n",
    "empty.csv": b"",
    "blank_lines.csv": b"\n\n  \n",
    "crlf.csv": b"t,x\r\n1,2.5\r\n2,3.5\r\n3,4.5\r\n",
    "cr_only.csv": b"t,x\r1,2\r3,4\r",
    "semicolons.csv": b"a;b;c\n1;2;3\n4;5;6\n",
    "tabs.tsv": b"a\tb\n1\t2\n3\t4\n",
    "quoted.csv": b'"date","Temp","Hum"\n"1","2015-02-04 17:51:00",23.1,27.2\n'
    b'"2","2015-02-04 17:52:00",23.2,27.3\n',
    "quoted_commas.csv": b'name,x\n"a, b",1\n"c",2\n',
    "missing.csv": b"a,b,c\n1,,3\n4,NA,6\n7,8,nan\n,null,None\n-,2,3\n",
    "missing_first.csv": b"a,b\n,1\nNA,2\n3,3\n",
    "all_missing.csv": b"a,b\nNA,1\n,2\nnull,3\n",
    "nonnumeric.csv": b"a,b,c\n1,x,3\n4,5,y\n7,8,9\n",
    "text_column.csv": b"label,x\nfoo,1\nbar,2\n",
    "no_numeric.csv": b"a,b\nfoo,bar\nbaz,qux\n",
    "decimal_comma.csv": b"a;b\n20,5;1\n21,5;2\n",
    "decimal_comma_text.csv": b"x,y\nfoo,bar\n",
    "row_id.csv": b"a,b\n1,2,3\n2,5,6\n3,8,9\n",
    "row_id_text.csv": b"a,b\nr1,2,3\nr2,5,6\n",
    "row_id_bad.csv": b"temp\n20,038\n21,5\n",
    "trailing_delim.csv": b"a,b\n1,2,\n3,4,\n",
    "ragged.csv": b"a,b,c\n1,2,3\n4,5\n",
    "too_many.csv": b"a,b\n1,2,3,4\n",
    "repeated_header.csv": b"a,b\n1,2\na,b\n3,4\n",
    "dates_back.csv": b"t,x\n2015-02-04 17:52:00,1\n2015-02-04 17:51:00,2\n",
    "dates_ok.csv": b"t,x\n2015-02-04 17:51:00,1\n2015-02-04 17:52:00,2\n",
    "dated_headerless.csv": b"2015-02-04 17:51:00,1,2\n2015-02-04 17:52:00,3,4\n",
    "numeric_header.csv": b"2001,2002\n1,2\n3,4\n",
    "bom.csv": b"\xef\xbb\xbfa,b\n1,2\n",
    "latin1.csv": "temp (°C),x\n1,2\n".encode("latin-1"),
    "sep_line.csv": b"sep=;\na;b\n1;2\n3;4\n",
    "sep_bad.csv": b"sep=|\na|b\n1|2\n",
    "underscore.csv": b"a,b\n1_000,2\n3,4\n",
    "inf.csv": b"a,b\ninf,2\n3,-inf\n",
    "huge.csv": b"a,b\n1e400,2\n3,4\n",
    "spaces.csv": b" a , b \n 1 , 2 \n 3 , 4 \n",
    "single_col.csv": b"x\n1\n2\n3\n",
    "single_value.csv": b"5\n",
    "wide.csv": b",".join(b"c%d" % i for i in range(9))
    + b"\n"
    + b",".join(b"x" for _ in range(9))
    + b"\n",
    "dup_names.csv": b"a,a,b\n1,2,3\n4,5,6\n",
    "dup_text_names.csv": b"a,a,b\nx,2,3\ny,5,6\n",
    "bad_quote.csv": b'a,b\n"1,2\n3,4\n',
    "nul.csv": b"a,b\n1,\x002\n",
}


def _npy(a) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def _npz(**arrays) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


ODD_TABLES |= {
    "gz.csv.gz": gzip.compress(b"a,b\n1,2\n3,4\n", mtime=0),
    "bz.csv": bz2.compress(b"a,b\n1,2\n3,4\n"),
    "broken.gz": b"\x1f\x8b" + b"garbage",
    "one.npy": _npy(np.arange(5, dtype=np.float64)),
    "two.npy": _npy(np.arange(12, dtype=np.int64).reshape(4, 3)),
    "bool.npy": _npy(np.array([True, False])),
    "cols.npz": _npz(a=np.arange(3.0), b=np.arange(3.0) * 2),
    "ragged.npz": _npz(a=np.arange(3.0), b=np.arange(4.0)),
    "nan.npy": _npy(np.array([1.0, np.nan])),
}


def _table_inputs(corpus: str | None) -> list[tuple[str, str, bytes | None]]:
    """(key, file name, bytes or None for a repository data file given by its path)."""
    inputs = [(f"odd/{name}", name, raw) for name, raw in ODD_TABLES.items()]
    for path in sorted((ROOT / "data").rglob("*")):
        if path.suffix in (".csv", ".txt") and path.is_file() and path.stat().st_size < 4e6:
            inputs.append((f"data/{path.relative_to(ROOT / 'data')}", str(path), None))
    if corpus and os.path.exists(corpus):
        seen = set()
        with open(corpus, encoding="utf-8") as fh:
            for line in fh:
                d = json.loads(line)
                if "data" in d:
                    continue  # a repository data file: listed above
                raw = base64.b64decode(d["bytes"])
                key = (hashlib.sha256(raw).hexdigest()[:16], d["name"])
                if key not in seen:
                    seen.add(key)
                    inputs.append((f"corpus/{key[0]}/{key[1]}", d["name"], raw))
    return inputs


def _table_outcome(path: str, header) -> dict:
    from ldpfleet.devices import sources

    sources.clear_table_cache()
    st = os.stat(path)
    try:
        names, matrix, dropped, broken, gaps, mask = sources._parse_table(
            path, (os.path.realpath(path), st.st_mtime_ns, st.st_size), header
        )
    except Exception as exc:
        return {"error": _error(exc)}
    return {
        "names": list(names),
        "matrix": _array(matrix),
        "dropped": repr(dropped),
        "broken": repr(broken),
        "gaps": repr(gaps),
        "mask": _array(mask),
    }


def pin_tables(corpus: str | None) -> dict:
    out = {}
    if TABLE_DIR.exists():
        shutil.rmtree(TABLE_DIR)
    for index, (key, name, raw) in enumerate(_table_inputs(corpus)):
        if raw is None:
            path = name
        else:
            folder = TABLE_DIR / str(index)
            folder.mkdir(parents=True)
            path = str(folder / name)
            Path(path).write_bytes(raw)
        for header in (None, True, False):
            out[f"{key}|header={header}"] = _table_outcome(path, header)
    return out


# --------------------------------------------------------------------------- lpea


def _graphs():
    from ldpfleet.devices.graphs import Graph

    def convert(g: nx.Graph, name: str) -> Graph:
        g = nx.convert_node_labels_to_integers(g)
        edges = np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2)
        return Graph.from_edges(g.number_of_nodes(), edges[:, 0], edges[:, 1], name=name)

    made = {}
    for seed in (1, 2, 3):
        made[f"er80p05s{seed}"] = convert(nx.gnp_random_graph(80, 0.05, seed=seed), "er")
        made[f"er40p2s{seed}"] = convert(nx.gnp_random_graph(40, 0.2, seed=seed), "er")
        made[f"ba150m3s{seed}"] = convert(nx.barabasi_albert_graph(150, 3, seed=seed), "ba")
    made["star30"] = convert(nx.star_graph(29), "star")
    made["path25"] = convert(nx.path_graph(25), "path")
    made["karate"] = convert(nx.karate_club_graph(), "karate")
    made["empty10"] = convert(nx.empty_graph(10), "empty")
    made["complete12"] = convert(nx.complete_graph(12), "complete")
    return made


def _private_ingredients(graph, eps: float, key_rng_seed: int):
    """Warner RR answers, the debiased count and a noisy key, as cadr_reference does."""
    from ldpfleet.protocol.rr import WarnerRR

    rr = WarnerRR(eps)
    em1 = math.expm1(eps)
    noisy = np.random.default_rng(key_rng_seed).normal(size=graph.n) + graph.degrees()

    def accept(i, candidates, kept_deg, theta, rng):
        return rr.respond(kept_deg < theta, rng)

    def count(answers):
        return (int(answers.sum()) * (em1 + 2.0) - len(answers)) / em1

    def key(i, candidates):
        return noisy[candidates]

    return accept, count, key


def _lpea_outcome(call) -> dict:
    rng = np.random.default_rng(call.pop("seed"))
    from ldpfleet.collector.projection import lpea

    try:
        kept = lpea(rng=rng, **call)
    except Exception as exc:
        return {"error": _error(exc)}
    return {
        "name": kept.name,
        "edges": hashlib.sha256(np.asarray(kept.edge_keys()).tobytes()).hexdigest(),
        "degrees": kept.degrees().tolist(),
        "rng_after": repr(rng.bit_generator.state),
    }


def pin_lpea() -> dict:
    out = {}
    for gname, graph in _graphs().items():
        for theta in (0, 1, 2, 4, 7):
            for order in ("low", "high"):
                for seed in (0, 5):
                    base = {"graph": graph, "theta": theta, "order": order, "seed": seed}
                    out[f"{gname}|{theta}|{order}|{seed}|plain"] = _lpea_outcome(dict(base))
                    out[f"{gname}|{theta}|{order}|{seed}|all"] = _lpea_outcome(
                        dict(base, pool="all")
                    )
                    for eps in (0.5, 2.0):
                        accept, count, key = _private_ingredients(graph, eps, seed + 100)
                        for rounds in (None, 1, 3):
                            out[f"{gname}|{theta}|{order}|{seed}|rr{eps}|r{rounds}"] = (
                                _lpea_outcome(
                                    dict(
                                        base,
                                        accept=accept,
                                        count=count,
                                        key=key,
                                        pool="all",
                                        max_rounds=rounds,
                                    )
                                )
                            )
                        out[f"{gname}|{theta}|{order}|{seed}|rr{eps}|accepting"] = _lpea_outcome(
                            dict(base, accept=accept, count=count)
                        )
    graph = _graphs()["karate"]
    bad = {
        "order": {"order": "middle"},
        "pool": {"pool": "some"},
        "rounds0": {"max_rounds": 0},
        "rounds-2": {"max_rounds": -2},
        "theta": {"theta": -1},
        "theta_float": {"theta": 1.5},
        "accept_shape": {"accept": lambda i, c, k, t, r: np.ones(len(c) + 1, dtype=bool)},
        "count_neg": {"count": lambda a: -3.0},
        "count_big": {"count": lambda a: 1e9},
    }
    for name, change in bad.items():
        call = {"graph": graph, "theta": 3, "order": "low", "seed": 9} | change
        out[f"bad|{name}"] = _lpea_outcome(call)
    return out


# --------------------------------------------------------------------------- window deltas


def _wmd_outcome(nodes, window, **kw) -> dict:
    from ldpfleet.collector.gcdp.sensitivity import window_masking_deltas

    try:
        d = window_masking_deltas(nodes, window, **kw)
    except Exception as exc:
        return {"error": _error(exc)}
    d = np.asarray(d)
    return {"dtype": str(d.dtype), "shape": list(d.shape), "values": [repr(v) for v in d.ravel()]}


def _occupancy_columns() -> np.ndarray | None:
    from ldpfleet.devices.sources import load_table

    path = ROOT / "data" / "uci-occupancy" / "datatraining.txt"
    if not path.exists():
        return None
    names, matrix = load_table(str(path))
    cols = [names.index(c) for c in ("Temperature", "Humidity", "Light", "CO2") if c in names]
    x = np.array(matrix[:, cols], dtype=float)
    lo, hi = x.min(axis=0), x.max(axis=0)
    return (x - lo) / (hi - lo)


def pin_wmd() -> dict:
    out = {}
    kinds = [
        ("node", "mean"),
        ("node", "max"),
        ("occurrence", "mean"),
        ("occurrence", "max"),
    ]
    for seed in (1, 2, 3, 4):
        rng = np.random.default_rng(seed)
        for t, m in ((40, 3), (97, 5), (10, 1), (300, 8)):
            x = rng.random((t, m)) * 1.4 - 0.2  # some values outside [0, 1]
            for window in (1, 3, 10, 41):
                for unit, agg in kinds:
                    for mask in (0.0, 0.5, "per", 2.0):
                        mv = rng.random(m) if mask == "per" else mask
                        for low, high in ((0.0, 1.0), (-0.5, 0.8)):
                            key = f"s{seed}|{t}x{m}|w{window}|{unit}|{agg}|{mask}|{low},{high}"
                            out[key] = _wmd_outcome(
                                x,
                                window,
                                unit=unit,
                                aggregate=agg,
                                mask_values=mv,
                                low=low,
                                high=high,
                            )
    occ = _occupancy_columns()
    if occ is not None:
        for window in (5, 10, 30, 60, 240):
            for unit, agg in kinds:
                out[f"occ|w{window}|{unit}|{agg}"] = _wmd_outcome(
                    occ, window, unit=unit, aggregate=agg
                )
    x = np.random.default_rng(0).random((20, 3))
    nan = x.copy()
    nan[3, 1] = np.nan
    bad = {
        "unit": (x, 4, {"unit": "nodes"}),
        "aggregate": (x, 4, {"aggregate": "median"}),
        "window0": (x, 0, {}),
        "window_float": (x, 2.5, {}),
        "window_bool": (x, True, {}),
        "1d": (x[:, 0], 4, {}),
        "3d": (x[None], 4, {}),
        "no_cols": (x[:, :0], 4, {}),
        "nan": (nan, 4, {}),
        "occ_max": (x, 4, {"unit": "occurrence", "aggregate": "max"}),
        "short": (x, 21, {}),
        "high_le_low": (x, 4, {"low": 1.0, "high": 1.0}),
        "high_inf": (x, 4, {"high": math.inf}),
        "low_nan": (x, 4, {"low": math.nan}),
        "mask_nan": (x, 4, {"mask_values": math.nan}),
        "mask_shape": (x, 4, {"mask_values": [0.1, 0.2]}),
        "occ_high_le_low": (x, 4, {"unit": "occurrence", "low": 1.0, "high": 0.0}),
        "occ_mask_nan": (x, 4, {"unit": "occurrence", "mask_values": math.nan}),
        "text": ("abc", 4, {}),
    }
    for name, (nodes, window, kw) in bad.items():
        out[f"bad|{name}"] = _wmd_outcome(nodes, window, **kw)
    return out


# --------------------------------------------------------------------------- nb sampler


def pin_nb() -> dict:
    from ldpfleet.protocol import samplers

    out = {}
    shapes = [
        (0, 1, 2),
        (0, 1, 3),
        (0, 2, 7),
        (1, 0, 1),
        (2, 0, 1),
        (1, 1, 4),
        (3, 5, 9),
        (0, 1, 50),
    ]
    ratios = [(1, 2), (1, 3), (2, 3), (9, 10), (99, 100), (1, 1000), (5, 7), (3, 64)]
    for whole, fn, fd in shapes:
        for u, v in ratios:
            for seed in (0, 1, 2):
                for n in (1, 7, 300):
                    for kind in ("pcg", "mt"):
                        bitgen = np.random.PCG64(seed) if kind == "pcg" else np.random.MT19937(seed)
                        rng = np.random.Generator(bitgen)
                        bits = samplers._Bits(rng)
                        if seed == 2:  # a pool already part-used
                            bits.take(17)
                        values = samplers._nb_scalar_values(bits, n, whole, fn, fd, u, v)
                        key = f"{whole}+{fn}/{fd}|{u}/{v}|s{seed}|n{n}|{kind}"
                        out[key] = {
                            "values": values,
                            "pool": repr((bits._pool, bits._count, list(bits._left))),
                            "rng_after": repr(rng.bit_generator.state),
                        }
    # through the public entry (the scalar path by size) too
    for seed in range(20):
        rng = np.random.default_rng(seed)
        vals = samplers.negative_binomial(rng, Fraction(1, 5), Fraction(2, 3), 8)
        out[f"public|s{seed}"] = {
            "values": vals.tolist(),
            "rng_after": repr(rng.bit_generator.state),
        }
    return out


# --------------------------------------------------------------------------- runs

BULK = """
[scenario]
name = "bulk-small"
seed = 4
[fleet]
devices = 150
connection = "bulk"
gateway_devices = 60
shards = 2
[stream]
steps = 30
eps = 2.0
w = 3
batch_steps = 3
reconstruct = "cpr"
retransmit_after = 30
[source]
kind = "synthetic"
shape = "sine"
period = [6, 10]
amplitude = 1.0
noise = 0.1
bounds = [-1.5, 1.5]
[collector]
trace = "none"
partitions = 2
"""

CADR = """
[scenario]
name = "cadr-small"
seed = 3
[graph]
source = "barabasi_albert:n=120,m=3,seed=2"
[cadr]
method = "METHOD"
eps = 3.0
alpha = 0.1
theta = "auto-dev"
pipeline = "PIPELINE"
"""

RUNS = {
    "bulk-memory": (BULK, "memory", []),
    "bulk-embedded": (BULK, "embedded", []),
    "bulk-seed9-traced-1shard": (
        BULK.replace('trace = "none"', 'trace = "all"').replace("shards = 2", "shards = 1"),
        "memory",
        ["--seed", "9"],
    ),
    "bulk-no-reconstruct": (BULK.replace('"cpr"', '"none"'), "memory", []),
    "secure-sum": ((ROOT / "scenarios" / "secure-sum.toml").read_text(), "memory", []),
    "cadr-clip-dp": (CADR.replace("METHOD", "clip").replace("PIPELINE", "dp"), "memory", []),
    "cadr-ll-paper": (CADR.replace("METHOD", "ll").replace("PIPELINE", "paper"), "memory", []),
}
_VARYING = (
    "seconds", "peak_rss", "cpu", "rate", "per_second", "started", "finished", "_at",
    "timeline", "latency", "_ms", "public_key",
)  # fmt: skip


def _stable(value: object) -> object:
    """results.json without the fields that measure the machine (times, memory, CPU)."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if not any(t in k for t in _VARYING)}
    if isinstance(value, list):
        return [_stable(v) for v in value]
    return value


def pin_runs() -> dict:
    import subprocess

    out = {}
    cli = str(Path(sys.executable).parent / "ldpfleet")
    for name, (text, broker, extra) in RUNS.items():
        folder = Path("/tmp/S2-pin-runs") / name
        if folder.exists():
            shutil.rmtree(folder)
        folder.mkdir(parents=True)
        (folder / "s.toml").write_text(text)
        done = subprocess.run(
            [
                cli,
                "run",
                "s.toml",
                "--broker",
                broker,
                "--out",
                "out",
                "--run",
                f"s2-{name}",
                *extra,
            ],
            cwd=folder,
            capture_output=True,
            text=True,
        )
        entry: dict = {"rc": done.returncode}
        results = folder / "out" / "results.json"
        if results.exists():
            entry["results"] = _stable(json.loads(results.read_text()))
        for npz in sorted((folder / "out").glob("*.npz")):
            with np.load(npz) as data:
                entry[npz.name] = {k: _array(data[k])["sha256"] for k in sorted(data.files)}
        out[name] = entry
    return out


SECTIONS = {"tables": pin_tables, "lpea": pin_lpea, "wmd": pin_wmd, "nb": pin_nb, "runs": pin_runs}


def compute(only: list[str], corpus: str | None) -> dict:
    out = {}
    for name in only:
        fn = SECTIONS[name]
        out[name] = fn(corpus) if name == "tables" else fn()
    return json.loads(json.dumps(out, sort_keys=True))


def _leaves(a: object, b: object, path: str = "") -> list[tuple[str, object, object]]:
    """The leaf paths where ``a`` and ``b`` differ, with both values."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            d for k in sorted(set(a) | set(b)) for d in _leaves(a.get(k), b.get(k), f"{path}/{k}")
        ]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _leaves(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [(path, a, b)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/S2_pin.py")
    parser.add_argument("action", choices=("record", "check"))
    parser.add_argument("out")
    parser.add_argument("--only", default=",".join(SECTIONS))
    parser.add_argument("--corpus", default="/tmp/S2-corpus.jsonl")
    args = parser.parse_args(argv)
    only = [s for s in args.only.split(",") if s]
    now = compute(only, args.corpus)
    if args.action == "record":
        Path(args.out).write_text(json.dumps(now, sort_keys=True, indent=0) + "\n")
        print({k: len(v) for k, v in now.items()})
        return 0
    before = json.loads(Path(args.out).read_text())
    bad = 0
    for section in only:
        old, new = before.get(section, {}), now[section]
        keys = sorted(set(old) | set(new))
        diff = [k for k in keys if old.get(k) != new.get(k)]
        print(f"{section}: {len(keys)} outcomes, {len(diff)} differ")
        for k in diff[:10]:
            print("  ", k)
            for path, was, now_ in _leaves(old.get(k), new.get(k))[:40]:
                print(f"      {path}: {str(was)[:120]} -> {str(now_)[:120]}")
        bad += len(diff)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
