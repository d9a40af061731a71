"""``bench secagg`` refuses a session too large for one process before it starts.

Held-out QA (helper T, 2026-12-06): ``--devices 10000 --dim 100000`` passed both options'
own limits and would have asked for ~40 GB (every device's inputs, masked vector and
messages live in the bench's process, about 40 bytes an entry).
"""

from __future__ import annotations

import pytest
from ldpfleet.app.bench_secagg import MAX_ENTRIES, check_options
from ldpfleet.app.cli import app
from ldpfleet.protocol.errors import ParameterError
from typer.testing import CliRunner

OPTIONS = {"dropout": 0.0, "dropout_stage": "after_shares", "stage_timeout": 30.0, "seed": 0}


def test_the_product_is_limited() -> None:
    check_options(1000, MAX_ENTRIES // 1000, **OPTIONS)  # at the limit: accepted
    with pytest.raises(ParameterError) as error:
        check_options(1001, 100_000, **OPTIONS)
    assert error.value.field == "dim" and error.value.value == 100_100_000
    assert "lower --dim to 99900 or fewer" in error.value.reason


def test_the_command_says_it_in_one_sentence() -> None:
    output = CliRunner().invoke(app, ["bench", "secagg", "--devices", "10000", "--dim", "100000"])
    assert output.exit_code == 2
    text = " ".join(output.output.split())
    assert "--devices x --dim must be at most 100,000,000 entries" in text
    assert "10000 x 100000 = 1,000,000,000" in text and "Traceback" not in text
