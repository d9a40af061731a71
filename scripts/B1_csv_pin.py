"""Pin what the CSV reader makes of many files, before and after a pure refactor of
``devices.sources._csv_lines`` (helper B1, 2026-12-06: the blank-line filter).

    python scripts/B1_csv_pin.py record PIN.json [FOLDER ...]
    python scripts/B1_csv_pin.py compare PIN.json [FOLDER ...]

Files: every file under data/ and the FOLDERs, plus generated edge cases (blank lines,
lines of delimiters, whitespace-only and Unicode-space cells, quoted blanks, CRLF, tabs).
Each file's pin is a digest of ``_csv_lines``'s lines and delimiter, or of its exception's
type and message; ``compare`` exits 1 naming every file whose pin changed.
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

from ldpfleet.devices import sources

EDGE_CASES = {
    "blank_lines.csv": "a,b\n\n1,2\n\n\n3,4\n",
    "delimiter_lines.csv": "a,b\n,\n1,2\n , \n3,4\n",
    "unicode_space.csv": "a,b\n\u00a0,\u3000\n1,2\n\u2003,x\n",
    "quoted_blank.csv": 'a,b\n" ",""\n1,2\n"  ","\t"\n',
    "crlf_blank.csv": "a;b\r\n\r\n1;2\r\n;\r\n",
    "tabs.tsv": "a\tb\n\t\n1\t2\n \t \n",
    "single_space_row.csv": "a\n \n1\n",
    "one_col_blank_first.csv": "\n\na\n1\n",
    "zero_width.csv": "a,b\n\u200b,\n1,2\n",
}


def pins(folders: list[str]) -> dict[str, str]:
    files = sorted(p for p in Path("data").rglob("*") if p.is_file())
    for folder in folders:
        files += sorted(p for p in Path(folder).rglob("*") if p.is_file())
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in EDGE_CASES.items():
            path = Path(tmp) / name
            path.write_text(text, encoding="utf-8", newline="")
            out[f"edge:{name}"] = _pin(path)
        for path in files:
            if path.stat().st_size <= 50_000_000:
                out[str(path)] = _pin(path)
    return out


def _pin(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        raw = sources.read_data_file(str(path))
        lines, delimiter = sources._csv_lines(raw, "FILE")
        digest.update(repr(delimiter).encode())
        for lineno, row in lines:
            digest.update(repr((lineno, row)).encode())
    except Exception as error:  # the refusal is pinned too
        digest.update(f"{type(error).__name__}: {error}".encode())
    return digest.hexdigest()


def main(argv: list[str]) -> int:
    mode, pin_file, *folders = argv
    now = pins(folders)
    if mode == "record":
        Path(pin_file).write_text(json.dumps(now, indent=1))
        print(f"recorded {len(now)} files")
        return 0
    before = json.loads(Path(pin_file).read_text())
    changed = [k for k in before if before[k] != now.get(k)] + [k for k in now if k not in before]
    print(f"{len(now)} files, {len(changed)} changed" + "".join(f"\n  {k}" for k in changed))
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
