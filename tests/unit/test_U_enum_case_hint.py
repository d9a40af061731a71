"""A scenario value that is an allowed one in another case (helper U, a new user's session):
`[cadr] method = "LL"` (the paper writes LL) was refused with the allowed list but no "did
you mean", while `theta = "auto"` got one; difflib finds no likeness between "LL" and "ll".
The case-folded match is now offered first."""

import pytest
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario

GRAPH = """
[scenario]
name = "g"
seed = 2
[graph]
source = "erdos_renyi:n=30,p=0.3,seed=1"
[cadr]
eps = 2.0
"""

STREAM = """
[scenario]
name = "s"
seed = 2
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


@pytest.mark.parametrize(
    ("text", "field", "said"),
    [
        (GRAPH + 'method = "LL"\n', "cadr.method", '(did you mean "ll"?)'),
        (GRAPH + 'method = "Clip"\n', "cadr.method", '(did you mean "clip"?)'),
        (GRAPH + 'theta = "AUTO-DEV"\n', "cadr.theta", '(did you mean "auto-dev"?)'),
        (
            STREAM.replace("[fleet]", '[fleet]\nconnection = "GATEWAY"'),
            "fleet.connection",
            '(did you mean "gateway"?)',
        ),
    ],
)
def test_a_value_in_another_case_gets_its_did_you_mean(text, field, said):
    with pytest.raises(ScenarioError) as refused:
        parse_scenario(text)
    assert field in str(refused.value) and said in str(refused.value), str(refused.value)
