"""A misspelt choice of a bench option gets the nearest known name, as the scenario keys,
``audit`` and ``trace --kind`` do (before: ``bench gcdp --dataset occupancyy`` said only
"'occupancyy' is not one of occupancy, intel, wisdm")."""

import pytest
from ldpfleet.app.cli import app
from typer.testing import CliRunner

CASES = [
    (["bench", "gcdp", "--dataset", "occupancyy"], "(did you mean 'occupancy'?)"),
    (["bench", "secagg", "--devices", "5", "--dropout-stage", "after_share"],
     "(did you mean 'after_shares'?)"),
    (["bench", "cpr", "--dataset", "darwn"], "(did you mean 'darwin'?)"),
    (["bench", "cadr-sweep", "--methods", "lll"], "(did you mean 'll'?)"),
]  # fmt: skip


@pytest.mark.parametrize(("args", "hint"), CASES, ids=[c[0][1] for c in CASES])
def test_a_misspelt_choice_gets_the_nearest_name(args, hint):
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2, result.output
    assert hint in " ".join(result.output.split())
