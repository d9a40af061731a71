"""Compressed files recognised by their first bytes: the one table and unpacker of the CSV
sources, ``bench gcdp``'s Occupancy files (both through ``devices.sources.read_data_file``)
and the ``[graph]`` edge lists (``devices.graphs``): gzip, bzip2 and xz, unpacked through
up to two layers (``unpack``), and the archives and compressions no reader unpacks (tar,
7z, zstd, LZ4, Unix compress, lzip: ``not_unpacked``, with the command that does). A file's
name is not needed but for that command; each caller words its own refusal
(``BrokenCompressedData`` carries the format and the reason).

Every layer is unpacked incrementally, at most ``max_unpacked()`` bytes of it
(``DEFAULT_MAX_UNPACKED``, 2 GiB, or ``$LDPFLEET_MAX_UNPACKED``): a small ``.gz`` that
expands to many GiB (a "zip bomb", or just a huge file) is stopped one byte past the cap
(``UnpackedTooLarge``, whose ``reason`` names the file, the cap, how far it got and how to
raise the cap) instead of ending in a MemoryError or swapping the machine."""

from __future__ import annotations

import io
import os
import re
import zlib
from decimal import Decimal

__all__ = [
    "ARCHIVES",
    "COMPRESSED",
    "DEFAULT_MAX_UNPACKED",
    "MAX_LAYERS",
    "MAX_UNPACKED_ENV",
    "NOT_UNPACKED",
    "BrokenCompressedData",
    "UnpackedTooLarge",
    "archive",
    "check_zip_size",
    "compression",
    "decompress",
    "max_unpacked",
    "not_unpacked",
    "unpack",
]

# bzip2's magic is "BZh" and a block size digit: a text file starting "BZh" stays text
COMPRESSED: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    *((b"BZh" + digit.encode(), "bzip2") for digit in "123456789"),
    (b"\xfd7zXZ\x00", "xz"),
)


# The archives (files, not data) by their first bytes: (magic, offset, what it is, the
# command that lists its files). One table for the CSV sources (the tar and 7z rows of
# NOT_UNPACKED) and the edge lists (``archive``: "list its files with tar -tf x.tar.bz2;
# KONECT's is out.NAME", a zip too).
ARCHIVES: tuple[tuple[bytes, int, str, str], ...] = (
    (b"PK\x03\x04", 0, "a zip archive", "unzip -l"),
    (b"PK\x05\x06", 0, "a zip archive", "unzip -l"),  # an empty zip
    (b"ustar", 257, "a tar archive", "tar -tf"),
    (b"7z\xbc\xaf\x27\x1c", 0, "a 7z archive", "7z l"),
)

# Archives and compressions recognised by their first bytes that no reader here unpacks,
# each with the command that does: a CSV source read a .tar.gz as text ("line 4 of
# a.tar.gz has 1 fields, expected 2") and a zstd, 7z or doubly gzipped file as a Windows
# "ANSI" export (helper B's user day, 2026-12-07); the edge lists knew only tar and 7z.
# (magic, offset, what it is, the command, {name} the file's name). Zip archives stay with
# each reader: a CSV source tells a NumPy .npz and spreadsheets from a zipped CSV.
NOT_UNPACKED: tuple[tuple[bytes, int, str, str], ...] = (
    *(
        (magic, offset, what, f"list its files with {listing} {{name}}, extract one")
        for magic, offset, what, listing in ARCHIVES
        if what != "a zip archive"
    ),
    (b"\x28\xb5\x2f\xfd", 0, "Zstandard (zstd) data", "unpack it with zstd -d {name}"),
    (b"\x04\x22\x4d\x18", 0, "LZ4 data", "unpack it with lz4 -d {name}"),
    (b"\x1f\x9d", 0, "Unix compress (.Z) data", "unpack it with gzip -d {name}"),
    (b"LZIP\x01", 0, "lzip data", "unpack it with lzip -d {name}"),
)
MAX_LAYERS = 2  # a .tar.bz2 is bzip2 around tar; a .csv.gz.gz two gzip layers: plenty

# The cap on the bytes one layer unpacks to. The shipped data sets unpack to well under
# 100 MB (the largest, SNAP's wiki-Vote edge list, to 1.1 MB); a user's file that needs more
# raises it with the environment variable. At the cap one layer's unpacking holds the cap
# once in pieces and once joined (4 GiB at 2 GiB); with two layers the first layer's output
# stays alive while the second unpacks, about 3 x the cap (6 GiB) plus the input, which a
# 24 GiB machine survives; the readers after it need several times the text's size again
# (docs/scenarios.md, "Compressed files").
DEFAULT_MAX_UNPACKED = 2 * 1024**3
MAX_UNPACKED_ENV = "LDPFLEET_MAX_UNPACKED"
_CHUNK = 1 << 20  # bytes unpacked per read: the cap is checked after each
_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3,
          "gb": 1000**3, "t": 1000**4, "tb": 1000**4, "kib": 1024, "mib": 1024**2,
          "gib": 1024**3, "tib": 1024**4}  # fmt: skip
