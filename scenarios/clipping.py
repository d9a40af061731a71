"""How much of the data the FIXED public bounds clipped: simulator-only ground truth.

A device clips each raw reading to its public bounds (``source.bounds``, or its channel's
``source.column_bounds[k]``) before privatising it. Bounds in the wrong unit ([0, 1] for
temperatures in °C) clip nearly every reading to one end: the run completes and its
reconstruction is flat, with nothing else saying why. The runner holds every device's raw
readings (the simulator's truth, like ``cosine_distance``), so it records per device and
per run the share of readings the clip changed, and a warning when that share reaches
``WARN_SHARE``. Neither the devices' reports nor the collector see any of it, so it spends
no privacy budget (docs/scenarios.md, "Clipped share").
"""

from __future__ import annotations

from collections.abc import Iterable

from ldpfleet.devices.fleet import ClipTally

__all__ = ["WARN_SHARE", "add_clipping", "clipping_entry", "clipping_warning", "merge_tallies"]

# At 0.5 the median raw reading lies outside the bounds: the typical reading reaches the
# mechanism as a bound, so the stream describes the bounds more than the data. Bounds
# chosen to cut a tail clip a few percent; wrong-unit bounds clip ~100 %.
WARN_SHARE = 0.5


def merge_tallies(tallies: Iterable[ClipTally]) -> list[ClipTally]:
    """One tally per distinct bounds (``field`` and values), in first-seen order."""
    groups: dict[tuple, ClipTally] = {}
    for t in tallies:
        key = (t.field, t.bounds)
        seen = groups.get(key)
        groups[key] = (
            t
            if seen is None
            else ClipTally(
                t.bounds,
                t.field,
                seen.readings + t.readings,
                seen.clipped + t.clipped,
                min(seen.low, t.low),
                max(seen.high, t.high),
            )
        )
    return list(groups.values())


def clipping_warning(group: ClipTally) -> str | None:
    """The one-sentence warning for a group whose clipped share reaches ``WARN_SHARE``."""
    if group.readings == 0 or group.share < WARN_SHARE:
        return None
    lo, hi = group.bounds
    return (
        f"{group.field} [{lo:g}, {hi:g}] clipped {100 * group.share:.0f} % of the readings "
        f"(they range {group.low:.4g} .. {group.high:.4g}): are the bounds in the data's unit?"
    )


def clipping_entry(tallies: Iterable[ClipTally]) -> tuple[dict, list[str]]:
    """results.json's ``clipping`` entry over every device's tally, and its warnings."""
    groups = merge_tallies(tallies)
    readings = sum(g.readings for g in groups)
    clipped = sum(g.clipped for g in groups)
    entry = {
        "clipped_share": clipped / readings if readings else 0.0,
        "readings": readings,
        "readings_clipped": clipped,
        "warn_share": WARN_SHARE,
        "by_bounds": [
            {
                "field": g.field,
                "bounds": list(g.bounds),
                "clipped_share": g.share,
                "raw_range": [g.low, g.high] if g.readings else None,
            }
            for g in groups
        ],
    }
    warnings = [w for w in map(clipping_warning, groups) if w is not None]
    return entry, warnings


def add_clipping(results: dict, tallies: dict[str, ClipTally]) -> dict:
    """Record ``tallies`` (device -> its tally) in a stream run's ``results``: the run-level
    ``clipped_share``, the ``clipping`` entry, its sentences in ``warnings`` and each
    listed device's ``per_device[d]["clipped_share"]``."""
    entry, warnings = clipping_entry(tallies.values())
    results["clipped_share"] = entry["clipped_share"]
    results["clipping"] = entry
    results["warnings"] = [*results.get("warnings", []), *warnings]
    for device, device_entry in results.get("per_device", {}).items():
        if device in tallies:
            device_entry["clipped_share"] = tallies[device].share
    return results
