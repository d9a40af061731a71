"""Running a scenario from Python and reading what a run wrote.

``run`` is the synchronous twin of ``ldpfleet.scenarios.runner.run_scenario`` (the event
loop the CLI uses: uvloop when installed). ``read_results``, ``read_ledger`` and
``read_trace`` read a run directory: ``results.json``, ``ledger.json`` and the recorder's
``trace.sqlite`` (every message that crossed the broker, decoded to the typed wire
messages of ``ldpfleet.protocol.messages``).
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    import numpy as np

    from ldpfleet.broker.transport import Transport
    from ldpfleet.scenarios.schema import LoadedScenario


def run(
    scenario: LoadedScenario | str | os.PathLike,
    *,
    broker: str | Transport | None = None,
    out_dir: str | os.PathLike = "runs/latest",
    seed: int | None = None,
    run_id: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Run ``scenario`` to the end, synchronously, and return its results.

    ``scenario``: a ``LoadedScenario`` (``parse_scenario`` / ``load_scenario``), a path to
    a scenario file or a built-in scenario's name. ``broker``: ``"memory"`` (in-process,
    the fast way to run many trials), ``"embedded"`` (an amqtt broker on a free port), an
    ``mqtt://``/``mqtts://`` URL or a ``Transport``; default the scenario's ``[broker]
    url``. ``out_dir``: the folder of the outputs (``results.json``, ``trace.sqlite``,
    ``ledger.json``, ``collector.sqlite``; no ``report.html``: ``ldpfleet report OUT``
    writes it; created, a previous run's files replaced). ``seed``:
    an integer in [0, 2^63 - 1] (a numpy integer too) in place of ``[scenario] seed``; the
    same seed gives the same privatised values. ``run_id``: 1-64 characters of A-Z a-z 0-9
    _ . - (default the scenario's name and a random suffix). ``progress``: called as
    ``progress(received, expected)`` (reports stored so far and in all) every 0.2 s while
    the stream runs and once at its end.

    Returns the results dict also written to ``out_dir/results.json`` (docs/results.md).

    Raises ``ParameterError`` naming the option (``scenario``, ``broker``, ``out_dir``,
    ``seed``, ``run_id``, ``progress``; ``broker`` also for a malformed URL such as
    ``'http://x'`` or ``'Memory'``; ``out_dir`` also when another run of this process is
    still writing there, ``run_id`` when another uses it on the same broker URL) before
    anything starts, ``ScenarioError`` for a scenario file that does not load or a
    ``__main__`` mechanism class with device processes, ``BrokerUnavailable``
    (``ldpfleet.broker.select``, a ``ConnectionError``) for a broker that cannot be reached,
    ``BulkRunFailed`` (``ldpfleet.scenarios.bulk_run``, a ``RuntimeError``) when a bulk
    run's collector ends before writing its summary (the sentence names it; the run's other
    processes are stopped). ``~`` in a path is the home folder.
    A run that fails once started raises one error, never an ``ExceptionGroup``: the
    error itself with a note naming the part of the run that raised it (the caller's
    ``progress`` error as it is; a broker that refused a reconnecting service or stayed
    away past its ``give_up_after``: the transport's ``ConnectionRefused`` /
    ``ConnectionLost``, ``ConnectionError``s). docs/api.md.

    Inside a running event loop (a Jupyter cell, an ``async def``), where
    ``asyncio.run`` fails, the run gets a loop of its own in a worker thread and this
    call waits for it, the caller's loop blocked meanwhile (``progress`` is then called
    from that thread); ``await
    ldpfleet.run_scenario(...)`` (same arguments) keeps that loop free instead. Ctrl-C
    (interrupting the kernel) stops the run, either way, and raises
    ``KeyboardInterrupt``."""
    from ldpfleet.scenarios.loop import run as run_loop
    from ldpfleet.scenarios.runner import run_scenario

    def coroutine() -> Coroutine[Any, Any, dict[str, Any]]:
        return run_scenario(
            scenario, broker=broker, out_dir=out_dir, seed=seed, run_id=run_id, progress=progress
        )

    if _running_loop() is None:
        return run_loop(coroutine())
    return _run_in_a_worker_thread(coroutine)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _run_in_a_worker_thread(
    coroutine: Callable[[], Coroutine[Any, Any, dict[str, Any]]],
) -> dict[str, Any]:
    """``coroutine()`` run to the end on a loop of its own in a worker thread (this
    thread's loop is busy running the caller), this thread waiting. A
    ``KeyboardInterrupt`` here (Ctrl-C reaches the main thread only) cancels the run and
    waits for it to wind down (its devices, broker and files closed) before it is
    raised; so does a cancellation of the caller's task (``asyncio.run``'s own Ctrl-C
    handler cancels it), raised as ``CancelledError`` there."""
    from ldpfleet.scenarios.loop import run as run_loop

    started = threading.Event()
    box: dict[str, Any] = {}

    async def main() -> dict[str, Any]:
        box["loop"], box["task"] = asyncio.get_running_loop(), asyncio.current_task()
        started.set()
        return await coroutine()

    def work() -> None:
        try:
            box["result"] = run_loop(main())
        except BaseException as error:  # handed to the waiting thread
            box["error"] = error
        finally:
            started.set()

    caller = asyncio.current_task()  # asyncio.run's Ctrl-C handler cancels it
    cancelled_before = caller.cancelling() if caller is not None else 0
    worker = threading.Thread(target=work, name="ldpfleet-run", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.1)  # short waits: a KeyboardInterrupt lands between them
            if caller is not None and caller.cancelling() > cancelled_before:
                raise asyncio.CancelledError  # the caller's task was cancelled meanwhile
    except (KeyboardInterrupt, asyncio.CancelledError):
        started.wait()
        if "task" in box:
            box["loop"].call_soon_threadsafe(box["task"].cancel)
        worker.join()
        raise
    if "error" in box:
        raise box["error"]
    return box["result"]