_MAX_CAP = 2**63  # a cap must fit a signed 64-bit count of bytes
_SIZE = re.compile(r"\s*(\d+(?:\.\d*)?)\s*([a-z]*)\s*", re.IGNORECASE)


def max_unpacked() -> int:
    """The cap on the bytes one layer of compressed data unpacks to: ``$LDPFLEET_MAX_UNPACKED``
    when set (a number of bytes, or with a unit: ``8GiB``, ``500MB``, ``3G``; G and GB are
    10^9, GiB 2^30), else ``DEFAULT_MAX_UNPACKED`` (2 GiB).

    Raises:
        ParameterError: the variable is set but not a size of at least one byte (field
            ``LDPFLEET_MAX_UNPACKED``, the rule, the value)."""
    text = os.environ.get(MAX_UNPACKED_ENV)
    if text is None or not text.strip():
        return DEFAULT_MAX_UNPACKED
    match = _SIZE.fullmatch(text)
    unit = _UNITS.get(match.group(2).lower()) if match else None
    # Decimal, not float: a byte count above 2**53 is the cap asked for, to the byte
    size = int(Decimal(match.group(1)) * unit) if match and unit else 0
    if size >= _MAX_CAP:
        from ldpfleet.protocol.errors import ParameterError

        raise ParameterError(
            f"must be below 2**63 bytes (8 EiB), got {text!r}",
            field=MAX_UNPACKED_ENV,
            limit="a size < 2**63 bytes (8 EiB)",
            value=text,
        )
    if size < 1:
        from ldpfleet.protocol.errors import ParameterError

        raise ParameterError(
            f"must be a size of at least one byte (a number of bytes, or with a unit: 8GiB, "
            f"500MB), got {text!r}",
            field=MAX_UNPACKED_ENV,
            limit="a size >= 1 byte (bytes, or kB/MB/GB/TB, KiB/MiB/GiB/TiB)",
            value=text,
        )
    return size


