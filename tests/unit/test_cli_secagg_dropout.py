"""Held-out CLI QA (helper Q): ``ldpfleet bench secagg --dropout 0.99`` dropped 198 of the
200 devices, ran the session to its abort and exited 1 saying the sum was "not exact".
A dropout rate that leaves fewer devices than the session's threshold t aborts whatever
happens: it is refused up front (``--dropout``, the limit for these devices, the value),
exit status 2, before any device connects."""

from __future__ import annotations

import pytest
from ldpfleet.app.bench_secagg import check_survivors, session_degree
from ldpfleet.app.cli import app
from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.secagg.graph import default_degree, default_threshold
from typer.testing import CliRunner


def test_two_hundred_devices_at_099_are_refused_naming_the_limit():
    t = default_threshold(default_degree(200) + 1)  # 17 neighbours + itself: t = 10
    assert t == 10
    with pytest.raises(ParameterError) as info:
        check_survivors(200, 0.99, None, False)
    assert info.value.field == "dropout"
    assert f"t = {t} of the 200 devices" in str(info.value)
    assert f"at most {(200 - t) / 200:.4g} here, got 0.99" in str(info.value)


@pytest.mark.parametrize(
    ("devices", "neighbors", "full", "limit"),
    [(200, None, False, 0.95), (20, None, False, 0.7), (20, None, True, 0.45),
     (20, 3, False, 0.85)],
)  # fmt: skip
def test_the_limit_itself_passes_and_one_more_device_does_not(devices, neighbors, full, limit):
    check_survivors(devices, limit, neighbors, full)
    with pytest.raises(ParameterError):
        check_survivors(devices, limit + 1 / devices, neighbors, full)


def test_a_degree_the_session_refuses_is_left_to_it():
    assert session_degree(20, 25, False) is None  # secure_sum names --neighbors itself
    check_survivors(20, 0.95, 25, False)


def test_the_command_refuses_before_connecting():
    out = CliRunner().invoke(app, ["bench", "secagg", "--dropout", "0.99"])
    assert out.exit_code == 2, out.output
    text = " ".join(out.output.split())
    assert "error: --dropout: must leave at least the threshold t = 10 of the 200" in text
    assert "got 0.99" in text and "Traceback" not in text
