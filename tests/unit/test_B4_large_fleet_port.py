"""Helper B (2026-12-07): docs/mosquitto/large-fleet.conf and the docs that use it agree on
its port. It listened on 1883 while docs/scaling.md's 100,000-device row and claim R4 gave
``--broker mqtt://127.0.0.1:1890`` with "large-fleet.conf, port 1890" (helper H's re-run
edited the listener by hand), and docs/brokers.md's example used 1883. Fails on the code
before (the file's port, 1883, is not the rows' 1890)."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"
CONF = DOCS / "mosquitto" / "large-fleet.conf"
START = "mosquitto -c docs/mosquitto/large-fleet.conf"


def _port() -> int:
    listeners = re.findall(r"^listener (\d+) 127\.0\.0\.1$", CONF.read_text(), re.M)
    assert len(listeners) == 1, listeners
    return int(listeners[0])


def _brokers(text: str) -> set[int]:
    return {int(port) for port in re.findall(r"--broker mqtt://127\.0\.0\.1:(\d+)", text)}


def test_the_header_carries_the_command_and_the_port():
    header = [line for line in CONF.read_text().splitlines() if line.startswith("#")][:8]
    text = "\n".join(header)
    assert f"#   {START}" in header, text
    assert f"127.0.0.1:{_port()}" in text and f"mqtt://127.0.0.1:{_port()}" in text, text


def test_brokers_md_starts_it_and_connects_to_its_port():
    text = (DOCS / "brokers.md").read_text()
    block = text[text.index(START) :].split("```", 1)[0]
    assert _brokers(block) == {_port()}, block


def test_the_rows_that_use_it_give_its_port():
    """docs/scaling.md's table rows and claim R4 that name large-fleet.conf connect to the
    port it listens on."""
    rows = [
        line
        for name in ("scaling.md", "claims.md")
        for line in (DOCS / name).read_text().splitlines()
        if line.startswith("|") and "large-fleet.conf" in line and "--broker" in line
    ]
    assert len(rows) >= 2, rows  # scaling.md's 100,000-device row and claim R4
    for row in rows:
        assert _brokers(row) == {_port()}, row[:200]
