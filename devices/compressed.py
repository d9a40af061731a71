"""Compressed files recognised by their first bytes: the one table and unpacker of the CSV
sources, ``bench gcdp``'s Occupancy files (both through ``devices.sources.read_data_file``)
and the ``[graph]`` edge lists (``devices.graphs``). A file's name is not needed; each
caller words its own refusal (``BrokenCompressedData`` carries the format and the reason)."""

from __future__ import annotations

import zlib

__all__ = ["COMPRESSED", "BrokenCompressedData", "compression", "decompress"]

# bzip2's magic is "BZh" and a block size digit: a text file starting "BZh" stays text
COMPRESSED: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"),
    *((b"BZh" + digit.encode(), "bzip2") for digit in "123456789"),
    (b"\xfd7zXZ\x00", "xz"),
)


class BrokenCompressedData(ValueError):
    """Data that starts as ``kind`` but does not unpack (cut short or corrupt)."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(f"broken {kind} data ({reason})")
        self.kind = kind
        self.reason = reason


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