def _size_text(size: int) -> str:
    """``2 GiB``, ``64 KiB``, ``1.5 GiB``, ``1,000 bytes``: a cap as a person reads it."""
    for unit, scale in (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if size >= scale:
            return f"{size / scale:,.4g} {unit}" if size % scale else f"{size // scale:,} {unit}"
    return f"{size:,} bytes"


def archive(raw: bytes) -> tuple[str, str] | None:
    """What ``raw`` (already unpacked by ``unpack``) is when it is an archive of
    ``ARCHIVES``, and the command that lists its files.

    Returns:
        ``("a tar archive", "tar -tf")``, or None for anything else."""
    for magic, offset, what, listing in ARCHIVES:
        if raw[offset : offset + len(magic)] == magic:
            return what, listing
    return None


def not_unpacked(raw: bytes, name: str) -> tuple[str, str] | None:
    """What ``raw`` (already unpacked by ``unpack``) is when it is an archive or a
    compression of ``NOT_UNPACKED``, and the command (naming the file ``name``) that gets
    its text out.

    Returns:
        ``("a tar archive", "list its files with tar -tf data.tar.gz, extract one")``, or
        None for anything else."""
    for magic, offset, what, command in NOT_UNPACKED:
        if raw[offset : offset + len(magic)] == magic:
            return what, command.format(name=name)
    return None


def unpack(raw: bytes, limit: int | None = None) -> bytes:
    """``raw`` unpacked through up to ``MAX_LAYERS`` layers of gzip, bzip2 or xz (by their
    first bytes: a ``.tar.gz``, a ``.csv.gz.gz``); unchanged when it is none of them. Each
    layer unpacks to at most ``limit`` bytes (default ``max_unpacked()``).

    Raises:
        BrokenCompressedData: a layer is cut short or corrupt, or (``TooManyLayers``) the
            data is still compressed after ``MAX_LAYERS`` layers (a ``.csv.gz.gz.gz`` was
            read on as text and refused as "not UTF-8 text (byte 0x8b ...)").
        UnpackedTooLarge: a layer unpacks to more than ``limit`` bytes (stopped one byte
            past it, never inflated whole).
        ParameterError: ``$LDPFLEET_MAX_UNPACKED`` is not a size (``max_unpacked``)."""
    if compression(raw) is not None and limit is None:
        limit = max_unpacked()
    for _layer in range(MAX_LAYERS):
        kind = compression(raw)
        if kind is None:
            break
        raw = decompress(raw, kind, limit)
    kind = compression(raw)
    if kind is not None:
        raise TooManyLayers(kind)
    return raw


class BrokenCompressedData(ValueError):
    """Data that starts as ``kind`` but does not unpack (cut short or corrupt)."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(f"broken {kind} data ({reason})")
        self.kind = kind
        self.reason = reason


class UnpackedTooLarge(ValueError):
    """Compressed data (``kind``) that unpacks to more than ``limit`` bytes: ``read`` bytes
    were unpacked (``limit`` + 1) when it stopped. ``reason(name)`` is the one sentence of
    every reader's refusal, ``rule`` its limit; each reader raises it as its own typed
    ``ParameterError`` (the field its setting has, the file as the value)."""

    def __init__(self, kind: str, limit: int, read: int, declared: bool = False) -> None:
        super().__init__(f"{kind} data unpacks to more than {_size_text(limit)}")
        self.kind = kind
        self.limit = limit
        self.read = read
        self.declared = declared  # a zip's members declare their sizes: nothing unpacked

    def reason(self, name: str) -> str:
        """``data.csv.gz unpacks to more than 2 GiB (read 2,147,483,649 bytes before
        stopping): ...`` with how to raise the cap."""
        how_far = (
            f"its members declare {self.read:,} bytes"
            if self.declared
            else f"read {self.read:,} bytes before stopping"
        )
        return (
            f"{name} unpacks to more than {_size_text(self.limit)} ({self.kind} data; "
            f"{how_far}): a file this large is refused rather than "
            f"exhaust the memory; to read it, raise the cap with the environment variable "
            f"{MAX_UNPACKED_ENV} (bytes, or e.g. 8GiB) or unpack it first"
        )

    @property
    def rule(self) -> str:
        """The limit the file broke, for a ``ParameterError``'s ``limit``."""
        return f"at most {_size_text(self.limit)} unpacked (${MAX_UNPACKED_ENV})"


def check_zip_size(raw: bytes, limit: int | None = None) -> None:
    """A zip (a NumPy ``.npz``) whose members declare more than ``limit`` unpacked bytes
    (default ``max_unpacked()``) in all is refused before any is read (``UnpackedTooLarge``,
    ``declared``): Python's zipfile never returns more of a member than its declared size,
    so the declared sizes bound what reading it unpacks. A zip too broken to list passes
    (its reader says what is wrong with it)."""
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(raw)) as archive:
            total = sum(info.file_size for info in archive.infolist())
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return
    if limit is None:
        limit = max_unpacked()
    if total > limit:
        raise UnpackedTooLarge("zip", limit, total, declared=True)


class TooManyLayers(BrokenCompressedData):
    """Data still ``kind`` compressed after ``MAX_LAYERS`` layers were unpacked."""

    def __init__(self, kind: str) -> None:
        ValueError.__init__(
            self,
            f"{kind} data still, after {MAX_LAYERS} layers unpacked (at most {MAX_LAYERS} "
            "layers of compression are read: unpack the rest first)",
        )
        self.kind = kind
        self.reason = f"more than {MAX_LAYERS} layers of compression"


def compression(raw: bytes) -> str | None:
    """The compression of ``raw`` by its first bytes.

    Returns:
        ``"gzip"``, ``"bzip2"`` or ``"xz"``; None for anything else."""
    return next((kind for magic, kind in COMPRESSED if raw.startswith(magic)), None)


def decompress(raw: bytes, kind: str, limit: int | None = None) -> bytes:
    """``raw`` unpacked as ``kind`` (a value ``compression`` returns), incrementally: at most
    ``limit`` bytes (default ``max_unpacked()``) are kept, and the unpacking stops one byte
    past them.

    Returns:
        The unpacked bytes.

    Raises:
        BrokenCompressedData: the data is cut short or corrupt, also past a header that
            reads (a broken deflate stream raised ``zlib.error``, a traceback).
        UnpackedTooLarge: it unpacks to more than ``limit`` bytes."""
    import bz2
    import gzip
    import lzma

    if limit is None:
        limit = max_unpacked()
    opener = {
        "gzip": lambda fh: gzip.GzipFile(fileobj=fh, mode="rb"),
        "bzip2": bz2.BZ2File,
        "xz": lzma.LZMAFile,
    }[kind]
    pieces: list[bytes] = []
    read = 0
    try:
        with opener(io.BytesIO(raw)) as stream:  # every member / stream, as *.decompress
            while read <= limit:
                piece = stream.read(min(_CHUNK, limit + 1 - read))
                if not piece:
                    break
                pieces.append(piece)
                read += len(piece)
    except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error) as exc:
        raise BrokenCompressedData(kind, str(exc) or type(exc).__name__) from None
    if read > limit:
        raise UnpackedTooLarge(kind, limit, read)
    return b"".join(pieces)
