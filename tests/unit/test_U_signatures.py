"""``run`` and ``run_scenario`` take the same arguments (docs/api.md: "same arguments"),
with the same defaults and the same types (helper U: ``run_scenario``'s ``out_dir`` was
``str | Path`` where ``run``'s is ``str | os.PathLike``)."""

from __future__ import annotations

import inspect

import ldpfleet


def test_run_and_run_scenario_take_the_same_public_arguments():
    run = inspect.signature(ldpfleet.run).parameters
    coroutine = inspect.signature(ldpfleet.run_scenario).parameters
    assert list(run) == list(coroutine)[: len(run)]
    for name, parameter in run.items():
        other = coroutine[name]
        assert (parameter.kind, parameter.default) == (other.kind, other.default), name
        if name != "progress":  # Callable[[int, int], None] there, Callable[..., None] here
            assert parameter.annotation == other.annotation, name