def read_results(run_dir: str | os.PathLike) -> dict[str, Any]:
    """The results of the run in ``run_dir``: its ``results.json`` as a dict
    (docs/results.md); ``run_dir`` may also be the ``results.json`` file itself.

    Raises ``FileNotFoundError`` when there is no ``results.json``, ``ParameterError``
    (field ``run_dir``, a ``ValueError``) for a ``run_dir`` that is not a path or a
    ``results.json`` that is not JSON (a run stopped while writing it, an edited file)."""
    path = _run_path(run_dir)
    if path.name != "results.json" or path.is_dir():
        path = path / "results.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: is {run_dir} a run's output folder?")
    try:
        return json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise _refused(
            "run_dir",
            f"{path} is not a results file (not JSON: {error})",
            limit="a run's folder or its results.json (JSON)",
            value=run_dir,
        ) from None


@overload
def read_reports(run_dir: str | os.PathLike, *, device: None = None) -> dict[str, np.ndarray]: ...


@overload
def read_reports(run_dir: str | os.PathLike, *, device: str) -> np.ndarray: ...


def read_reports(
    run_dir: str | os.PathLike, *, device: str | None = None
) -> dict[str, np.ndarray] | np.ndarray:
    """The privatised reports the collector accepted in the run in ``run_dir``, each
    device's in step order: what ``detect_period`` and ``cpr`` take.

    ``run_dir`` may also be a file of the run (its ``results.json``, as ``read_results``
    and ``read_ledger`` take). ``device``: one device's id (``"d0001"``); default every
    device. Returns a dict
    ``{device: 1-D float64 array}`` (only devices with a report), or with ``device`` that
    device's array. The values are the mechanism's reports (``SwReport.values``: for ``sw``,
    in its output range around [0, 1], not physical units), each (device, batch) once, as
    the collector stored it (``collector.sqlite``; a partitioned run's
    ``collector-p*.sqlite`` too; a bulk run's ``p*/reports.bin``). Rebuilding a stream from
    ``read_trace`` counts a retransmitted batch twice: the trace keeps every message that
    crossed the broker.

    Raises ``FileNotFoundError`` when ``run_dir`` holds no collector store,
    ``ParameterError`` naming ``run_dir`` (not a path) or ``device`` (no report from
    it: the devices that have one are listed)."""
    from ldpfleet.broker.trace import connect_readonly
    from ldpfleet.collector.store import device_values

    folder = _folder_of(_run_path(run_dir))
    if device is not None and not (isinstance(device, str) and device):
        raise _refused(
            "device",
            "must be one device's id, a non-empty str such as 'd0001' (leave it out for "
            f"every device), got {type(device).__name__} {device!r:.60}",
            limit="a non-empty str",
            value=device,
        )
    stores = [folder / "collector.sqlite", *sorted(folder.glob("collector-p*.sqlite"))]
    stores = [store for store in stores if store.is_file()]
    bulk = _bulk_streams(folder) if not stores else None  # fleet.connection = "bulk"
    if not stores and bulk is None:
        raise FileNotFoundError(
            f"{folder / 'collector.sqlite'} does not exist: is {run_dir} a run's output folder?"
        )
    streams: dict[str, np.ndarray] = bulk or {}
    for store in stores:  # each partition's store holds its own devices
        db = connect_readonly(store)
        try:
            streams.update(device_values(db))
        finally:
            db.close()
    streams = dict(sorted(streams.items()))
    if device is None:
        return streams
    if device not in streams:
        shown = _first_five(streams)
        raise _refused(
            "device",
            f"{device!r} has no report in {run_dir} (devices with one: {shown})",
            limit="a device with a report in this run",
            value=device,
        )
    return streams[device]


