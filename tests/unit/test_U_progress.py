"""``progress`` of ``ldpfleet.run`` / ``run_scenario`` as documented: ``progress(received,
expected)`` (helper U, library-user QA).

Found: any two-argument callback, the documented form, ended the run in ``ExceptionGroup:
unhandled errors in a TaskGroup`` / ``TypeError: <lambda>() takes 2 positional arguments
but 4 were given`` (the runner's watcher calls it with ``joined`` and ``devices`` too);
``progress=5`` was accepted and died the same way mid-run.
"""

from __future__ import annotations

import asyncio

import pytest

import ldpfleet
from tests.tiny_scenarios import sine_stream_text

TEXT = sine_stream_text("u-progress", devices=3, steps=12, period=6)


@pytest.fixture(scope="module")
def scenario():
    return ldpfleet.parse_scenario(TEXT)


def test_a_two_argument_progress_callback_works(scenario, tmp_path):
    calls = []
    results = ldpfleet.run(
        scenario, broker="memory", out_dir=tmp_path, progress=lambda r, e: calls.append((r, e))
    )
    assert calls, "progress was never called"
    assert calls[-1] == (results["reports_received"], results["reports_expected"])
    assert all(len(call) == 2 for call in calls)


def test_a_callback_with_extra_optional_arguments_gets_the_fleet_too(scenario, tmp_path):
    calls = []

    def progress(received, expected, joined=None, devices=None):
        calls.append((received, expected, joined, devices))

    results = ldpfleet.run(scenario, broker="memory", out_dir=tmp_path, progress=progress)
    assert calls[-1][:2] == (results["reports_received"], results["reports_expected"])
    assert all(call[3] in (None, 3) for call in calls)


def test_run_scenario_takes_the_two_argument_form_too(scenario, tmp_path):
    calls = []

    async def main():
        return await ldpfleet.run_scenario(
            scenario, broker="memory", out_dir=tmp_path, progress=lambda *a: calls.append(a)
        )

    results = asyncio.run(main())
    assert calls[-1][:2] == (results["reports_received"], results["reports_expected"])


@pytest.mark.parametrize("bad", [5, "bar", lambda: None, lambda a, b, c: None])
def test_a_progress_that_cannot_be_called_so_is_refused_before_the_run(scenario, tmp_path, bad):
    with pytest.raises(ldpfleet.ParameterError) as caught:
        ldpfleet.run(scenario, broker="memory", out_dir=tmp_path / "out", progress=bad)
    assert caught.value.field == "progress"
    assert caught.value.limit == "a callable progress(received, expected)"
    assert "progress(received, expected)" in str(caught.value)
    assert not (tmp_path / "out").exists()


class Stop(Exception):
    """The caller's own error, raised from its progress callback."""


def test_an_error_raised_by_progress_is_raised_as_it_is(scenario, tmp_path):
    """Found: a callback that raised (a user stopping the run, a bug in it) came out as
    ``ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)``."""

    def progress(received, expected):
        raise Stop(f"stop at {received} of {expected}")

    with pytest.raises(Stop, match="stop at"):
        ldpfleet.run(scenario, broker="memory", out_dir=tmp_path, progress=progress)
    # the run wound down and let go of its folder: the next run into it works
    assert ldpfleet.run(scenario, broker="memory", out_dir=tmp_path)["devices_complete"] == 3


def test_other_failures_are_not_taken_for_the_callbacks(scenario, tmp_path):
    calls = []

    def progress(received, expected, *more):
        calls.append(received)

    results = ldpfleet.run(scenario, broker="memory", out_dir=tmp_path, progress=progress)
    assert results["devices_complete"] == 3 and calls


def test_print_as_progress_prints_received_and_expected(scenario, tmp_path, capsys):
    """A builtin without a signature (``progress=print``) gets the documented two."""
    results = ldpfleet.run(scenario, broker="memory", out_dir=tmp_path, progress=print)
    lines = capsys.readouterr().out.splitlines()
    assert lines and all(len(line.split()) == 2 for line in lines)
    assert lines[-1] == f"{results['reports_received']} {results['reports_expected']}"
