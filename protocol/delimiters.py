"""The field separator of a delimited text table (CSV and its semicolon / tab variants).

Used by the scenarios' CSV sources (``devices.sources``) and the GC-DP evaluation's
Occupancy loader (``collector.gcdp.evaluation``): a pure function of the text with no
layer of its own, so it sits in the lowest layer, where every reader of a table can
import it.
"""

from __future__ import annotations

__all__ = ["DELIMITERS", "sniff_delimiter"]

DELIMITERS = (",", ";", "\t")  # the separators a table may use


def sniff_delimiter(text: str) -> str:
    """The field separator of a table, from its first two non-blank lines: of comma,
    semicolon and tab, the one both lines hold equally often (the most often, if several),
    else the one the first line holds most often, else the second line; on a tie the
    semicolon before the comma (decimal commas in a semicolon table), else the comma;
    comma when none is held. (A header "time<TAB>Temp, C" holds a comma and a tab, its data lines
    only the tab; a leading row id or a delimiter ending the data lines only makes the
    counts differ, so the header decides.) ``text`` may be the whole table or only its
    first lines."""
    lines = []
    for line in text.splitlines():
        if line.strip():
            lines.append(line)
            if len(lines) == 2:
                break
    if not lines:
        return ","
    first = [lines[0].count(d) for d in DELIMITERS]
    second = [lines[-1].count(d) for d in DELIMITERS]
    equal = [a if a == b else 0 for a, b in zip(first, second, strict=True)]
    for counts in (equal, first, second):
        best = max(counts)
        if best > 0:
            winners = [d for d, c in zip(DELIMITERS, counts, strict=True) if c == best]
            # "20,038;0": a semicolon table with decimal commas (a European spreadsheet's
            # export) holds both equally often; split at the comma it read "20" and "038;0"
            return ";" if winners[:2] == [",", ";"] else winners[0]
    return ","