def read_ledger(run_dir: str | os.PathLike, *, device: str | None = None) -> dict[str, Any]:
    """Each privacy ledger of the run in ``run_dir`` (its ``ledger.json``), one layout for
    every kind of run. Returns ``{owner: {account: {...}}}`` with the owners in sorted order — each
    device (``"d0001"``, a CADR-LDP node's ``"n0001"``) and, for a ``[gcdp]`` run, the
    ``"collector"`` whose account is the central release's. An account is a dict: ``kind``
    (``"w-event"``: ``eps``, ``w``, ``charges``, ``total_spent``, ``max_window_spent``,
    ``window_spent`` per window; ``"total"``: ``eps``, ``spent``, ``remaining``;
    ``"raw"``: the central model's 0), ``refusals`` and the rest as ledger.json has it.

    ``device``: one owner's id; then that owner's ``{account: {...}}``. The run-level
    figures (``eps``, ``w``, ``max_window_spent``, ``within_budget``) are in
    ``read_results(run_dir)["privacy"]``.

    Raises ``FileNotFoundError`` when there is no ``ledger.json`` (a bulk run writes none:
    its spends are in results.json ``privacy``), ``ParameterError`` naming ``run_dir`` (not
    a path, or a ``ledger.json`` that is not a ledger) or ``device`` (not an owner: the
    owners are listed)."""
    path = _ledger_path(_run_path(run_dir))
    if not path.exists():
        raise FileNotFoundError(f"{path} does not exist: is {run_dir} a run's output folder?")
    try:
        data = json.loads(path.read_text())
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        data, reason = None, f"not JSON: {error}"
    else:
        reason = "not a ledger file: no device ledgers"
    # a stream run: {"run", "eps", ..., "devices": {id: ledger}, "collector": ledger};
    # a CADR-LDP run: {"run", id: ledger, ...} (each ledger {"owner", "accounts"})
    owners = data.get("devices", data) if isinstance(data, dict) else {}
    ledgers = {
        key: value["accounts"]
        for key, value in (*owners.items(), *(data or {}).items())
        if isinstance(value, dict) and isinstance(value.get("accounts"), dict)
    }
    if not ledgers:
        raise _refused(
            "run_dir",
            f"{path} is {reason}",
            limit="a run's folder or its ledger.json",
            value=run_dir,
        )
    ledgers = dict(sorted(ledgers.items()))
    if device is None:
        return ledgers
    if not isinstance(device, str) or device not in ledgers:
        shown = _first_five(ledgers)
        raise _refused(
            "device",
            f"{device!r:.60} has no ledger in {run_dir} (owners: {shown})",
            limit="an owner of a ledger in this run",
            value=device,
        )
    return ledgers[device]


