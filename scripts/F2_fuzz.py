"""Mutation fuzzing of the user-file readers, with a differential oracle (helper F).

Each trial takes a valid file, applies a few random mutations of the kinds real files
carry (a byte replaced, inserted or deleted; a line duplicated, dropped, reversed or
cut; a separator or line end swapped; a comment, a BOM, a weight or a NUL added) and
reads it through the public loader:

* ``graph`` -- ``devices.graphs.load_edge_list``. A refusal must be a ``ParameterError``
  naming the file (``field``) with ``limit`` and ``value``; an accepted file must give a
  graph whose invariants hold (``Graph.check``) and whose edge set equals the one a plain
  reading of the same bytes gives (``reference_edges``: the loader's rules restated in a
  dozen lines), so an acceptance is also checked for being *right*.
* ``occupancy`` -- ``app.gcdp_datasets.occupancy_windows`` with the file as the training
  file. A refusal must be a ``ParameterError`` naming ``train_file``; an accepted file must
  give finite windows in [0, 1].

    python scripts/F2_fuzz.py [--trials N] [--seed S] [--only graph|graph_labels|occupancy]

Prints each failure (the mutated bytes are written to /tmp/F2-fuzz-<kind>-<trial>) and a
summary line; exit status 1 when a trial failed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import traceback
from pathlib import Path

import numpy as np

GRAPH = (
    b"# Directed graph (each unordered pair of nodes is saved once)\n"
    b"# FromNodeId\tToNodeId\n"
    b"0\t1\n0\t2\n1\t2\n2\t3\n3\t4\n4\t0\n5\t6\n6\t7\n7\t5\n10\t11\n"
)


def _occupancy_text(records: int = 120) -> bytes:
    lines = ['"date","Temperature","Humidity","Light","CO2","HumidityRatio","Occupancy"']
    for k in range(records):
        occupied = (k // 30) % 2
        lines.append(
            f'"{k + 1}","2015-02-04 {k // 60:02d}:{k % 60:02d}:00",{21 + occupied + k % 7 * 0.01},'
            f"{27 + k % 5 * 0.1},{400 * occupied + k % 3},{450 + 300 * occupied},"
            f"{0.0045 + k % 4 * 1e-5},{occupied}"
        )
    return ("\n".join(lines) + "\n").encode()


MUTATIONS = (
    "replace_byte", "insert_byte", "delete_byte", "duplicate_line", "drop_line",
    "reverse_line", "cut_line", "swap_separator", "crlf", "comment", "bom", "weight", "nul",
    "blank_line", "trailing_space",
)  # fmt: skip
INTERESTING = b"0123456789 \t,;#%\r\n.-+eE\"'x\x00\xff\xc3\xa9"


def mutate(data: bytes, rng: np.random.Generator, count: int) -> bytes:
    """``data`` with ``count`` random mutations of :data:`MUTATIONS`."""
    for _ in range(count):
        kind = MUTATIONS[rng.integers(len(MUTATIONS))]
        lines = data.split(b"\n")
        k = int(rng.integers(max(len(lines), 1)))
        pos = int(rng.integers(len(data) + 1))
        byte = bytes([INTERESTING[rng.integers(len(INTERESTING))]])
        if kind == "replace_byte" and data:
            pos = min(pos, len(data) - 1)
            data = data[:pos] + byte + data[pos + 1 :]
        elif kind == "insert_byte":
            data = data[:pos] + byte + data[pos:]
        elif kind == "delete_byte" and data:
            data = data[:pos] + data[pos + 1 :]
        elif kind == "duplicate_line":
            data = b"\n".join([*lines[: k + 1], lines[k], *lines[k + 1 :]])
        elif kind == "drop_line":
            data = b"\n".join(lines[:k] + lines[k + 1 :])
        elif kind == "reverse_line":
            lines[k] = b"\t".join(reversed(lines[k].split()))
            data = b"\n".join(lines)
        elif kind == "cut_line":
            lines[k] = lines[k][: int(rng.integers(len(lines[k]) + 1))]
            data = b"\n".join(lines)
        elif kind == "swap_separator":
            data = data.replace(b"\t", [b" ", b",", b";", b"  "][rng.integers(4)])
        elif kind == "crlf":
            data = data.replace(b"\n", b"\r\n")
        elif kind == "comment":
            lines.insert(k, [b"# note", b"% konect", b"  # indented"][rng.integers(3)])
            data = b"\n".join(lines)
        elif kind == "bom":
            data = b"\xef\xbb\xbf" + data
        elif kind == "weight":
            lines[k] = lines[k] + b" 1"
            data = b"\n".join(lines)
        elif kind == "nul":
            data = data[:pos] + b"\x00" + data[pos:]
        elif kind == "blank_line":
            lines.insert(k, b"   ")
            data = b"\n".join(lines)
        elif kind == "trailing_space":
            lines[k] = lines[k] + b" \t"
            data = b"\n".join(lines)
    return data


def reference_edges(data: bytes) -> set[tuple[bytes, bytes]] | None:
    """The undirected edge set of an edge list read plainly (the loader's rules): a UTF-8
    BOM dropped; ``\\r`` is whitespace; a line whose first non-blank is ``#`` or ``%`` is a
    comment, a later ``#`` starts one; blank lines skipped; every other line two ids; self
    loops dropped. Ids are compared as integers when all are, else as text. None when a
    line is not two ids (the loader must refuse it)."""
    data = data.removeprefix(b"\xef\xbb\xbf")
    pairs = []
    for line in data.splitlines():
        if line.lstrip()[:1] in (b"#", b"%"):
            continue
        fields = line.split(b"#", 1)[0].split()
        if not fields:
            continue
        if len(fields) != 2:
            return None
        pairs.append(tuple(fields))
    tokens = [t for p in pairs for t in p]
    if tokens and all(_int64(t) for t in tokens):
        pairs = [(int(a), int(b)) for a, b in pairs]
    elif any(_int64(t) for t in tokens):
        return None  # integers mixed with labels: refused
    return {(min(a, b), max(a, b)) for a, b in pairs if a != b}


def _int64(token: bytes) -> bool:
    try:
        return -(2**63) <= int(token) < 2**63
    except ValueError:
        return False


def graph_trial(data: bytes, folder: Path) -> str | None:
    """None when ``data`` is read right or refused right, else what went wrong."""
    from ldpfleet.devices.graphs import load_edge_list
    from ldpfleet.protocol.errors import ParameterError

    path = folder / "g.txt"
    path.write_bytes(data)
    expected = reference_edges(data)
    try:
        graph = load_edge_list(path)
    except ParameterError as error:
        if error.field is None or error.limit is None or error.value is None:
            return f"refusal without field/limit/value: {error}"
        return None  # the reference may accept what the loader refuses: that is allowed
    except Exception as error:  # the finding
        return f"untyped {type(error).__name__}: {error} ({_where(error)})"
    graph.check()
    ids = graph.ids.tolist()
    got = {(min(ids[i], ids[j]), max(ids[i], ids[j])) for i, j in graph.edge_array().tolist()}
    if expected is not None and isinstance(next(iter(expected), (0, 0))[0], bytes):
        expected = {(a.decode(), b.decode()) for a, b in expected}
    if expected is None:
        return "accepted a file with a line that is not two ids"
    if got != expected:
        return f"edges differ from the plain reading: {sorted(got ^ expected)[:4]}"
    return None


def occupancy_trial(data: bytes, folder: Path) -> str | None:
    """None when ``data`` gives finite windows in [0, 1] or a typed refusal."""
    import dataclasses

    from ldpfleet.app.gcdp_datasets import READINGS, occupancy_windows
    from ldpfleet.protocol.errors import ParameterError

    path = folder / "occ.csv"
    path.write_bytes(data)
    test = folder / "occ-test.csv"
    if not test.exists():
        test.write_bytes(_occupancy_text())
    readings = dataclasses.replace(READINGS, split="train")
    try:
        windows = occupancy_windows(None, 10, readings, train_file=path, test_file=test)
    except ParameterError as error:
        if error.field != "train_file" or error.limit is None:
            return f"refusal naming {error.field!r} without a limit: {error}"
        return None
    except Exception as error:
        return f"untyped {type(error).__name__}: {error} ({_where(error)})"
    values = np.concatenate([windows.train_f.ravel(), windows.test_f.ravel()])
    if not (np.all(np.isfinite(values)) and values.min() >= 0 and values.max() <= 1):
        return f"windows outside [0, 1] or not finite: {values.min()}..{values.max()}"
    return None


def _where(error: BaseException) -> str:
    frame = traceback.extract_tb(error.__traceback__)[-1]
    return f"{Path(frame.filename).name}:{frame.lineno}"


LABELS = b"% sym unweighted\nalice bob\nbob carol\ncarol alice\ndave erin\nerin frank\n"
KINDS = {
    "graph": (GRAPH, graph_trial),
    "graph_labels": (LABELS, graph_trial),
    "occupancy": (_occupancy_text(), occupancy_trial),
}


def fuzz(kind: str, trials: int, seed: int, keep: bool = True) -> list[str]:
    """The failures of ``trials`` mutated files of ``kind`` (seeded by ``seed``)."""
    base, trial = KINDS[kind]
    rng = np.random.default_rng([seed, list(KINDS).index(kind)])
    failures = []
    with tempfile.TemporaryDirectory(prefix="F2-fuzz-") as tmp:
        for k in range(trials):
            data = mutate(base, rng, int(rng.integers(1, 4)))
            problem = trial(data, Path(tmp))
            if problem is not None:
                if keep:
                    Path(f"/tmp/F2-fuzz-{kind}-{k}").write_bytes(data)
                failures.append(f"{kind} trial {k}: {problem}")
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", choices=sorted(KINDS), action="append")
    args = parser.parse_args(argv)
    failures = []
    for kind in args.only or list(KINDS):
        found = fuzz(kind, args.trials, args.seed)
        failures += found
        print(f"{kind}: {args.trials} trials, {len(found)} failures")
    for line in failures[:40]:
        print(line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
