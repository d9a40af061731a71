"""``trace verify``'s fifth step: results.json's figures against what verify read.

The recorder signs results.json's scenario (its digest), not the figures beside it, so
until this step one edited count (``reports_received``), spend (``privacy.max_window_spent``,
``privacy.within_budget``) or error (``accuracy.mean_abs_error``) verified clean (helper
H's user trial, scripts/H_inspect_user.py). Each figure that can be recomputed from the
signed trace, the ledgers, the collector's store or the signed scenario is compared here;
a difference is ``results_differs`` naming the key, its value and the value recomputed.
A key a run's results.json does not have is not checked (a collector side's, a partition
worker's and a merged run's results carry different subsets). What stays unchecked —
the simulator's truths (``per_device.true_mean``) and timings — is said in one
``not checked:`` line.

Stream runs only (a CADR-LDP run's results have their own keys, docs/cadr.md; a bulk run
is ``app.trace_verify_bulk``, which compares its counts already).
"""

from __future__ import annotations

import math
from collections.abc import Callable

REL_TOL = 1e-9
NOT_CHECKED = (
    "results.json's figures that the trace cannot vouch for (per_device.true_mean, the "
    "simulator's truth, the timings, latencies and memory) are taken as written; its "
    "counts, the stream's and the privacy claim's parameters and spends, and the accuracy "
    "figures' arithmetic over per_device are checked (results_differs)"
)


def _same(a, b) -> bool:
    """Equal as results.json would write them: numbers within REL_TOL, others exactly."""
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-12)
    return a == b


def _get(results: dict, key: str):
    """``results[a][b]`` for ``key`` ``"a.b"``; a sentinel when absent or not an object."""
    node = results
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            return _ABSENT
        node = node[part]
    return node


_ABSENT = object()


def verify_results(
    results: dict,
    *,
    devices: int,
    stream: dict,
    rows: int,
    stored: tuple[int, int] | None,
    ledger_spends: list[float] | None,
    central: tuple[list[tuple[float, float]], int] | None = None,
    report,
) -> None:
    """Compare results.json's figures (module docstring) and record each difference on
    ``report`` (a ``trace_verify.VerifyReport``). ``devices``: the scenario's fleet size;
    ``stream``: the stream's ``mechanism``, ``eps``, ``w``, ``eps0``, ``steps`` and
    ``batch_steps`` as the scenario resolves them (what the hellos must declare);
    ``rows``: the rows of every trace read; ``stored``: (reports, values) in the
    collector's store (None when the store was not read); ``ledger_spends``: each stream
    account's largest window spend (None for a raw stream, whose claim is the release's);
    ``central``: a raw stream's central release accounts, (max_window_spent, eps) each, and
    the devices' (raw) accounts counted."""
    expected: dict[str, object] = {"devices": devices, "trace.messages": rows}
    for key, value in stream.items():
        expected[f"stream.{key}"] = value
    if stream.get("mechanism") != "raw":
        for key in ("mechanism", "eps", "w", "eps0"):
            expected[f"privacy.{key}"] = stream.get(key)
    if stored is not None:
        expected["reports_received"], expected["stream.values_received"] = stored
    if ledger_spends:
        most = max(ledger_spends)
        expected["privacy.devices"] = len(ledger_spends)
        expected["privacy.max_window_spent"] = most
        eps = expected.get("privacy.eps")
        if isinstance(eps, int | float):
            expected["privacy.within_budget"] = most <= eps * (1 + REL_TOL)
    if central is not None:
        held, devices_counted = central
        expected["privacy.devices"] = devices_counted
        expected["privacy.max_window_spent"] = max(m for m, _ in held)
        expected["privacy.within_budget"] = all(m <= e * (1 + REL_TOL) for m, e in held)
    expected.update(_accuracy(results))
    expected.update(_counts(results))
    _compare(results, expected, lambda key: _SOURCE.get(key, "the run"), report)
    report.notes.append(NOT_CHECKED)


_SOURCE = {
    "devices": "the scenario",
    "trace.messages": "the trace's rows",
    "reports_received": "the collector's store",
    "stream.values_received": "the collector's store",
    "privacy.devices": "the ledgers",
    "privacy.max_window_spent": "the ledgers",
    "privacy.within_budget": "the ledgers",  # a raw stream: the central release's ledger
    "accuracy.mean_abs_error": "per_device",
    "accuracy.max_abs_error": "per_device",
    "reports_lost": "missing_batches",
    "devices_complete": "per_device (state done)",
}
for _key in ("mechanism", "eps", "w", "eps0", "steps", "batch_steps"):
    _SOURCE[f"stream.{_key}"] = _SOURCE[f"privacy.{_key}"] = "the scenario"


def _counts(results: dict) -> dict[str, int]:
    """``reports_lost`` from ``missing_batches`` (the batches never persisted, per
    device) and ``devices_complete`` from ``per_device`` (state ``done``)."""
    out = {}
    missing = results.get("missing_batches")
    if isinstance(missing, dict) and all(isinstance(v, list) for v in missing.values()):
        out["reports_lost"] = sum(len(v) for v in missing.values())
    per_device = results.get("per_device")
    if isinstance(per_device, dict) and all(
        isinstance(e, dict) and "state" in e for e in per_device.values()
    ):  # a collector side's per_device has no state (the devices' view): not recomputed
        out["devices_complete"] = sum(e.get("state") == "done" for e in per_device.values())
    return out


