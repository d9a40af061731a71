"""``bench cadr-sweep --thetas '' --eps-list ''`` skipped both sweeps, ran nothing and
printed empty tables without a word (helper G's user trial, 2026-12-06): now refused."""

from ldpfleet.app.cli import app
from typer.testing import CliRunner


def test_both_sweeps_empty_is_refused():
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "cadr-sweep",
            "--graph",
            "barabasi_albert:n=30,m=2",
            "--thetas",
            "",
            "--eps-list",
            "",
        ],
    )
    assert result.exit_code == 2, result.output
    assert "--thetas and --eps-list are both empty: nothing to sweep" in result.output
