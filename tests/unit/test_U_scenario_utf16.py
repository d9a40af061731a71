"""A scenario file saved as UTF-16 (helper U, a new user's session: Windows PowerShell 5's
`>` and `Out-File`, Notepad's "Unicode") was refused as "not UTF-8 text (byte 0xff at line 1,
column 1)", while the CSV and edge-list readers of the same run read UTF-16 (one decoder,
devices/text_decode.py). Now the scenario file is read by that decoder too; a file that
claims UTF-16 but is not says so."""

import pytest
from ldpfleet.scenarios.schema import ScenarioError, load_scenario

TEXT = """# a scenario with a name in Unicode: Température
[scenario]
name = "utf16"
seed = 1
[fleet]
devices = 2
[stream]
steps = 10
eps = 2.0
w = 2
[source]
kind = "synthetic"
bounds = [0.0, 1.0]
"""


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-8-sig", "utf-8"])
def test_a_scenario_in_utf16_or_utf8_loads_alike(tmp_path, encoding):
    path = tmp_path / "s.toml"
    path.write_bytes(TEXT.encode(encoding))
    assert load_scenario(path).spec == load_scenario_text(tmp_path)


def load_scenario_text(tmp_path):
    plain = tmp_path / "plain.toml"
    plain.write_text(TEXT, encoding="utf-8")
    return load_scenario(plain).spec


def test_not_utf8_still_names_its_line(tmp_path):
    path = tmp_path / "latin1.toml"
    path.write_bytes(TEXT.encode("latin-1"))
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    assert "not UTF-8 text (byte 0xe9 at line 1, column" in str(refused.value)


def test_a_bom_of_utf16_over_other_bytes_is_named(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_bytes(b"\xff\xfe" + b"[s\x00\xd8")  # a lone surrogate: not UTF-16
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    assert "starts with a UTF-16 byte-order mark but is not UTF-16 text" in str(refused.value)
