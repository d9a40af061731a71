"""Ctrl-C in any command says "interrupted" once (exit 130).

Before: the commands not wrapped in ``user_errors`` (``audit``, ``bench mechanisms``,
``bench gcdp-scaling``, ``scenarios``, ...) ended on Ctrl-C with typer's silent exit 130:
nothing on the terminal said the command had stopped rather than finished; those wrapped
in it said "interrupted".
"""

import sys

import pytest
from ldpfleet.app import cli, cli_run


def _main(monkeypatch, argv: list[str]) -> int:
    monkeypatch.setattr(sys, "argv", ["ldpfleet", *argv])
    with pytest.raises(SystemExit) as stopped:
        cli.main()
    return stopped.value.code


def test_a_command_without_user_errors_says_interrupted(monkeypatch, capsys):
    from ldpfleet.scenarios import builtin

    def ctrl_c():
        raise KeyboardInterrupt

    monkeypatch.setattr(builtin, "builtin_scenarios", ctrl_c)
    assert _main(monkeypatch, ["scenarios"]) == 130
    captured = capsys.readouterr()
    assert captured.err == "interrupted\n"
    assert "Traceback" not in captured.out + captured.err


def test_a_command_with_user_errors_says_it_once(monkeypatch, capsys, tmp_path):
    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    # `run` looks _run_any up in app/cli_run.py, where it lives
    monkeypatch.setattr(cli_run, "_run_any", ctrl_c)
    assert (
        _main(monkeypatch, ["run", "quickstart", "-b", "memory", "--out", str(tmp_path / "o")])
        == 130
    )
    assert capsys.readouterr().err.count("interrupted") == 1


def test_a_normal_exit_says_nothing_more(monkeypatch, capsys):
    assert _main(monkeypatch, ["--version"]) == 0
    assert "interrupted" not in capsys.readouterr().err
