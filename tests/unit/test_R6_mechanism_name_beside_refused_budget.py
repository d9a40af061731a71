"""A misspelled mechanism is named beside a refused ``eps`` or ``w`` (review R6).

``_check_mechanism`` reads ``stream.eps`` and ``stream.w`` before it checks the
mechanism's name, so once either was refused the whole check was skipped: the name, which
does not depend on them, went unreported, and ``_check_reconstruct`` blamed
``stream.reconstruct`` instead ("'sw' cannot reconstruct 'sww' reports": a consequence of
the typo, on a key that is right). Every independent refusal at once (docs/api.md): the
mechanism's own refusal, as that mistake alone raises it, and nothing about reconstruct.
The first refusal is unchanged (the eps one, as before)."""

from __future__ import annotations

import pytest
from ldpfleet.scenarios.schema import ScenarioError, parse_scenario


def _text(stream: str) -> str:
    return (
        '[scenario]\nname = "r6"\n[fleet]\ndevices = 4\n'
        f'[stream]\nsteps = 20\nreconstruct = "sw"\n{stream}\n'
        '[source]\nkind = "synthetic"\nbounds = [0.0, 1.0]\n'
    )


def _refused(text: str) -> ScenarioError:
    with pytest.raises(ScenarioError) as caught:
        parse_scenario(text)
    return caught.value


def _described(error: ScenarioError) -> tuple:
    return (str(error), error.field, error.limit, error.value)


@pytest.mark.parametrize(
    ("budget", "field"),
    [
        ("eps = -2.0\nw = 4", "stream.eps"),  # refused by its range
        ("epss = 2.0\nw = 4", "stream.epss"),  # misspelled: eps reads its default (None)
        ("eps = 2.0\nw = 0", "stream.w"),  # w refused by its range
    ],
    ids=["eps-range", "eps-typo", "w-range"],
)
def test_the_mechanism_typo_is_named_not_reconstruct(budget, field):
    mechanism = _refused(_text('eps = 2.0\nw = 4\nmechanism = "sww"'))
    budget_alone = _refused(_text(budget))
    both = _refused(_text(f'{budget}\nmechanism = "sww"'))
    assert _described(both) == _described(budget_alone)  # the first found, as before
    assert [e.field for e in both.errors] == [field, "stream.mechanism"]
    assert _described(both.errors[1]) == _described(mechanism)
