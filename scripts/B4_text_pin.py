"""Digest of the text decoding and archive refusals of the CSV sources and the edge lists
(helper B, 2026-12-07): the pin of the move of ``bomless_utf16`` / ``decode_text`` /
``broken_utf16_reason`` into ``devices/text_decode.py`` and of the edge lists' archive
sentences onto ``devices.compressed.ARCHIVES``. Run it on the code before and after:

    python scripts/B4_text_pin.py /tmp/pin-dir /tmp/pin.txt

prints the number of outputs and their SHA-256 (597 outputs, 6b39f3cf... on main at
0a943d6e and after the move: identical, ``diff`` of the two text files empty)."""

from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import lzma
import sys
import tarfile
import zipfile
from pathlib import Path

from ldpfleet.devices import graphs, sources


def _tar(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as archive:
        info = tarfile.TarInfo(name)
        info.size = len(data)
        archive.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _zipped(names: list[str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as archive:
        for name in names:  # a fixed date: the same bytes on every run
            archive.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), b"1 2\n")
    return buf.getvalue()


CSV = "a,b\n1.5,2\n3,4\n"
TEXTS = (
    ("csv", CSV),
    ("edges", "# g\n1 2\n2 3\n3 1\n"),
    ("comma", "a;b\n1,5;2\n3;4\n"),
    ("sep", "sep=;\na;b\n1;2\n"),
)


def inputs() -> dict[str, bytes]:
    found = {}
    for name, text in TEXTS:
        for encoding in ("utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be"):
            for end in ("", "\x1a", "\x1a\x1a", "\x1a\n"):
                found[f"{name}-{encoding}-{end!r}"] = (text + end).encode(encoding)
    found["broken-utf16-bom"] = b"\xff\xfe" + b"a\x00,\x00\x00\xd8"
    found["broken-bomless"] = "a,b\n1,2\n".encode("utf-16-le")[:-2] + b"\x00\xd8"
    found["latin1"] = "t°C,b\n1,2\n".encode("latin-1")
    found["odd-zero"] = b"1 2\n\x00"
    found["tar"] = _tar("out.x", b"1 2\n")
    found["tar.gz"] = gzip.compress(_tar("out.x", b"1 2\n"), mtime=0)
    found["tar.bz2"] = bz2.compress(_tar("out.x", b"1 2\n"))
    found["7z"] = b"7z\xbc\xaf\x27\x1c" + bytes(40)
    found["zip"] = _zipped(["edges.txt"])
    found["xlsx"] = _zipped(["xl/workbook.xml", "[Content_Types].xml"])
    found["emptyzip"] = b"PK\x05\x06" + bytes(18)
    found["zstd"] = b"\x28\xb5\x2f\xfd" + bytes(20)
    found["lz4"] = b"\x04\x22\x4d\x18" + bytes(20)
    found["Z"] = b"\x1f\x9d" + bytes(20)
    found["lzip"] = b"LZIP" + bytes(20)
    found["gz-xz"] = gzip.compress(lzma.compress(CSV.encode()), mtime=0)
    return found


def _run(call, *args) -> str:
    try:
        return repr(call(*args))
    except Exception as error:
        field, limit = getattr(error, "field", None), getattr(error, "limit", None)
        return f"{type(error).__name__}: {error} | {field} {limit}"


def _table(path: Path):
    names, matrix = sources.load_table(str(path))
    return names, matrix.tolist()


def _outputs(key: str, raw: bytes, path: Path) -> list[tuple[str, str, str]]:
    out = [
        (key, "decode_text", _run(sources.decode_text, raw)),
        (key, "csv_text", _run(sources.csv_text, raw, "x.csv")),
        (key, "binary_format", _run(sources.binary_format, raw, "x.bin")),
    ]
    try:
        raw.decode("utf-16")
    except UnicodeDecodeError as error:
        out.append((key, "broken_utf16_reason", _run(sources.broken_utf16_reason, error)))
    path.write_bytes(raw)
    out.append(
        (key, "graphs._decoded", _run(lambda: graphs._decoded(path, graphs._read_raw(path))))
    )
    out.append((key, "load_graph", _run(lambda: sorted(graphs.load_graph(str(path)).edges()))))
    out.append((key, "load_table", _run(_table, path)))
    return out


def main() -> None:
    tmp = Path(sys.argv[1])
    tmp.mkdir(exist_ok=True)
    out = []
    for key, raw in sorted(inputs().items()):
        out += _outputs(key, raw, tmp / f"{key}.dat")
    text = "\n".join(" :: ".join(row).replace(str(tmp), "TMP") for row in out)
    Path(sys.argv[2]).write_text(text)
    print(len(out), hashlib.sha256(text.encode()).hexdigest())


if __name__ == "__main__":
    main()
