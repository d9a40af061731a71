"""``bench gcdp --eps`` and ``bench gcdp-scaling --ms`` refuse a list that does not parse
with the same sentence, field, limit and value since helper K2 gave them one parser."""

from __future__ import annotations

import pytest
from ldpfleet.app import bench_commands
from ldpfleet.protocol.errors import ParameterError


def _raise(error):
    raise error


@pytest.mark.parametrize(
    ("call", "field", "noun", "text"),
    [
        (lambda: bench_commands.bench_gcdp_command(eps="1,one"), "eps_list", "numbers", "1,one"),
        (lambda: bench_commands.bench_gcdp_scaling_command(ms="10,x"), "ms", "integers", "10,x"),
        (
            lambda: bench_commands.bench_gcdp_scaling_command(ms="10,2.5"),
            "ms",
            "integers",
            "10,2.5",
        ),
    ],
)
def test_an_unparsed_list_is_refused_as_before(monkeypatch, call, field, noun, text):
    monkeypatch.setattr(bench_commands, "_refuse", _raise)
    with pytest.raises(ParameterError) as caught:
        call()
    err = caught.value
    assert (err.field, err.limit, err.value) == (field, f"a comma list of {noun}", text)
    assert err.reason == f"not a comma list of {noun}: {text!r}"
