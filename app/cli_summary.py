"""What ``ldpfleet`` prints after a run: the summary table, the warnings, the sentences on
lost, rejected or late reports, the trace's public key, and OUT/report.html.

Shared by ``run`` (app/cli_run.py), ``merge`` (app/cli_report.py), the separate sides
(app/cli_sides.py) and ``bench secagg`` (app/cli_bench.py).
"""

from __future__ import annotations

from pathlib import Path

import typer
from ldpfleet.app.accuracy_text import (
    cosine_distance_text,
    device_means_text,
    fleet_average_text,
    private_device_accuracy,
    release_mae_text,
)
from ldpfleet.app.cli_common import _say_interrupted, _state, console


def _summary_table(results: dict):
    """The run's summary as a rich table: delivery, faults, accuracy, reconstruction,
    secure sum and central release, one row each where the run has them."""
    from rich.table import Table

    table = Table(
        title=f"run {results['run']} ({results['broker']['kind']} broker)", show_header=False
    )
    rows_ = _delivery_rows(results)
    faults = results.get("faults")
    if faults:
        rows_ += _fault_rows(faults)
    rows_ += _accuracy_rows(results)
    rows_ += _capability_rows(results)
    for key, value in rows_:
        table.add_row(key, value)
    return table


def _delivery_rows(results: dict) -> list[tuple[str, str]]:
    """Devices complete, reports received / lost / rejected, the stream stage, the trace
    and (when any) the reconnects."""
    stream = results["stages"]["stream"]
    rows_ = [
        ("devices complete", f"{results['devices_complete']} / {results['devices']}"),
        ("reports received", f"{results['reports_received']} / {results['reports_expected']}"),
        ("reports lost", str(results["reports_lost"])),
        ("reports rejected", str(results["reports_rejected"])),
        ("stream stage", f"{stream['status']} in {stream['seconds']:.2f} s"),
        ("trace messages", str(results["trace"]["messages"]) + _trace_incomplete_mark(results)),
    ]
    delivery = results.get("delivery") or {}
    if delivery.get("device_reconnects") or delivery.get("collector_reconnects"):
        rows_.append((
            "reconnects (devices / collector / recorder)",
            f"{delivery['device_reconnects']} / {delivery['collector_reconnects']} / "
            f"{delivery['recorder_reconnects']}, {delivery['republished']} republished",
        ))  # fmt: skip
    return rows_


def _fault_rows(faults: dict) -> list[tuple[str, str]]:
    """What ``[faults]`` injected and how the run recovered: crashes, a hostile client."""
    injected, outcome = faults["injected"], faults["outcome"]
    gone = outcome["never_returned"]
    rows_ = [(
        "faults: crashes",
        f"{len(injected['crashes'])} crashed, {outcome['returned_complete']}/"
        f"{outcome['returned']} came back and completed, {len(gone)} never returned "
        f"({sum(gone.values())} batches reported missing)",
    )]  # fmt: skip
    if injected["hostile"]:
        rows_.append((
            "faults: hostile client",
            f"{injected['hostile']['messages']} messages, "
            f"{outcome['reports_rejected']} rejected (by reason in results.json)",
        ))  # fmt: skip
    return rows_


def _accuracy_rows(results: dict) -> list[tuple[str, str]]:
    """The device means' error (not for raw readings), the fleet average, and the
    reconstruction's streams, period accuracy and cosine distance."""
    rows_ = []
    accuracy = private_device_accuracy(results)
    if accuracy is not None:
        rows_.append(("mean abs error of device means", device_means_text(accuracy)))
        average = fleet_average_text(accuracy.get("fleet_average"))
        if average:
            rows_.append(("fleet average (private)", average))
    reconstruction = results.get("reconstruction")
    if reconstruction:
        parts = [f"{reconstruction['streams']} streams in {reconstruction['seconds']:.2f} s"]
        if reconstruction.get("period_accuracy") is not None:
            parts.append(f"period accuracy {100 * reconstruction['period_accuracy']:.0f}%")
        if reconstruction.get("mean_cosine_distance") is not None:
            parts.append(cosine_distance_text(reconstruction))
        rows_.append((f"reconstruction ({reconstruction['method']})", ", ".join(parts)))
    return rows_


def _capability_rows(results: dict) -> list[tuple[str, str]]:
    """The secure sum's outcome and the GC-DP central release, when the run has them."""
    rows_ = []
    secure = results.get("secure_sum")
    if secure:
        outcome = (
            f"aborted: {secure['aborted']}"
            if secure["aborted"]
            else f"{secure['survivors']}/{secure['devices']} survivors, exact={secure.get('exact')}"
        )
        rows_.append((f"secure sum ({secure['graph']}, dim {secure['dim']})",
                      f"{outcome}, {secure['seconds']:.2f} s"))  # fmt: skip
    gcdp = results.get("gcdp")
    if gcdp:
        rows_.append((
            f"central release ({gcdp['method']}, eps_rel {gcdp['eps_rel']:g} per window)",
            f"{gcdp['windows_released']}/{gcdp['windows_expected']} windows, "
            f"eps_cal {gcdp['eps_cal']:g}, {release_mae_text(gcdp['accuracy'])}",
        ))  # fmt: skip
    return rows_


