"""The text of a data file's bytes: the one decoder of the CSV sources
(``devices.sources``), ``bench gcdp``'s Occupancy files (``collector.gcdp.evaluation``, via
``devices.sources.csv_text``) and the ``[graph]`` edge lists (``devices.graphs``).

- UTF-16 with a byte-order mark (Excel's "Unicode Text" export, PowerShell's ``>``), or
  without one when the zero bytes say so (``bomless_utf16``: ``iconv -t UTF-16LE``, some
  loggers);
- else UTF-8, a UTF-8 BOM (Notepad) skipped;
- a DOS end-of-file mark (Ctrl-Z, ``DOS_END_OF_FILE``), one or a run of them, at the very
  end is the caller's to drop (each reader drops it after decoding; anywhere else it stays
  and is refused as part of its cell or line).

It was spread over two modules: ``bomless_utf16`` lived in ``devices.graphs`` and
``devices.sources`` imported it from there (helper B, 2026-12-07: a text question, not a
graph one). ``devices.sources`` re-exports ``decode_text`` and ``broken_utf16_reason``."""

from __future__ import annotations

__all__ = [
    "DOS_END_OF_FILE",
    "UTF8_BOM",
    "UTF16_BOMS",
    "UTF16_SAMPLE",
    "bomless_utf16",
    "broken_utf16_reason",
    "decode_text",
    "utf16_encoding",
]

UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")  # little- and big-endian byte-order marks
UTF8_BOM = b"\xef\xbb\xbf"
# the end-of-file mark of DOS and CP/M text files (Ctrl-Z): some Windows tools still write
# one after the last line; it was "line 4 of data.csv has 1 fields, expected 2" (CSV) and
# "line 6: expected two node ids, got '\x1a'" (edge lists)
DOS_END_OF_FILE = "\x1a"
UTF16_SAMPLE = 65536  # bytes looked at to recognise UTF-16 without a BOM


def bomless_utf16(raw: bytes) -> str | None:
    """``utf-16-le``/``utf-16-be`` for UTF-16 text without a BOM, else None. An edge list
    or a CSV of numbers is ASCII (digits, separators, comments), so in UTF-16 every
    character's high byte is zero: zero bytes at 90 % or more of the odd (LE) or even (BE)
    positions of the first ``UTF16_SAMPLE`` bytes, and none at the others. UTF-8 text has
    no zero byte."""
    sample = raw[: UTF16_SAMPLE - UTF16_SAMPLE % 2]
    if len(sample) < 2 or len(raw) % 2 or b"\x00" not in sample:
        return None
    even, odd = sample[0::2], sample[1::2]
    for zeros, others, encoding in ((odd, even, "utf-16-le"), (even, odd, "utf-16-be")):
        if b"\x00" not in others and zeros.count(0) >= 0.9 * len(zeros):
            return encoding
    return None


def utf16_encoding(raw: bytes) -> str | None:
    """The UTF-16 codec that reads ``raw``: ``"utf-16"`` when it starts with a UTF-16
    byte-order mark, ``"utf-16-le"``/``"utf-16-be"`` when its zero bytes say it is UTF-16
    without one (``bomless_utf16``), None for anything else (read as UTF-8)."""
    if raw.startswith(UTF16_BOMS):
        return "utf-16"
    return bomless_utf16(raw)


def decode_text(raw: bytes) -> str:
    """The text of a text file's bytes (unpacked: ``devices.sources.read_data_file``):
    UTF-16 when it starts with a UTF-16 byte-order mark (Excel's "Unicode Text" export,
    tab-separated; PowerShell's ``>``) or whose zero bytes say it is UTF-16 without one
    (``bomless_utf16``), else UTF-8 (a UTF-8 BOM is skipped). The one decoder of the CSV
    sources and of the Occupancy-format reader (``collector.gcdp.evaluation.load_occupancy``,
    ``bench gcdp --train-file``). Raises ``UnicodeDecodeError`` (its ``encoding`` says which
    was tried, offsets count from the file's first byte) for the caller to word."""
    # a BOM was refused as "not UTF-8 text (byte 0xff on line 1)" (helper P, 2026-12-06);
    # UTF-16 without one was "line 4 has 1 fields, expected 2" (helper B's user day)
    encoding = utf16_encoding(raw)
    if encoding is not None:
        return raw.decode(encoding)
    return raw.decode("utf-8-sig")  # (bytes first: the whole file's offsets)


def broken_utf16_reason(error: UnicodeDecodeError) -> str | None:
    """What ``decode_text``'s ``error`` says of a file that starts with a UTF-16 byte-order
    mark but is not UTF-16 text, for the caller to put after the file's name; None when
    it was the UTF-8 reading that failed (the caller names the line)."""
    if not error.encoding.startswith("utf-16"):
        return None
    if bytes(error.object[:2]) in UTF16_BOMS:
        looks = "starts with a UTF-16 byte-order mark"
    else:  # read as UTF-16 by its zero bytes (``bomless_utf16``)
        looks = "looks like UTF-16 text (zero bytes, no byte-order mark)"
    return (
        f"{looks} but is not UTF-16 text ({error.reason} at byte {error.start}): save it as UTF-8"
    )
