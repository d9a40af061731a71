"""Graphs whose nodes are devices — theory of operation.

In the graph protocols (CADR-LDP, seed 004) every node of an undirected graph is one device,
and a device knows *only its own adjacency list*: the ids of its neighbours. Nothing in a
device ever looks at another node's list; the simulator holds the whole graph only to hand
each device its own row (:meth:`Graph.neighbours`) and to compute the ground truth that the
collector's estimates are scored against (true degrees, edge counts).

Representation (:class:`Graph`)
    ``n`` nodes labelled ``0 .. n-1``; ``adjacency[i]`` is a read-only, strictly increasing
    ``int32`` array of the neighbours of ``i``. The graph is *simple and undirected*: no
    self loops, no duplicates, and ``j in adjacency[i]`` iff ``i in adjacency[j]``.
    :meth:`Graph.from_edges` is the one constructor that establishes these invariants from an
    arbitrary edge list (refusing an endpoint that is not an integer, such as 0.5 or NaN,
    and ``n`` outside ``0 .. 2**31 - 1``, the int32 indices); :meth:`Graph.check` verifies
    them (used by the tests; O(m log m)).
    ``edges()`` counts undirected edges (each once); ``degrees()`` is ``len(adjacency[i])``.
    The optional ``ids`` holds the original node id of each node (from a file), so that
    ``ids[i]`` is the label node ``i`` had in the source.

Loading SNAP / KONECT edge lists (:func:`load_edge_list`)
    Plain text, or compressed with gzip, bzip2 or xz — recognised by the magic bytes at
    the start of the file, so the suffix is not needed (a file *named* ``.gz``/``.bz2``/
    ``.xz`` that is not so compressed is refused as unreadable). UTF-8 (a BOM is skipped)
    or UTF-16 with a BOM (Windows "Unicode", PowerShell's ``>``) or without one (told by
    its zero bytes). A leading ``~`` in the
    path is the home folder. One edge per line: two integer node ids separated by
    whitespace (spaces or TABs); lines whose first non-blank character is ``#`` (SNAP) or
    ``%`` (KONECT) are comments and blank lines are skipped; CRLF line ends are tolerated
    (a ``\\r`` is whitespace); a ``#`` later in a line starts a comment too (``1 2  # x``, as
    networkx writes; a line it cuts to one id says so). A NUL byte on an edge line, a
    node id longer than 256 bytes (a corrupt line: numpy made every token that wide) and
    ``1_000`` (digit grouping, which int() reads as 1000) are refused. Every refusal is a
    :class:`ParameterError` naming the file (``field``), the line and the value (also as
    ``limit`` and ``value``):

    - any other line shape (one id, a non-integer) names the line, whatever the other
      lines hold (a line of three ids and one of one are not two edges); a comma or
      semicolon separated line gets a hint to turn the separators into spaces, a lone id
      the hint that an isolated node is written as a self loop (``3 3``);
    - three or four columns (a weight, a timestamp: weighted SNAP lists, KONECT's
      ``u v w t``) are refused with what the extra column looks like (KONECT's
      ``% sym positive`` header says so) and the hint to cut the first two columns
      (``awk '{print $1, $2}'``): the release is of an unweighted graph;
    - a first line of column names (``source,target``) is named as a header row;
    - a KONECT bipartite graph (``% bip`` header) is refused naming that line: both sides
      number their nodes from 1, so their ids would collide into one node set;
    - a zip, tar (also ``.tar.gz``/``.tar.bz2``, KONECT's downloads) or 7z archive is
      refused (``field`` ``graph``) with the advice to extract the edge list from it, and
      so is a compression not unpacked here (zstd, LZ4, Unix compress, lzip:
      ``devices.compressed.not_unpacked``, the CSV sources' table too) with its command.

    The list may be directed: an arc in either direction (or both)
    becomes *one* undirected edge; self loops are dropped; duplicates are merged.
    Node set: every id that appears on an edge line, including an id whose only line is a
    self loop (it becomes an isolated node). Ids are relabelled to ``0 .. n-1`` in *sorted
    order of the original integer ids* (so relabelling is monotone: ``ids`` is increasing).
    A file whose ids are all labels (no id an integer: ``alice bob``, ``user_17 user_3``) is
    relabelled in sorted order of the labels (``ids`` the labels); a first line of header
    words (``source target``) is refused there, and a file mixing integers and labels is
    refused naming the first line with a label (a typo, or a header row).
    Parsing splits the bytes once and converts the tokens with numpy, so ego-Facebook
    (88,234 lines) loads in well under a second.

    Shipped data sets (``data/``, see each ``SOURCE.txt``): :func:`ego_facebook` (4,039 nodes,
    88,234 edges) and :func:`wiki_vote` (7,115 nodes; 103,689 directed arcs collapse to
    100,762 undirected edges because reciprocal votes merge).

Random graphs (:func:`generate`)
    Thin wrappers over networkx generators, deterministic given ``seed`` (networkx uses its
    own ``random.Random(seed)``; the result is then relabelled through :meth:`from_edges`):

    - ``"erdos_renyi"`` (``p``): G(n, p), each of the n(n-1)/2 pairs independently with
      probability ``p`` (``networkx.gnp_random_graph``).
    - ``"barabasi_albert"`` (``m``): preferential attachment, each new node attaches to
      ``m`` existing nodes with probability proportional to their degree
      (``networkx.barabasi_albert_graph``, requires ``1 <= m < n``).
    - ``"powerlaw_cluster"`` (``m``, ``p``): Holme-Kim: Barabási-Albert plus, after each
      preferential edge, a triangle-closing step with probability ``p``
      (``networkx.powerlaw_cluster_graph``, ``1 <= m <= n``, ``0 <= p <= 1``).
    - ``"watts_strogatz"`` (``k``, ``p``): a ring lattice where each node joins its ``k``
      nearest neighbours (``k // 2`` on each side), each edge rewired with probability
      ``p`` (``networkx.watts_strogatz_graph``, ``k < n``).

    networkx is imported lazily, only by :func:`generate`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from ldpfleet.devices.compressed import (
    BrokenCompressedData,
    UnpackedTooLarge,
    archive,
    compression,
    not_unpacked,
    unpack,
)
from ldpfleet.devices.text_decode import DOS_END_OF_FILE, UTF8_BOM, utf16_encoding
from ldpfleet.protocol.errors import ParameterError

__all__ = [
    "DATA_DIR",
    "GENERATORS",
    "GeneratorSpec",
    "Graph",
    "ego_facebook",
    "generate",
    "generate_checks",
    "is_generator_spec",
    "load_edge_list",
    "load_graph",
    "parse_generator_spec",
    "wiki_vote",
]

DATA_DIR = Path(__file__).resolve().parent.parent / "data"
EGO_FACEBOOK = DATA_DIR / "snap-ego-facebook" / "facebook_combined.txt.gz"
WIKI_VOTE = DATA_DIR / "snap-wiki-vote" / "Wiki-Vote.txt.gz"


@dataclass(frozen=True, eq=False)
class Graph:
    """A simple undirected graph on nodes ``0 .. n-1`` given by per-node sorted neighbours.

    Build one with :meth:`from_edges` (which guarantees the invariants) rather than by hand.
    Arrays are read-only; two graphs compare by identity (use :meth:`same_edges`).
    """

    n: int
    adjacency: tuple[np.ndarray, ...] = field(repr=False)
    name: str = ""
    ids: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.n < 0 or len(self.adjacency) != self.n:
            raise ParameterError(
                f"needs one neighbour array per node: n={self.n}, got {len(self.adjacency)}",
                field="adjacency",
                limit="one neighbour array per node",
                value=len(self.adjacency),
            )
        if self.ids is not None and len(self.ids) != self.n:
            raise ParameterError(
                f"needs {self.n} ids, got {len(self.ids)}",
                field="ids",
                limit=f"{self.n} ids",
                value=len(self.ids),
            )

    # --- construction ------------------------------------------------------------------

    @classmethod
    def from_edges(
        cls,
        n: int,
        u: np.ndarray,
        v: np.ndarray,
        *,
        name: str = "",
        ids: np.ndarray | None = None,
    ) -> Graph:
        """The simple undirected graph on ``0..n-1`` with an edge for each pair ``(u[k], v[k])``.

        Direction is ignored, self loops are dropped and duplicates merged.
        """
        n = _node_count(n)
        u, v = _endpoints(u, "u"), _endpoints(v, "v")
        if u.shape != v.shape:
            raise ParameterError(
                f"endpoint arrays differ: {u.shape} vs {v.shape}",
                field="v",
                limit=f"shape {u.shape}",
                value=v.shape,
            )
        if u.size and (min(u.min(), v.min()) < 0 or max(u.max(), v.max()) >= n):
            raise ParameterError(
                f"endpoints must lie in 0..{n - 1}",
                field="edges",
                limit=f"0..{n - 1}",
                value=(int(min(u.min(), v.min())), int(max(u.max(), v.max()))),
            )
        lo, hi = np.minimum(u, v), np.maximum(u, v)
        keep = lo != hi
        key = np.unique(lo[keep] * n + hi[keep])
        lo, hi = key // n, key % n
        src = np.concatenate([lo, hi])
        dst = np.concatenate([hi, lo])
        order = np.lexsort((dst, src))
        src, dst = src[order], dst[order].astype(np.int32)
        dst.setflags(write=False)
        bounds = np.cumsum(np.bincount(src, minlength=n))[:-1] if n else np.empty(0, int)
        adjacency = tuple(np.split(dst, bounds)) if n else ()
        if ids is not None:
            ids = np.array(ids)
            ids.setflags(write=False)
        return cls(n=n, adjacency=adjacency, name=name, ids=ids)

    # --- queries -------------------------------------------------------------------------

    def degrees(self) -> np.ndarray:
        """``int64`` array of node degrees."""
        return np.fromiter((a.size for a in self.adjacency), dtype=np.int64, count=self.n)

    def edges(self) -> int:
        """Number of undirected edges (each counted once)."""
        return int(self.degrees().sum()) // 2

    def neighbours(self, i: int) -> np.ndarray:
        """The sorted neighbours of node ``i`` (what device ``i`` knows)."""
        if isinstance(i, bool) or not isinstance(i, int | np.integer) or not 0 <= i < self.n:
            raise ParameterError(
                f"node must lie in 0..{self.n - 1}, got {i}",
                field="i",
                limit=f"0..{self.n - 1}",
                value=i,
            )
        return self.adjacency[i]

    def edge_array(self) -> np.ndarray:
        """``(m, 2)`` array of edges ``(i, j)`` with ``i < j``, sorted lexicographically."""
        deg = self.degrees()
        src = np.repeat(np.arange(self.n, dtype=np.int64), deg)
        dst = np.concatenate(self.adjacency).astype(np.int64) if self.n else np.empty(0, int)
        up = src < dst
        return np.stack([src[up], dst[up]], axis=1)

    def edge_keys(self) -> np.ndarray:
        """Sorted ``int64`` keys ``i * n + j`` (``i < j``), one per edge: for set algebra."""
        e = self.edge_array()
        return e[:, 0] * self.n + e[:, 1]

    def same_edges(self, other: Graph) -> bool:
        """True when both graphs have the same node count and the same edge set."""
        return self.n == other.n and np.array_equal(self.edge_keys(), other.edge_keys())

    def check(self) -> None:
        """Verify every invariant (sorted, int32, in range, no loops, symmetric); raise if not."""
        for i, a in enumerate(self.adjacency):
            if a.dtype != np.int32 or a.ndim != 1:
                raise ParameterError(
                    f"must be a 1-d int32 array, got {a.dtype}",
                    field=f"adj[{i}]",
                    limit="a 1-d int32 array",
                    value=str(a.dtype),
                )
            if a.size and (a[0] < 0 or a[-1] >= self.n or np.any(np.diff(a) <= 0)):
                raise ParameterError(
                    "must be strictly increasing in 0..n-1",
                    field=f"adj[{i}]",
                    limit="strictly increasing in 0..n-1",
                    value=a.tolist(),
                )
            if np.any(a == i):
                raise ParameterError("self loop", field=f"adj[{i}]", limit="no self loop", value=i)
        deg = self.degrees()
        src = np.repeat(np.arange(self.n, dtype=np.int64), deg)
        dst = np.concatenate(self.adjacency).astype(np.int64) if self.n else np.empty(0, int)
        fwd = np.sort(src * self.n + dst)
        back = np.sort(dst * self.n + src)
        if not np.array_equal(fwd, back):
            raise ParameterError(
                "adjacency is not symmetric",
                field="adjacency",
                limit="symmetric",
                value=int(np.count_nonzero(fwd != back)),
            )


# node indices are int32 in the neighbour arrays (``Graph``)
MAX_NODE_COUNT = 2**31 - 1


def _node_count(n) -> int:
    """``n`` of :meth:`Graph.from_edges` as an int, or a refusal (-1 was numpy's ValueError,
    3.0 a TypeError, 2**40 a MemoryError)."""
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or not 0 <= n <= MAX_NODE_COUNT:
        raise ParameterError(
            f"must be an integer in 0..{MAX_NODE_COUNT:,} (int32 node indices), got {n!r}",
            field="n",
            limit=f"an integer in 0..{MAX_NODE_COUNT}",
            value=n,
        )
    return int(n)


def _endpoints(values, name: str) -> np.ndarray:
    """One endpoint array of :meth:`Graph.from_edges` as int64, or a refusal naming the first
    value that is not an integer (0.5 was read as node 0, NaN as -2^63)."""
    arr = np.asarray(values)
    if arr.dtype.kind == "f":
        flat = arr.ravel()
        bad = np.flatnonzero(~np.isfinite(flat) | (flat != np.round(flat)))
        if bad.size:
            k = int(bad[0])
            raise ParameterError(
                f"must be an integer node index, got {flat[k]}",
                field=f"{name}[{k}]",
                limit="an integer node index",
                value=float(flat[k]),
            )
    try:
        return arr.astype(np.int64).ravel()
    except (TypeError, ValueError) as error:
        raise ParameterError(
            f"must be integer node indices ({error})",
            field=name,
            limit="integer node indices",
            value=str(arr.dtype),
        ) from None


# --- loading ---------------------------------------------------------------------------------

_SUFFIXES = {".gz": "gzip", ".bz2": "bzip2", ".xz": "xz"}
# KONECT's first line: "% <format> <weights>"; these weights mean a third column
_KONECT_WEIGHTED = (
    b"positive", b"posweighted", b"signed", b"multisigned", b"weighted", b"multiweighted",
    b"dynamic", b"multiposweighted",
)  # fmt: skip


def load_edge_list(path: str | Path, *, name: str | None = None) -> Graph:
    """Load a SNAP- or KONECT-style edge list (see the module docstring for the format rules).

    ``name`` defaults to the file name without its compression suffix and ``.txt``,
    ``.tsv`` or ``.edges``. A leading ``~`` in ``path`` is the user's home folder.
    """
    path = Path(path).expanduser()
    raw = _decoded(path, _read_raw(path))
    if name is None:
        name = path.name
        for suffix in (*_SUFFIXES, ".txt", ".tsv", ".edges"):
            name = name.removesuffix(suffix)
    lines = [_edge_text(ln) for ln in raw.splitlines() if ln.strip() and not _is_comment(ln)]
    lines = [ln for ln in lines if ln.strip()]
    _refuse_bipartite(raw, path)
    _refuse_nul(raw, lines, path.name)
    tokens = b" ".join(lines).split()
    # every line, not only the total: "1 2 1" then "5" (a weight, then an isolated node
    # alone) is four tokens on two lines, and was read as the edges (1, 2) and (1, 5)
    counts = np.fromiter((len(ln.split()) for ln in lines), dtype=np.int64, count=len(lines))
    if len(tokens) != 2 * len(lines) or np.any(counts != 2):
        bad = lines[int(np.flatnonzero(counts != 2)[0])]
        raise ParameterError(
            f"line {_line_number(raw, bad)}: expected two node ids, got {_shown(bad)}"
            f"{_shape_hint(raw, bad, lines, path.name)}",
            field=path.name,
            limit="two node ids a line",
            value=_shown(bad),
        )
    longest = _refuse_long_tokens(raw, lines, tokens, path.name)
    flat = _integer_ids(tokens) if longest <= INTEGER_TOKEN_BYTES else None
    if flat is None:
        unique, inverse = _unique_tokens(tokens)  # bytes order
        if not any(_is_int64(t) for t in unique):
            return _labelled_graph(raw, lines, unique, inverse, name, path.name)
        _refuse_integer_among_labels(raw, lines, path.name)
        bad = next(ln for ln in lines if not all(_is_int64(t) for t in ln.split()))
        raise ParameterError(
            f"line {_line_number(raw, bad)}: node ids must be integers (at most 19 digits; "
            f"'#' and '%' start a comment), got {_shown(bad)}{_header_hint(bad, lines)}; "
            "labels (alice bob) are node ids only when no id of the file is an integer"
            f"{_range_hint(bad, path.name)}",
            field=path.name,
            limit="integer node ids of at most 19 digits, or labels only",
            value=_shown(bad),
        )
    ids, idx = np.unique(flat, return_inverse=True)
    idx = idx.reshape(-1, 2)
    return Graph.from_edges(ids.size, idx[:, 0], idx[:, 1], name=name, ids=ids)


def _refuse_integer_among_labels(raw: bytes, lines: list[bytes], file_name: str) -> None:
    """A file of labels with an integer id on a few lines (a user named ``2024``, a typo):
    the refusal names the first line with the integer, not the first line of labels
    (helper F's trial: ``a b`` / ``b c`` / ``1 a`` blamed line 1's ``a b`` as "not
    integers"). Files mostly of integers keep the refusal of their first label line."""
    with_int = [ln for ln in lines if any(_is_int64(t) for t in ln.split())]
    if 2 * len(with_int) >= len(lines):
        return
    bad = with_int[0]
    token = next(t for t in bad.split() if _is_int64(t)).decode("ascii", "replace")
    raise ParameterError(
        f"line {_line_number(raw, bad)}: an integer node id {token!r} in a file of labels "
        f"({len(with_int):,} of {len(lines):,} lines hold one), got {_shown(bad)}; labels "
        "(alice bob) are node ids only when no id of the file is an integer: make every id "
        f'a label, e.g. awk \'{{print "n" $1, "n" $2}}\' {file_name} > edges.txt',
        field=file_name,
        limit="integer node ids of at most 19 digits, or labels only",
        value=_shown(bad),
    )


# a node id's length: numpy holds tokens in fixed-width arrays, so one long junk token
# made every token that wide (a 1 MB token among 100,000 edges: 200 GB); a URL fits
MAX_TOKEN_BYTES = 256
INTEGER_TOKEN_BYTES = 64  # longer tokens are not int64 ids (19 digits, a sign, zeros)


def _refuse_long_tokens(raw: bytes, lines: list[bytes], tokens: list[bytes], file_name: str) -> int:
    """The longest token's length; a refusal naming the first line with a token longer
    than ``MAX_TOKEN_BYTES`` (before any array of the tokens is built)."""
    longest = max(map(len, tokens), default=0)
    if longest > MAX_TOKEN_BYTES:
        bad = next(ln for ln in lines if any(len(t) > MAX_TOKEN_BYTES for t in ln.split()))
        size = max(len(t) for t in bad.split())
        raise ParameterError(
            f"line {_line_number(raw, bad)}: a node id of {size} bytes, longer than "
            f"{MAX_TOKEN_BYTES} (a corrupt line, or not an edge list?): {_shown(bad)}",
            field=file_name,
            limit=f"node ids of at most {MAX_TOKEN_BYTES} bytes",
            value=size,
        )
    return longest


def _integer_ids(tokens: list[bytes]) -> np.ndarray | None:
    """The tokens as int64 node ids, or None when one is not an integer (``1_000``'s digit
    grouping is not one: int() read it as 1000)."""
    try:
        flat = np.array(tokens).astype(np.int64)
    except (ValueError, OverflowError):
        return None
    return None if any(b"_" in t for t in tokens) else flat


def _unique_tokens(tokens: list[bytes]) -> tuple[list[bytes], np.ndarray]:
    """The distinct tokens in bytes order and each token's index among them (``np.unique``
    without its fixed-width array)."""
    unique = sorted(set(tokens))
    index = {token: k for k, token in enumerate(unique)}
    inverse = np.fromiter((index[t] for t in tokens), dtype=np.int64, count=len(tokens))
    return unique, inverse


_HEADER_WORDS = frozenset(
    b"source target from to src dst node node1 node2 node_1 node_2 u v id1 id2 head tail "
    b"start end sender receiver user1 user2 in out".split()
)


def _labelled_graph(
    raw: bytes,
    lines: list[bytes],
    unique: list[bytes],
    inverse: np.ndarray,
    name: str,
    file_name: str,
) -> Graph:
    """Node ids that are all labels (``alice bob``, ``user_17 user_3``: no id an integer):
    relabelled to ``0 .. n-1`` in sorted order of the labels (``unique``, sorted as bytes:
    UTF-8 sorts as its code points), ``ids`` the labels. A first line of column names
    (``source target``) would be an edge here: refused as a header."""
    first = lines[0].split()
    if all(w.lower() in _HEADER_WORDS for w in first):
        raise ParameterError(
            f"line {_line_number(raw, lines[0])}: {_shown(lines[0])} looks like a header row "
            "of column names, not an edge: delete it or start it with '#'",
            field=file_name,
            limit="an edge, not a header row",
            value=_shown(lines[0]),
        )
    try:
        ids = np.array([t.decode("utf-8") for t in unique])
    except UnicodeDecodeError:
        bad = next(ln for ln in lines if not _utf8(ln))
        raise ParameterError(
            f"line {_line_number(raw, bad)}: node labels must be UTF-8 text, got {_shown(bad)}",
            field=file_name,
            limit="UTF-8 text",
            value=_shown(bad),
        ) from None
    ids, inverse = _same_labels(ids, inverse)
    idx = inverse.reshape(-1, 2)
    return Graph.from_edges(ids.size, idx[:, 0], idx[:, 1], name=name, ids=ids)


def _same_labels(ids: np.ndarray, inverse: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Labels that differ only in their Unicode normal form are one node: a contact list
    merged from a macOS export ('e' + U+0301, NFD) and one typed elsewhere (U+00E9, NFC)
    held "José" twice, two devices each with part of his friends. Merged under their NFC
    form, every other label as written (in the sorted order of the NFC forms); ``ids`` and
    ``inverse`` unchanged when no two merge."""
    import unicodedata

    normal = np.array([unicodedata.normalize("NFC", str(label)) for label in ids])
    merged, back, counts = np.unique(normal, return_inverse=True, return_counts=True)
    if merged.size == ids.size:
        return ids, inverse
    back = back.reshape(-1)
    # a label that merged nothing keeps its spelling (``Graph.ids``: the label as written);
    # a merged one is named by its NFC form
    labels = merged.astype(object)
    alone = counts[back] == 1
    labels[back[alone]] = ids[alone]
    return np.array(labels.tolist()), back[inverse]


def _utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _cannot_read(path: Path, reason: str) -> ParameterError:
    return ParameterError(
        f"cannot read the edge list {str(path)!r} ({reason}); a graph is "
        f"{', '.join(NAMED_GRAPHS)}, a generator such as barabasi_albert:n=500,m=3 "
        f"({', '.join(GENERATORS)}) or the path of an edge list",
        field="graph",
        limit="a readable edge list, a named graph or a generator",
        value=str(path),
    )


def _read_raw(path: Path) -> bytes:
    """The file's bytes, decompressed (gzip, bzip2, xz by magic bytes or suffix), to at most
    ``devices.compressed.max_unpacked()`` bytes a layer (``$LDPFLEET_MAX_UNPACKED``)."""
    try:
        raw = path.read_bytes()
    except OSError as exc:  # missing, a directory, unreadable
        raise _cannot_read(path, exc.strerror or type(exc).__name__) from None
    kind = compression(raw)
    if kind is None and path.suffix in _SUFFIXES:
        raise _cannot_read(path, f"named {path.suffix} but not {_SUFFIXES[path.suffix]} data")
    if kind is not None:
        try:  # a .tar.bz2 is bzip2 around tar: devices.compressed.unpack's layers
            raw = unpack(raw)
        except BrokenCompressedData as exc:  # cut or corrupt
            raise _cannot_read(path, str(exc)) from None
        except UnpackedTooLarge as exc:  # a zip bomb or a huge file: stopped past the cap
            raise ParameterError(
                exc.reason(str(path)), field="graph", limit=exc.rule, value=str(path)
            ) from None
    _refuse_archive(path, raw)
    return raw


def _refuse_archive(path: Path, raw: bytes) -> None:
    """A zip / tar / 7z archive holds files, not an edge list: say to extract it (the
    archives and their listing commands: ``devices.compressed.ARCHIVES``, the CSV
    sources' table too)."""
    found = archive(raw)
    if found is None:
        _refuse_not_unpacked(path, raw)
        return
    kind, listing = found
    if kind == "a zip archive" and b"xl/" in raw[:65536]:  # an .xlsx names its xl/ parts
        raise ParameterError(
            f"{str(path)!r} is an Excel workbook, not an edge list: save the sheet's two id "
            "columns as text, one edge a line, ids separated by a space or a tab",
            field="graph",
            limit="a text edge list",
            value=str(path),
        )
    raise ParameterError(
        f"{str(path)!r} is {kind}, not an edge list: extract the edge list from it (list its "
        f"files with {listing} {path.name}; KONECT's is out.NAME) and give that file's path",
        field="graph",
        limit="a text edge list",
        value=str(path),
    )


def _refuse_not_unpacked(path: Path, raw: bytes) -> None:
    """A compression no reader here unpacks (zstd, LZ4, Unix compress, lzip: the table of
    ``devices.compressed.not_unpacked``) is refused with the command that unpacks it; it
    was read as text ("line 1: expected two node ids, got ...")."""
    found = not_unpacked(raw, path.name)
    if found is not None:
        what, command = found
        raise ParameterError(
            f"{str(path)!r} is {what}, not an edge list: {command} and give the edge list's path",
            field="graph",
            limit="a text edge list (gzip, bzip2 or xz compressed at most)",
            value=str(path),
        )


# the end-of-file mark of DOS text files (Ctrl-Z), dropped at the very end as the CSV sources
# drop it (``devices.text_decode.DOS_END_OF_FILE``); anywhere else it stays and is refused
_DOS_END_OF_FILE = DOS_END_OF_FILE.encode()


def _decoded(path: Path, raw: bytes) -> bytes:
    """UTF-8 bytes of the text: a UTF-8 BOM dropped, UTF-16 (with a BOM, or without one
    when the zero bytes say so: ``bomless_utf16``) decoded, a DOS end-of-file mark (Ctrl-Z,
    one or a run of them) at the very end dropped."""
    encoding = utf16_encoding(raw)  # Windows "Unicode" (PowerShell's >), iconv's UTF-16LE
    if encoding is not None:
        try:
            text = raw.decode(encoding).encode("utf-8")
        except UnicodeDecodeError as exc:
            raise _cannot_read(path, f"broken UTF-16 text at byte {exc.start}") from None
        return text.rstrip(_DOS_END_OF_FILE)
    # a UTF-8 BOM (Notepad) is not part of an id
    return raw.removeprefix(UTF8_BOM).rstrip(_DOS_END_OF_FILE)


def _refuse_nul(raw: bytes, lines: list[bytes], file_name: str) -> None:
    """A NUL byte on an edge line (binary data, a corrupt copy): numpy's bytes arrays drop
    trailing NULs, so ``7\\x00`` was read as node 7, silently. UTF-16 is decoded before."""
    bad = next((ln for ln in lines if b"\x00" in ln), None)
    if bad is not None:
        raise ParameterError(
            f"line {_line_number(raw, bad)}: a NUL byte (binary data, not text) in "
            f"{_shown(bad)}: an edge list is text, two node ids a line",
            field=file_name,
            limit="text without NUL bytes",
            value=_shown(bad),
        )


def _uncommented(line: bytes) -> bytes:
    """``line`` without a ``#`` comment at its end (``1 2  # friends``, as networkx's
    ``write_edgelist`` / ``read_edgelist`` allow)."""
    cut = line.find(b"#")
    return line if cut < 0 else line[:cut]


def _edge_text(line: bytes) -> bytes:
    """``line`` without its comment and without networkx's empty edge data: ``1 2 {}`` is
    what ``nx.write_edgelist(G, path)`` writes for an edge without attributes (its default
    ``data=True``), refused as a third column before."""
    line = _uncommented(line)
    bare = line.rstrip()
    if bare.endswith(b"{}") and bare[:-2].rstrip() != bare[:-2]:  # "{}" a field of its own
        return bare[:-2]
    return line


def _is_comment(line: bytes) -> bool:
    """SNAP comments start with ``#``, KONECT's with ``%``."""
    return line.lstrip()[:1] in (b"#", b"%")


def _konect_header(raw: bytes) -> tuple[int, list[bytes]] | None:
    """The line number and words of KONECT's ``% <format> <weights>`` line, if any."""
    for number, line in enumerate(raw[:4096].splitlines()[:5], 1):  # not the whole file
        words = line.lstrip().removeprefix(b"%").split()
        if line.lstrip().startswith(b"%") and words[:1] in ([b"sym"], [b"asym"], [b"bip"]):
            return number, words
    return None


def _refuse_bipartite(raw: bytes, path: Path) -> None:
    header = _konect_header(raw)
    if header is not None and header[1][0] == b"bip":
        raise ParameterError(
            f"line {header[0]}: a KONECT bipartite graph ('% bip'): its two sides both number "
            "their nodes from 1, so the ids of the two sides collide (node 1 of one side "
            "would be node 1 of the other); give a one-mode graph, or shift the second side's "
            "ids past the first's, "
            "e.g. awk '!/^%/ {print $1, $2 + N1}' with N1 the first side's node count",
            field=path.name,
            limit="a one-mode graph",
            value=b" ".join(header[1]).decode(errors="replace"),
        )


def _shape_hint(raw: bytes, bad: bytes, lines: list[bytes], file_name: str) -> str:
    """Why a line has not two fields, and how to fix the file (a command for ``file_name``)."""
    whole = raw.splitlines()[_line_number(raw, bad) - 1]
    if whole != bad and len(bad.split()) < 2:  # a '#' cut it: "user#1 user#2" was "user"
        return (
            f" (the line is {_shown(whole)}: '#' starts a comment, so node ids cannot "
            f"hold one; replace it, e.g. tr '#' '_' < {file_name} > edges.txt)"
        )
    known = _format_hint(raw, lines, file_name)
    if known:
        return known
    fields = bad.split()
    if len(fields) >= 3 and fields[2].startswith(b"{"):  # before the header hint: a line of
        return _networkx_data_hint(file_name)  # labels with edge data is no header row
    if _comma_separated(lines):  # "alice,bob" then "bob,carol": no header row, a CSV
        header = _HEADER_WORDS.issuperset(
            w.lower() for w in lines[0].replace(b";", b",").split(b",")
        )
        return (_header_hint(lines[0], lines) if header else "") + (
            " (ids are separated by spaces or a tab, not commas or semicolons: e.g. "
            f"tr ',;' '  ' < {file_name} > edges.txt)"
        )
    header = _header_hint(bad, lines)
    if header:
        return header
    if len(fields) == 1 and (b"," in bad or b";" in bad):
        return (
            f" (ids are separated by spaces or a tab: e.g. tr ',;' '  ' < {file_name} > edges.txt)"
        )
    if len(fields) == 1:  # not a first-line header word: _header_hint said that
        node = fields[0].decode("utf-8", errors="replace")
        return (
            f" (an isolated node? write it as a self loop, {node!r} twice: '{node} {node}'; "
            "self loops are dropped and their node kept)"
        )
    if len(fields) < 3:
        return ""
    konect = _konect_header(raw)
    if konect is not None and konect[1][1:2] and konect[1][1] in _KONECT_WEIGHTED:
        what = (
            f"the KONECT header on line {konect[0]} says the edges carry "
            f"{konect[1][1].decode(errors='replace')!r} weights"
            + (" and timestamps" if len(fields) >= 4 else "")
        )
    elif len(fields) == 4:
        what = "the 3rd and 4th columns look like a weight and a timestamp (KONECT)"
    elif _is_int64(fields[2]) and abs(int(fields[2])) >= 100_000_000:
        what = "the 3rd column looks like a timestamp"
    elif _is_int64(fields[2]) or _is_float(fields[2]):
        what = "the 3rd column looks like a weight"
    else:
        what = f"{len(fields)} columns"
    cut = f"awk '{{print $1, $2}}' {file_name} > edges.txt"
    return f" ({what}: edges are unweighted here; keep the first two columns, e.g. {cut})"


def _networkx_data_hint(file_name: str) -> str:
    """networkx's ``write_edgelist`` with edge attributes (``1 2 {'weight': 0.5}``)."""
    return (
        " (networkx edge data: edges are unweighted here; write the file with "
        "nx.write_edgelist(G, path, data=False), or keep the first two columns, e.g. "
        f"awk '{{print $1, $2}}' {file_name} > edges.txt)"
    )


_CSV_SAMPLE = 1000  # lines looked at to call an edge list comma (or semicolon) separated


def _comma_separated(lines: list[bytes]) -> bool:
    """Every line (of the first ``_CSV_SAMPLE``) is two fields joined by one comma, or
    every one by one semicolon, without whitespace: an edge list saved as CSV (pandas'
    ``to_csv``, a spreadsheet). Its first line was blamed as "a header row?" when its ids
    were labels (``alice,bob``; helper E's user trial, round 4)."""
    sample = lines[:_CSV_SAMPLE]
    for sep in (b",", b";"):
        if sample and all(
            len(ln.split()) == 1 and ln.count(sep) == 1 and all(ln.strip().split(sep))
            for ln in sample
        ):
            return True
    return False


# other graph formats a user may have (networkx writes all of them): named, with the line
# that converts them, instead of "a header row?" (GraphML), "an isolated node? write
# '*Edges' twice" (Pajek) or "the 3rd column looks like a weight" (an adjacency list);
# helper G's user trial, 2026-12-06
_NX_FORMATS = (  # (what, networkx reader)
    ("an XML file (GraphML?)", "read_graphml"),
    ("a Pajek .net file", "read_pajek"),
    ("a GML file", "read_gml"),
)
_ADJACENCY_SAMPLE = 1000  # lines looked at to call a file an adjacency list


def _format_hint(raw: bytes, lines: list[bytes], file_name: str) -> str:
    """A hint when the file is a graph in another format than an edge list: GraphML/XML,
    Pajek, GML, or an adjacency list (a node, then its neighbours, lines of varying
    length). Empty when it is none of these."""
    text = raw.lstrip(b"\xef\xbb\xbf \t\r\n")
    heads = [ln.strip().lower() for ln in raw.splitlines()[:200]]
    kind = None
    if text.startswith(b"<"):
        kind = _NX_FORMATS[0]
    elif any(h.startswith((b"*vertices", b"*edges", b"*arcs")) for h in heads):
        kind = _NX_FORMATS[1]
    elif text.startswith(b"graph") and b"[" in text[:200]:
        kind = _NX_FORMATS[2]
    if kind is not None:
        convert = (
            f"python -c \"import networkx as nx; nx.write_edgelist(nx.{kind[1]}('{file_name}'), "
            "'edges.txt', data=False)\""
        )
        return (
            f" ({kind[0]}, not an edge list: convert it to one edge a line, e.g. {convert}; "
            "its labels load as node ids)"
        )
    sample = [ln.split() for ln in lines[:_ADJACENCY_SAMPLE]]
    counts = {len(f) for f in sample if len(f) >= 2}
    konect = _konect_header(raw) is not None  # KONECT's columns: weights, timestamps
    integers = all(_is_integer(t) for f in sample for t in f)
    if not konect and len(counts) >= 2 and max(counts) >= 3 and integers:
        split = (
            "awk '{if (NF == 1) print $1, $1; for (i = 2; i <= NF; i++) print $1, $i}' "
            f"{file_name} > edges.txt"
        )
        return (
            f" (lines of {min(counts)} to {max(counts)} ids: an adjacency list, a node then "
            f"its neighbours? write one edge a line, e.g. {split})"
        )
    return ""


def _header_hint(bad: bytes, lines: list[bytes]) -> str:
    """A hint when ``bad`` is a first line of column names (``source,target``)."""
    words = bad.replace(b",", b" ").replace(b";", b" ").split()
    if lines and bad is lines[0] and words and not any(_is_float(w) for w in words):
        return " (a header row of column names? delete it or start it with '#')"
    return ""


def _line_number(raw: bytes, line: bytes) -> int:
    """The 1-based number of the first line of ``raw`` equal to ``line`` (for messages)."""
    return next(k for k, ln in enumerate(raw.splitlines(), 1) if _edge_text(ln) == line)


def _shown(line: bytes) -> str:
    """A line of the file for a message: text (undecodable bytes as U+FFFD), at most 80."""
    text = line.decode("utf-8", errors="replace").strip()
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _range_hint(bad: bytes, file_name: str) -> str:
    """A hint when ``bad`` holds an integer outside int64 (an unsigned 64-bit id, a hash):
    such a line was refused as "at most 19 digits" also when the id had 19 (helper G's
    user trial, 2026-12-06)."""
    big = next((t for t in bad.split() if _is_integer(t) and not _is_int64(t)), None)
    if big is None:
        return ""
    relabel = (
        "awk '{ if (!($1 in m)) m[$1] = n++; if (!($2 in m)) m[$2] = n++; print m[$1], m[$2] }' "
        f"{file_name} > edges.txt"
    )
    return (
        f" ({big.decode()} is outside the 64-bit id range {-(2**63)} .. {2**63 - 1}: "
        f"number the nodes 0, 1, 2, ... instead, e.g. {relabel})"
    )


def _is_integer(token: bytes) -> bool:
    """An integer of any size, as a file writes it (no ``1_000`` digit grouping)."""
    if b"_" in token:
        return False
    try:
        int(token)
    except ValueError:
        return False
    return True


def _is_int64(token: bytes) -> bool:
    if b"_" in token:  # int() reads "1_000" as 1000: not an id written so
        return False
    try:
        return -(2**63) <= int(token) < 2**63
    except ValueError:
        return False


def _is_float(token: bytes) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def ego_facebook() -> Graph:
    """SNAP ego-Facebook (``data/snap-ego-facebook``): 4,039 nodes, 88,234 edges."""
    return load_edge_list(EGO_FACEBOOK, name="ego-facebook")


def wiki_vote() -> Graph:
    """SNAP wiki-Vote (``data/snap-wiki-vote``) made undirected: 7,115 nodes, 100,762 edges."""
    return load_edge_list(WIKI_VOTE, name="wiki-vote")


# --- random graphs ---------------------------------------------------------------------------

GENERATORS: dict[str, tuple[str, ...]] = {
    "erdos_renyi": ("p",),
    "barabasi_albert": ("m",),
    "powerlaw_cluster": ("m", "p"),
    "watts_strogatz": ("k", "p"),
}


# one device per node: the same limit as a scenario's [fleet] devices
GRAPH_MAX_NODES = 1_000_000
# expected edges of a generated graph: 50 x wiki-vote's 100,762; networkx holds about
# 0.5 kB per edge while generating (barabasi_albert:n=100000,m=3: 300k edges, 173 MB
# peak), so the limit is about 2.5 GB
GRAPH_MAX_EDGES = 5_000_000
# networkx's gnp_random_graph draws one coin per node pair: n (n - 1) / 2 = 2e8 pairs at
# n = 20,000, about 80 s at the 2.4 M pairs/s measured (n = 5,000: 5.3 s)
ERDOS_RENYI_MAX_NODES = 20_000


def expected_edges(kind: str, n: int, params: dict[str, float]) -> float:
    """A generator's edge count (expected for erdos_renyi; at most for the others)."""
    if kind == "erdos_renyi":
        return params["p"] * n * (n - 1) / 2
    if kind == "watts_strogatz":
        return n * params["k"] / 2
    return params["m"] * n  # barabasi_albert, powerlaw_cluster: m edges per new node


def generator_size_problem(kind: str, n: int, params: dict[str, float]) -> str | None:
    """Why generating ``kind`` on ``n`` nodes would exhaust time or memory, or None
    (``erdos_renyi:n=100000000,p=0.1`` ran until the kernel killed it at 23 GB)."""
    limit = ERDOS_RENYI_MAX_NODES if kind == "erdos_renyi" else GRAPH_MAX_NODES
    if n > limit:
        why = (
            "erdos_renyi draws a coin per node pair; use barabasi_albert or an edge list "
            "for larger graphs"
            if kind == "erdos_renyi"
            else "one device per node, as [fleet] devices"
        )
        return f"n must be <= {limit:,} ({why}), got n = {n:,}"
    edges = expected_edges(kind, n, params)
    if edges > GRAPH_MAX_EDGES:
        return (
            f"the generated graph would have about {edges:,.0f} edges, more than "
            f"{GRAPH_MAX_EDGES:,} (memory while generating); lower n or the degree"
        )
    return None


def _size_limit(kind: str) -> str:
    """The limits of :func:`generator_size_problem` for ``kind``, as a refusal's ``limit``."""
    nodes = ERDOS_RENYI_MAX_NODES if kind == "erdos_renyi" else GRAPH_MAX_NODES
    return f"n <= {nodes:,} and expected edges <= {GRAPH_MAX_EDGES:,}"


def generate_checks(kind: str, n: int, params: dict[str, float]) -> None:
    """:func:`generate`'s refusals of ``kind``, ``n`` and ``params`` (a
    :class:`ParameterError` naming the parameter, the limit and the value), without
    generating anything."""
    if kind not in GENERATORS:
        raise ParameterError(
            f"unknown kind {kind!r}; one of {sorted(GENERATORS)}",
            field="kind",
            limit=f"one of {sorted(GENERATORS)}",
            value=kind,
        )
    need = GENERATORS[kind]
    if set(params) != set(need):
        raise ParameterError(
            f"{kind} takes exactly {need}, got {sorted(params)}",
            field="params",
            limit=f"exactly {need}",
            value=sorted(params),
        )
    if not isinstance(n, int | np.integer) or n < 1:
        raise ParameterError(
            f"must be a positive integer, got {n!r}", field="n", limit="a positive integer", value=n
        )
    for key in ("p",):
        if key in params and not 0.0 <= params[key] <= 1.0:
            raise ParameterError(
                f"must lie in [0, 1], got {params[key]}",
                field=key,
                limit="[0, 1]",
                value=params[key],
            )
    for key in ("m", "k"):  # nan and inf: int() raised a bare ValueError / OverflowError
        value = params.get(key, 1)
        if not (math.isfinite(value) and int(value) == value and value >= 1):
            raise ParameterError(
                f"must be a positive integer, got {value}",
                field=key,
                limit="a positive integer",
                value=value,
            )
    if "m" in params and params["m"] >= n:
        raise ParameterError(
            f"must be < n={n}, got {params['m']}", field="m", limit=f"< n={n}", value=params["m"]
        )
    if "k" in params and params["k"] >= n:
        raise ParameterError(
            f"must be < n={n}, got {params['k']}", field="k", limit=f"< n={n}", value=params["k"]
        )
    too_large = generator_size_problem(kind, int(n), {k: float(v) for k, v in params.items()})
    if too_large is not None:
        raise ParameterError(too_large, field="n", limit=_size_limit(kind), value=n)


def generate(kind: str, n: int, *, seed: int, **params: float) -> Graph:
    """A random graph of the given ``kind`` on ``n`` nodes, deterministic per ``seed``.

    ``params`` must be exactly the parameters listed for ``kind`` in :data:`GENERATORS`
    (see the module docstring for their meaning).
    """
    generate_checks(kind, n, params)
    need = GENERATORS[kind]

    import networkx as nx

    if isinstance(seed, bool) or not isinstance(seed, int | np.integer):  # int("x"): ValueError
        raise ParameterError(
            f"must be an integer, got {seed!r}", field="seed", limit="an integer", value=seed
        )
    seed = int(seed)
    if kind == "erdos_renyi":
        g = nx.gnp_random_graph(n, float(params["p"]), seed=seed)
    elif kind == "barabasi_albert":
        g = nx.barabasi_albert_graph(n, int(params["m"]), seed=seed)
    elif kind == "powerlaw_cluster":
        g = nx.powerlaw_cluster_graph(n, int(params["m"]), float(params["p"]), seed=seed)
    else:
        g = nx.watts_strogatz_graph(n, int(params["k"]), float(params["p"]), seed=seed)
    e = np.array(list(g.edges()), dtype=np.int64).reshape(-1, 2)
    label = ",".join(f"{k}={params[k]}" for k in need)
    return Graph.from_edges(n, e[:, 0], e[:, 1], name=f"{kind}(n={n},{label},seed={seed})")


NAMED_GRAPHS = {"facebook": ego_facebook, "wiki-vote": wiki_vote}


def is_generator_spec(spec: str) -> bool:
    """True when ``spec`` names a generator (``kind:n=...`` with ``kind`` in
    :data:`GENERATORS`); any other text with a ``:`` is a path."""
    kind, sep, _ = spec.partition(":")
    return bool(sep) and kind in GENERATORS


@dataclass(frozen=True)
class GeneratorSpec:
    """A generator spec ``kind:n=N,<params>,seed=S`` taken apart (``parse_generator_spec``)."""

    kind: str
    n: int
    seed: int
    params: dict[str, int | float]


def parse_generator_spec(spec: str) -> GeneratorSpec:
    """``kind:n=N,<parameters of GENERATORS[kind]>[,seed=S]`` (seed defaults to 0),
    checked without generating anything: every refusal of :func:`generate` and of
    :func:`load_graph` that the text decides is a :class:`ParameterError` naming the
    parameter (``field``), the limit and the value. A scenario's ``[graph] source`` is
    checked with it when the file loads (``scenarios.schema_graph``)."""
    kind, _, rest = spec.partition(":")
    if kind not in GENERATORS:
        raise ParameterError(
            f"unknown kind {kind!r}; one of {sorted(GENERATORS)}",
            field="kind",
            limit=f"one of {sorted(GENERATORS)}",
            value=kind,
        )
    need = GENERATORS[kind]
    usage = f"write {kind}:n=N,{','.join(p + '=…' for p in need)}[,seed=S]"
    fields: dict[str, str] = {}
    for part in (part.strip() for part in rest.split(",") if part.strip()):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ParameterError(
                f"{part!r} is not name=value ({usage})",
                field="graph",
                limit="name=value",
                value=part,
            )
        if key in fields:
            raise ParameterError(
                f"given twice ({fields[key]!r} and {value!r})",
                field=key,
                limit="given once",
                value=value,
            )
        if key not in ("n", "seed", *need):
            raise ParameterError(
                f"is not a parameter of {kind}, which takes n, {', '.join(need)} and seed "
                f"({usage})",
                field=key,
                limit=f"one of n, {', '.join(need)}, seed",
                value=key,
            )
        fields[key] = value.strip()
    for key in ("n", *need):
        if key not in fields:
            raise ParameterError(f"missing ({usage})", field=key, limit="required", value=None)
    n = _spec_integer(fields.pop("n"), "n")
    seed = _spec_integer(fields.pop("seed", "0"), "seed")
    params = {key: _spec_number(value, key) for key, value in fields.items()}
    generate_checks(kind, n, params)
    _refuse_edgeless(spec, kind, n, params)
    return GeneratorSpec(kind, n, seed, params)


def _spec_integer(text: str, key: str) -> int:
    """An integer parameter of a generator spec (``n``, ``seed``), or a refusal naming it."""
    try:
        return int(text)
    except ValueError:
        raise ParameterError(
            f"must be an integer, got {text!r}", field=key, limit="an integer", value=text
        ) from None


def _spec_number(text: str, key: str) -> int | float:
    """A numeric parameter of a generator spec: an int when written as digits (``m=3``),
    else a finite float (``p=0.1``); refused naming it otherwise."""
    if text.isdigit():
        return int(text)
    try:
        value = float(text)
    except ValueError:
        raise ParameterError(
            f"must be a number, got {text!r}", field=key, limit="a number", value=text
        ) from None
    if not math.isfinite(value):
        raise ParameterError(
            f"must be a finite number, got {text!r}", field=key, limit="a finite number", value=text
        )
    return value


def _refuse_edgeless(spec: str, kind: str, n: int, params: dict[str, int | float]) -> None:
    """Refuse a spec whose graph has no edge whatever the seed (``load_graph`` refuses it
    after generating it): one node, ``erdos_renyi`` with p = 0, ``watts_strogatz`` with
    k < 2 (``k // 2`` neighbours on each side)."""
    if n == 1:
        why = "n must be >= 2, got n = 1"
    elif kind == "erdos_renyi" and params.get("p") == 0:
        why = "p must be > 0 for erdos_renyi, got p = 0"
    elif kind == "watts_strogatz" and 1 <= params.get("k", 2) < 2:
        why = f"k must be >= 2 (k // 2 neighbours on each side), got k = {params['k']}"
    else:
        return
    raise ParameterError(
        f"{spec!r} has no edges whatever the seed ({why}): a degree release needs at least one",
        field="graph",
        limit="at least one edge",
        value=spec,
    )


def load_graph(spec: str) -> Graph:
    """A graph by name (``facebook``, ``wiki-vote``), by generator
    (``barabasi_albert:n=200,m=3,seed=1``; parameters of :data:`GENERATORS`, ``seed``
    defaults to 0) or by the path of a SNAP edge list."""
    if not spec.strip():  # "" was "cannot read the edge list '.' (Is a directory)"
        raise ParameterError(
            f"is empty ({spec!r}); a graph is {', '.join(NAMED_GRAPHS)}, a generator such as "
            "barabasi_albert:n=500,m=3 or the path of an edge list",
            field="graph",
            limit="a named graph, a generator or a path",
            value=spec,
        )
    if spec in NAMED_GRAPHS:
        return NAMED_GRAPHS[spec]()
    if is_generator_spec(spec):
        parsed = parse_generator_spec(spec)
        graph = generate(parsed.kind, parsed.n, seed=parsed.seed, **parsed.params)
    else:
        graph = load_edge_list(spec)
    if graph.edges() == 0:  # a degree release needs D >= 1 (else "degree_bound: ... got 0")
        raise ParameterError(
            f"{spec!r} has no edges ({graph.n} node(s); blank lines, comments and self "
            "loops are not edges): a degree release needs at least one",
            field="graph",
            limit="at least one edge",
            value=spec,
        )
    return graph
