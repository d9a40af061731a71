"""Compressed files recognised by their first bytes: the one table and unpacker of the CSV
sources, ``bench gcdp``'s Occupancy files (both through ``devices.sources.read_data_file``)
and the ``[graph]`` edge lists (``devices.graphs``): gzip, bzip2 and xz, unpacked through
up to two layers (``unpack``), and the archives and compressions no reader unpacks (tar,
7z, zstd, LZ4, Unix compress, lzip: ``not_unpacked``, with the command that does). A file's
name is not needed but for that command; each caller words its own refusal
(``BrokenCompressedData`` carries the format and the reason)."""

from __future__ import annotations

import zlib

__all__ = [
    "COMPRESSED",
    "MAX_LAYERS",
    "NOT_UNPACKED",
    "BrokenCompressedData",
    "compression",
    "decompress",
    "not_unpacked",
    "unpack",
]

# bzip2's magic is "BZh" and a block size digit: a text file starting "BZh" stays text
COMPRESSED: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    *((b"BZh" + digit.encode(), "bzip2") for digit in "123456789"),
    (b"\xfd7zXZ\x00", "xz"),
)


# Archives and compressions recognised by their first bytes that no reader here unpacks,
# each with the command that does: a CSV source read a .tar.gz as text ("line 4 of
# a.tar.gz has 1 fields, expected 2") and a zstd, 7z or doubly gzipped file as a Windows
# "ANSI" export (helper B's user day, 2026-12-07); the edge lists knew only tar and 7z.
# (magic, offset, what it is, the command, {name} the file's name). Zip archives stay with
# each reader: a CSV source tells a NumPy .npz and spreadsheets from a zipped CSV.
NOT_UNPACKED: tuple[tuple[bytes, int, str, str], ...] = (
    (b"ustar", 257, "a tar archive", "list its files with tar -tf {name}, extract one"),
    (b"7z\xbc\xaf\x27\x1c", 0, "a 7z archive", "list its files with 7z l {name}, extract one"),
    (b"\x28\xb5\x2f\xfd", 0, "Zstandard (zstd) data", "unpack it with zstd -d {name}"),
    (b"\x04\x22\x4d\x18", 0, "LZ4 data", "unpack it with lz4 -d {name}"),
    (b"\x1f\x9d", 0, "Unix compress (.Z) data", "unpack it with gzip -d {name}"),
    (b"LZIP", 0, "lzip data", "unpack it with lzip -d {name}"),
)
MAX_LAYERS = 2  # a .tar.bz2 is bzip2 around tar; a .csv.gz.gz two gzip layers: plenty


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


def unpack(raw: bytes) -> bytes:
    """``raw`` unpacked through up to ``MAX_LAYERS`` layers of gzip, bzip2 or xz (by their
    first bytes: a ``.tar.gz``, a ``.csv.gz.gz``); unchanged when it is none of them.

    Raises:
        BrokenCompressedData: a layer is cut short or corrupt, or (``TooManyLayers``) the
            data is still compressed after ``MAX_LAYERS`` layers (a ``.csv.gz.gz.gz`` was
            read on as text and refused as "not UTF-8 text (byte 0x8b ...)")."""
    for _layer in range(MAX_LAYERS):
        kind = compression(raw)
        if kind is None:
            break
        raw = decompress(raw, kind)
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


def decompress(raw: bytes, kind: str) -> bytes:
    """``raw`` unpacked as ``kind`` (a value ``compression`` returns).

    Returns:
        The unpacked bytes.

    Raises:
        BrokenCompressedData: the data is cut short or corrupt, also past a header that
            reads (a broken deflate stream raised ``zlib.error``, a traceback)."""
    import bz2
    import gzip
    import lzma

    unpack = {"gzip": gzip.decompress, "bzip2": bz2.decompress, "xz": lzma.decompress}
    try:
        return unpack[kind](raw)
    except (OSError, EOFError, ValueError, lzma.LZMAError, zlib.error) as exc:
        raise BrokenCompressedData(kind, str(exc) or type(exc).__name__) from None
