"""Running a scenario from Python and reading what a run wrote.

``run`` is the synchronous twin of ``ldpfleet.scenarios.runner.run_scenario`` (the event
loop the CLI uses: uvloop when installed). ``read_results`` and ``read_trace`` read a run
directory: ``results.json`` and the recorder's ``trace.sqlite`` (every message that crossed
the broker, decoded to the typed wire messages of ``ldpfleet.protocol.messages``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def run(scenario, **options: Any) -> dict:
    """Run ``scenario`` (a ``LoadedScenario``, a path or a built-in scenario's name) to the
    end and return its results (the dict written to ``OUT/results.json``).

    ``options`` are ``run_scenario``'s: ``broker`` ("memory", "embedded" or an
    ``mqtt://`` URL; default the scenario's ``[broker] url``), ``out_dir`` (default
    ``runs/latest``), ``seed``, ``run_id``. Call it from synchronous code; inside a running
    event loop, ``await ldpfleet.run_scenario(...)`` instead."""
    from ldpfleet.scenarios.loop import run as run_loop
    from ldpfleet.scenarios.runner import run_scenario
    from ldpfleet.scenarios.schema import LoadedScenario, load_scenario

    loaded = scenario if isinstance(scenario, LoadedScenario) else load_scenario(scenario)
    return run_loop(run_scenario(loaded, **options))


def read_results(run_dir: str | Path) -> dict:
    """The results of the run in ``run_dir`` (its ``results.json``)."""
    path = Path(run_dir) / "results.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: is {run_dir} a run's output folder?")
    return json.loads(path.read_text())


def read_trace(run_dir: str | Path, **selection: Any) -> Iterator[tuple[float, str, Any]]:
    """Every recorded message of the run in ``run_dir`` as ``(time, topic, message)``, in
    the order the recorder saw them; ``message`` is the decoded wire message (a
    ``msgspec.Struct``; undecodable payloads come as raw ``bytes``).

    ``selection`` filters like ``ldpfleet trace show``: ``device``, ``kind`` (e.g.
    ``"sw_report"``), ``topic`` (an MQTT filter), ``since``/``until`` (seconds from the
    first message)."""
    from ldpfleet.broker.trace import TraceFilter, open_readonly, rows
    from ldpfleet.protocol import codec
    from ldpfleet.protocol.errors import RemoteProtocolError

    db = open_readonly(run_dir)
    try:
        for row in rows(db, TraceFilter(**selection)):
            try:
                message: Any = codec.decode(row.payload)
            except RemoteProtocolError:
                message = row.payload
            yield row.time, row.topic, message
    finally:
        db.close()