# the files a run folder holds: a path to one of them (present or not) means its folder
_RUN_FILES = ("results.json", "trace.sqlite", "collector.sqlite", "report.html")


def _ledger_path(folder: Path) -> Path:
    """The ledger.json of ``folder``: the folder's, the file itself, or, for another file of
    the run (results.json, as read_results takes), the one beside it. A path that does not
    exist and names no run file is a folder: its own ledger.json (then missing), never its
    parent's (``read_ledger("runs/typo")`` read ``runs/ledger.json``)."""
    if folder.name == "ledger.json":
        return folder
    return _folder_of(folder) / "ledger.json"


def _folder_of(path: Path) -> Path:
    """The run folder ``path`` names: the folder itself, or the one holding ``path`` when it
    is a file of the run (results.json, trace.sqlite, ...; also one not there yet: a run
    file's name is never a folder's)."""
    if path.is_file() or (path.name in _RUN_FILES and not path.is_dir()):
        return path.parent
    return path


def _bulk_streams(folder: Path) -> dict[str, np.ndarray] | None:
    """A bulk run's accepted reports (``fleet.connection = "bulk"``: each partition's
    ``p{p}/reports.bin``, laid out by the run's plan in ``plan.json``), or None when
    ``folder`` is not a bulk run's."""
    plan_file = folder / "plan.json"
    if not (plan_file.is_file() and (folder / "p0" / "reports.bin").is_file()):
        return None
    from ldpfleet.collector.bulk import stored_streams
    from ldpfleet.protocol.bulk import BulkPlan, stored_dtype

    plan = BulkPlan.from_dict(json.loads(plan_file.read_text()))
    streams: dict[str, np.ndarray] = {}
    for p in range(plan.partitions):
        part = folder / f"p{p}"
        if (part / "reports.bin").is_file():
            streams |= stored_streams(part, stored_dtype(plan.batch_steps), plan.device_id)
    return streams


def _first_five(names) -> str:
    """The first five of ``names`` (an ordered collection), then ", ..." if there are more:
    what a refusal of an unknown device or owner lists."""
    names = list(names)
    return ", ".join(names[:5]) + (", ..." if len(names) > 5 else "")


def _run_path(run_dir: object) -> Path:
    if not isinstance(run_dir, str | os.PathLike) or str(run_dir) == "":
        raise _refused(
            "run_dir",
            f"must be a run's output folder (str or Path), got {run_dir!r}",
            limit="a run's output folder (str or Path)",
            value=run_dir,
        )
    return Path(run_dir).expanduser()


_FILTERS = ("device", "kind", "topic", "since", "until")


def read_trace(
    run_dir: str | os.PathLike,
    *,
    device: str | None = None,
    kind: str | None = None,
    topic: str | None = None,
    since: float | None = None,
    until: float | None = None,
    **unknown: Any,
) -> Iterator[tuple[float, str, Any]]:
    """Yields every recorded message of the run in ``run_dir`` (its folder, or its
    ``trace.sqlite``) as ``(time, topic, message)``, in the order the recorder saw them:
    ``time`` the recorder's clock (seconds since the epoch), ``topic`` the MQTT topic,
    ``message`` the decoded wire message (a ``msgspec.Struct`` of
    ``ldpfleet.protocol.messages``, e.g. ``SwReport`` with ``.sender``, ``.seq``,
    ``.values``; an undecodable payload comes as raw ``bytes``).

    The filters are those of ``ldpfleet trace show``: ``device`` (sent or received by
    it), ``kind`` (e.g. ``"sw_report"``), ``topic`` (an MQTT filter), ``since``/``until``
    (seconds after the first message). Checked when called, as the command checks them: an
    unknown filter, an empty one, a kind the protocol does not have, a device that sent and
    received nothing, a malformed MQTT filter, a time that is not a number >= 0 raise
    ``ParameterError`` naming the filter (a real kind with no message in this run yields
    nothing). A missing or damaged trace raises ``TraceError`` (``ldpfleet.broker.trace``, a
    ``ValueError``); a ``run_dir`` that is not a path, ``ParameterError`` naming
    ``run_dir``."""
    from ldpfleet.broker.trace import TraceFilter, open_readonly

    if unknown:
        name = sorted(unknown)[0]
        raise _refused(
            name,
            f"not a filter; the filters: {', '.join(_FILTERS)}",
            limit=f"one of {', '.join(_FILTERS)}",
            value=unknown[name],
        )
    selection = {
        name: value
        for name, value in zip(_FILTERS, (device, kind, topic, since, until), strict=True)
        if value is not None
    }
    db = open_readonly(_run_path(run_dir))
    try:
        _check_selection(db, selection, run_dir)
    except BaseException:
        db.close()
        raise
    return _messages(db, TraceFilter(**selection))


