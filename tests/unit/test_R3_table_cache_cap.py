"""Helper R's review (round 3): the parsed-table cache (``devices.sources._parse_table``) is
keyed by the file's path, mtime, size, header and decimal mark, not by the unpacked-size cap
(``$LDPFLEET_MAX_UNPACKED``): a .csv.gz read once under a large cap is served from the cache
after the cap was lowered below its size, where a fresh read refuses it."""

import gzip

import pytest
from ldpfleet.devices.sources import UnpackedTooLargeError, clear_table_cache, load_table


def test_lowered_cap_refuses_a_cached_table(tmp_path, monkeypatch):
    path = tmp_path / "data.csv.gz"
    text = "t,v\n" + "".join(f"{i},{i * 0.5}\n" for i in range(2000))
    path.write_bytes(gzip.compress(text.encode()))
    clear_table_cache()
    monkeypatch.setenv("LDPFLEET_MAX_UNPACKED", "1MiB")
    names, _ = load_table(str(path))  # read under a cap it fits
    assert names == ["t", "v"]
    monkeypatch.setenv("LDPFLEET_MAX_UNPACKED", "100")  # 100 bytes: the file is far past it
    with pytest.raises(UnpackedTooLargeError):  # served from the cache: not refused
        load_table(str(path))
    clear_table_cache()  # a fresh read refuses it (the same file, the same cap)
    with pytest.raises(UnpackedTooLargeError):
        load_table(str(path))
