"""Helper X (issue 20): ``ldpfleet trace verify`` on the default CADR run (method clip)
said "the individual DSR reports and the NDOE/LPEA peer traffic are not recorded … (the
alpha-stage spends are taken from the ledgers)": a clip run has no peer traffic and no
NDOE/LPEA spend. Its line now says so; an ll run keeps the old line. Fails on the old code
(no ``_cadr_control_note``; the clip run's line named NDOE/LPEA peer traffic)."""

from __future__ import annotations

from ldpfleet.app import cli, trace_verify
from typer.testing import CliRunner

from tests.cadr_fixtures import TINY_SCENARIO


def test_the_clip_line_names_no_peer_traffic():
    line = trace_verify._cadr_control_note("clip")
    assert "NDOE/LPEA" not in line and "alpha-stage" not in line
    assert "method clip: no NDOE, no LPEA, no peer traffic" in line
    assert "the θ search's spend, if any, is taken from the ledgers" in line


def test_the_negotiated_line_is_unchanged():
    for method in ("ll", "lh", "ra", None):
        line = trace_verify._cadr_control_note(method)
        assert line == (
            'CADR-LDP trace = "control": the individual DSR reports and the NDOE/LPEA peer '
            "traffic are not recorded; checked: the chain, the signature, the plan against "
            "the scenario, the degree release against the ledgers, the ledgers against the "
            "scenario's eps (the alpha-stage spends are taken from the ledgers)"
        )


def _verify(tmp_path, method_line: str) -> str:
    scenario = tmp_path / "tiny.toml"
    scenario.write_text(TINY_SCENARIO.format(method=method_line))
    out = tmp_path / "out"
    ran = CliRunner().invoke(cli.app, ["run", str(scenario), "-o", str(out)])
    assert ran.exit_code == 0, ran.output
    verified = CliRunner().invoke(cli.app, ["trace", "verify", str(out)], env={"COLUMNS": "400"})
    assert verified.exit_code == 0, verified.output
    assert "0 mismatch(es)" in verified.output
    return " ".join(verified.output.split())


def test_verify_of_the_default_run_names_no_peer_traffic(tmp_path):
    out = _verify(tmp_path, "")  # method "auto": clip under the dp pipeline
    assert "method clip: no NDOE, no LPEA, no peer traffic" in out
    assert "NDOE/LPEA peer traffic" not in out


def test_verify_of_an_ll_run_keeps_its_line(tmp_path):
    out = _verify(tmp_path, 'method = "ll"')
    assert "NDOE/LPEA peer traffic are not recorded" in out