def _refused(field: str, sentence: str, *, limit: str, value: object):
    from ldpfleet.protocol.errors import ParameterError

    return ParameterError(sentence, field=field, limit=limit, value=value)


def _check_selection(db, selection: dict, run_dir) -> None:
    """The checks of ``ldpfleet trace show`` (app/cli.py ``trace_filter``, ``check_kind``,
    ``check_device``), worded for the keyword arguments."""
    import difflib
    import math

    from ldpfleet.broker.auth import valid_filter

    for name in ("device", "kind", "topic"):
        value = selection.get(name)
        if value is not None and not (isinstance(value, str) and value):
            raise _refused(
                name,
                "must be a non-empty str (leave it out for every one), got "
                f"{type(value).__name__} {value!r:.60}",
                limit="a non-empty str",
                value=value,
            )
    topic = selection.get("topic")
    if topic is not None and not valid_filter(topic):
        raise _refused(
            "topic",
            "must be an MQTT filter ('+' a whole level, '#' only the whole last level, "
            f"e.g. ldp/+/dev/d0001/#), got {topic!r}",
            limit="an MQTT filter",
            value=topic,
        )
    for name in ("since", "until"):
        value = selection.get(name)
        if value is not None and not (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and value >= 0
        ):
            raise _refused(
                name,
                f"must be a number of seconds >= 0 after the first message, got {value!r}",
                limit="a finite number >= 0",
                value=value,
            )
    since, until = selection.get("since"), selection.get("until")
    if since is not None and until is not None and since > until:
        raise _refused(
            "since",
            f"{since:g} is after until = {until:g}: nothing lies between",
            limit=f"<= until ({until:g})",
            value=since,
        )
    kind = selection.get("kind")
    recorded = set()
    if kind is not None:
        recorded = {row[0] for row in db.execute("SELECT DISTINCT kind FROM messages")}
    if kind is not None and kind not in recorded:
        from ldpfleet.protocol.codec import WIRE_KINDS

        known = recorded | WIRE_KINDS | {"invalid"}
        if kind not in known:
            close = difflib.get_close_matches(kind, sorted(known), n=1)
            raise _refused(
                "kind",
                f"{kind!r} is not a message kind"
                + (f" (did you mean {close[0]!r}?)" if close else "")
                + f"; recorded in {run_dir}: {', '.join(sorted(recorded)) or 'nothing'}",
                limit="a message kind of the protocol",
                value=kind,
            )
    device = selection.get("device")
    if device is not None:
        found = db.execute(
            "SELECT 1 FROM messages WHERE sender = ? OR recipient = ? LIMIT 1", (device, device)
        ).fetchone()
        if found is None:
            raise _refused(
                "device",
                f"{device!r} sent and received nothing in {run_dir}",
                limit="a device of this run",
                value=device,
            )


def _messages(db, selection) -> Iterator[tuple[float, str, Any]]:
    from ldpfleet.broker.trace import rows
    from ldpfleet.protocol import codec
    from ldpfleet.protocol.errors import RemoteProtocolError

    try:
        for row in rows(db, selection):
            try:
                message: Any = codec.decode(row.payload)
            except RemoteProtocolError:
                message = row.payload
            yield row.time, row.topic, message
    finally:
        db.close()
