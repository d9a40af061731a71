"""A CSV header written in another Unicode normal form than the scenario (helper U, a new
user's session): macOS and some loggers write 'é' as 'e' + U+0301 (NFD), a TOML typed on
Linux or Windows holds U+00E9 (NFC). Both are the same text; before, the column was refused
with "'Température' not in header ... (did you mean 'Température'?)", the two names
printing alike."""

import unicodedata

import pytest
from ldpfleet.devices.sources import CsvSpec, SourceError, csv_stream

NFC = unicodedata.normalize("NFC", "Température (°C)")
NFD = unicodedata.normalize("NFD", "Température (°C)")


def _write(tmp_path, header_name, other="t"):
    path = tmp_path / "nfd.csv"
    rows = "".join(f"{i};{20 + i % 7}.5\n" for i in range(40))
    path.write_text(f"{other};{header_name}\n{rows}", encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(("header", "asked"), [(NFD, NFC), (NFC, NFD)])
def test_a_column_named_in_another_normal_form_is_found(tmp_path, header, asked):
    assert header != asked
    path = _write(tmp_path, header)
    spec = CsvSpec(path, asked)
    same = CsvSpec(path, 1)  # the same column by its index among numeric columns (t is 0)
    values, _ = csv_stream(spec, 2, 5, 20)
    expected, _ = csv_stream(same, 2, 5, 20)
    assert (values == expected).all()


def test_columns_list_in_another_normal_form_is_found(tmp_path):
    path = _write(tmp_path, NFD, other="x")
    bounds = ((0.0, 40.0), (0.0, 40.0))
    spec = CsvSpec(path, 0, columns=(NFC, "x"), column_bounds=bounds)
    same = CsvSpec(path, 0, columns=(1, 0), column_bounds=bounds)
    for device in range(4):
        values, _ = csv_stream(spec, device, 4, 10)
        assert (values == csv_stream(same, device, 4, 10)[0]).all()


def test_two_columns_alike_after_normalising_are_still_told_apart(tmp_path):
    # the header holds both spellings: the exact one is taken, as before; a name matching
    # neither exactly but both after normalising is refused as not in the header
    path = tmp_path / "both.csv"
    rows = "".join(f"{i};{i + 1}\n" for i in range(10))
    path.write_text(f"{NFC};{NFD}\n{rows}", encoding="utf-8")
    assert csv_stream(CsvSpec(str(path), NFD), 0, 1, 3)[0][0] == 1.0
    assert csv_stream(CsvSpec(str(path), NFC), 0, 1, 3)[0][0] == 0.0
    with pytest.raises(SourceError) as refused:
        CsvSpec(str(path), "Tempe\u0301rature (\u00b0C)".replace("(", "( "))
    assert refused.value.field == "source.column"


def test_a_name_copied_with_the_header_spaces_around_it_is_found(tmp_path):
    # the header line ` t ; Température (°C) ` is read as the names "t", "Température (°C)";
    # a name copied from it with its spaces was "not in header (did you mean ...?)"
    path = tmp_path / "spaced.csv"
    rows = "".join(f"{i};{20 + i % 7}.5\n" for i in range(40))
    path.write_text(f" t ; {NFC} \n{rows}", encoding="utf-8")
    spaced = CsvSpec(str(path), f" {NFC} ")
    assert (csv_stream(spaced, 0, 2, 10)[0] == csv_stream(CsvSpec(str(path), 1), 0, 2, 10)[0]).all()
    multi = CsvSpec(str(path), 0, columns=(f" {NFD} ", " t"), column_bounds=((0, 40), (0, 40)))
    assert multi.channels == 2