def _accuracy(results: dict) -> dict[str, float]:
    """``accuracy.mean_abs_error`` and ``max_abs_error`` recomputed from ``per_device``
    (abs(mean_estimate - true_mean) over the devices with both as numbers; a
    multi-channel source's per-channel lists are not recomputed here)."""
    per_device = results.get("per_device")
    if not isinstance(per_device, dict):
        return {}
    errors = []
    for entry in per_device.values():
        if not isinstance(entry, dict):
            return {}
        estimate, truth = entry.get("mean_estimate"), entry.get("true_mean")
        if estimate is None or truth is None:
            continue
        if not all(
            isinstance(x, int | float) and not isinstance(x, bool) for x in (estimate, truth)
        ):
            return {}
        errors.append(abs(estimate - truth))
    if not errors:
        return {}
    return {
        "accuracy.mean_abs_error": sum(errors) / len(errors),
        "accuracy.max_abs_error": max(errors),
    }


def verify_cadr_results(results: dict, *, rows: int, release, plan, report) -> None:
    """A CADR-LDP run's results.json against its signed trace: ``trace_messages`` (the
    rows read), ``eps`` and ``alpha`` (the traced plan), and, from the traced degree
    release on ``rel/degrees`` (``release``, a ``DegreeRelease`` or None), ``theta``,
    ``histogram``, ``estimate_histogram``, ``released`` and ``per_device``'s ``released``
    and ``estimate``; then the arithmetic over ``per_device``: each ``abs_error`` =
    abs(degree - estimate) (``raw_abs_error`` with the released value), and ``mae``,
    ``raw.mae`` and ``postprocessed.mae`` their means (``results_differs``). The true
    degrees are the simulator's (taken as written)."""
    expected: dict[str, object] = {"trace_messages": rows}
    if plan is not None:
        expected["eps"], expected["alpha"] = plan.eps, plan.alpha
    if release is not None:
        expected["theta"] = release.theta
        expected["histogram"] = list(release.histogram)
        if release.estimates:
            expected["estimate_histogram"] = list(release.estimate_histogram)
        for k, device in enumerate(release.devices):
            expected[f"released.{device}"] = release.values[k]
            expected[f"per_device.{device}.released"] = release.values[k]
            if k < len(release.estimates):
                expected[f"per_device.{device}.estimate"] = release.estimates[k]
    expected.update(_cadr_arithmetic(results))
    _compare(results, expected, _cadr_source, report, width=80, most=20)
    report.notes.append(
        "results.json's true degrees (per_device.degree, the simulator's) and timings are "
        "taken as written; the release, θ, the plan's ε and α, the counts and the error "
        "figures' arithmetic over per_device are checked (results_differs)"
    )


def _compare(
    results: dict,
    expected: dict[str, object],
    source: Callable[[str], str],
    report,
    *,
    width: int | None = None,
    most: int | None = None,
) -> None:
    """Each ``expected`` figure against ``results`` (absent or null on either side: not
    compared), counted in ``report.checked["results_figures"]``; a difference is
    ``results_differs`` naming the key, both values (their reprs cut to ``width``
    characters) and ``source(key)``, the record it was recomputed from; past ``most``
    differences one line says how many more."""
    failures = 0
    for key, want in expected.items():
        got = _get(results, key)
        if got is _ABSENT or got is None or want is None:
            continue
        report.checked["results_figures"] += 1
        if _same_deep(got, want):
            continue
        failures += 1
        if most is None or failures <= most:
            shown, wanted = repr(got)[:width], repr(want)[:width]
            report.fail(
                "results",
                None,
                "results_differs",
                f"results.json {key} is {shown}; recomputed from {source(key)}: {wanted}",
            )
    if most is not None and failures > most:
        report.fail("results", None, "results_differs", f"{failures - most} more not listed")


def _same_deep(a, b) -> bool:
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return _same(a, b)


def _cadr_source(key: str) -> str:
    if key == "trace_messages":
        return "the trace's rows"
    if key in ("eps", "alpha"):
        return "the traced plan"
    if key.endswith("mae") or key.endswith("abs_error"):
        return "per_device"
    return "the traced degree release"


def _cadr_arithmetic(results: dict) -> dict[str, float]:
    per_device = results.get("per_device")
    if not isinstance(per_device, dict) or not per_device:
        return {}
    out: dict[str, float] = {}
    errors, raw_errors = [], []
    for device, entry in per_device.items():
        if not isinstance(entry, dict):
            return {}
        if "dropped" in entry and "released" not in entry:
            continue  # dropped out ([cadr] dropout): released nothing, scored nowhere
        degree, estimate, released = (entry.get(k) for k in ("degree", "estimate", "released"))
        if not all(_is_number(x) for x in (degree, released)):
            return {}
        raw_errors.append(abs(degree - released))
        out[f"per_device.{device}.raw_abs_error"] = raw_errors[-1]
        if _is_number(estimate):
            errors.append(abs(degree - estimate))
            out[f"per_device.{device}.abs_error"] = errors[-1]
    out["raw.mae"] = sum(raw_errors) / len(raw_errors)
    if len(errors) == len(raw_errors):
        out["mae"] = out["postprocessed.mae"] = sum(errors) / len(errors)
    return out


def _is_number(x) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)