def trace_incomplete_reason(results: dict) -> str | None:
    """Why the run's trace is incomplete (results.json ``trace_incomplete_reason``), or
    None: complete, or no recorder (``[collector] trace = "none"``: no reason given)."""
    if results.get("trace_complete") is False:
        return results.get("trace_incomplete_reason") or None
    return None


def _trace_incomplete_mark(results: dict) -> str:
    return " (incomplete)" if trace_incomplete_reason(results) else ""


# protocol/stream.py's close reason of a stream stage its deadline closed
STAGE_DEADLINE_REASON = "stage deadline passed"


def _deadline_clause(results: dict, stage_timeout: float) -> str:
    """``; the stage closed at its deadline, [collector] stage_timeout = N s (raise it ...)``
    when ``stage_timeout`` closed the stream stage (a run said only "N reports lost")."""
    stream = (results.get("stages") or {}).get("stream") or {}
    if STAGE_DEADLINE_REASON not in str(stream.get("close_reason") or ""):
        return ""
    return (
        f"; the stage closed at its deadline, [collector] stage_timeout = {stage_timeout:g} s "
        "(raise it if the fleet needs longer)"
    )


def _device_errors_clause(failed: dict[str, str]) -> str:
    """``; N device(s) failed (...)`` for results.json ``fleet.device_errors``: the first
    device's error and the count (a plugin failing on every device repeated the same
    sentence per device); every device's with ``--verbose``."""
    if not failed:
        return ""
    ordered = sorted(failed.items())
    if _state["verbose"] or len(ordered) == 1:
        return f"; {len(failed)} device(s) failed ({'; '.join(f'{d}: {e}' for d, e in ordered)})"
    device, error = ordered[0]
    return (
        f"; {len(failed)} device(s) failed (the first, {device}: {error}; the other "
        f"{len(failed) - 1} with --verbose and in results.json fleet.device_errors)"
    )


def _rejection_sentence(results: dict) -> str:
    """One sentence on the devices the collector finally rejected (results.json
    ``device_rejections``): the first by name, with its message, field, limit and value."""
    rejections = results["device_rejections"]
    device, first = min(rejections.items())
    seq = f" #{first['seq']}" if first["kind"] == "sw_report" else ""
    others = sorted(rejections)[1:]
    more = f"; {len(others)} more: {', '.join(others[:5])}{', ...' if len(others) > 5 else ''}"
    return (
        f"device {device} stopped: the collector rejected its {first['kind']}{seq}, field "
        f"{first['field'] or '?'}: {first['reason']} ({first['code']})"
        + (more if others else "")
        + "; results.json device_rejections lists them"
    )


def _print_trace_key(results: dict) -> None:
    """The trace's public key: keep it apart from the outputs, ``trace verify`` checks the
    trace's signature against it (docs/reliability.md)."""
    key = (results.get("trace") or {}).get("public_key")
    if key:
        print(f"trace public key: {key}")


def _write_report(out: Path) -> Path | None:
    """OUT/report.html after a run (a failure to draw never fails the run: it says why)."""
    from ldpfleet.app.progress import job_progress
    from ldpfleet.app.report import SECTIONS, write_report

    try:
        with job_progress("writing report.html", len(SECTIONS), unit="sections") as step:
            return write_report(out, progress=lambda _section: step())
    except Exception as error:  # the run's outputs are written; the page is extra
        console.print(f"[yellow]warning:[/] report.html not written: {error}")
        return None
    except KeyboardInterrupt:  # was typer's silent exit 130, the page missing unsaid
        _say_interrupted(
            f"interrupted while writing report.html; the run's outputs are complete in {out} "
            f"(`ldpfleet report {out}` writes the page)"
        )
        raise typer.Exit(130) from None


def _print_warnings(results: dict) -> None:
    """results.json ``warnings``, one ``warning:`` line each (e.g. scenarios.clipping's, a
    plugin's estimate_mean failing on the collector)."""
    from rich.markup import escape

    sentences = list(results.get("warnings") or [])
    reason = trace_incomplete_reason(results)
    if reason:
        sentences.append(
            f"the trace is incomplete: {reason}; `ldpfleet trace verify` cannot vouch for "
            "what the recorder did not see (results.json trace_complete)"
        )
    for sentence in sentences:
        console.print(f"[yellow]warning:[/] {escape(sentence)}", highlight=False, soft_wrap=True)
