"""Scenario texts the library-user tests share: a tiny sine stream on a few devices."""

from __future__ import annotations


def sine_stream_text(
    name: str,
    *,
    devices: int = 2,
    steps: int = 8,
    period: int = 4,
    w: int = 4,
    fleet_extra: str = "",
) -> str:
    """A TOML scenario: ``devices`` devices stream ``steps`` SW reports (ε 2, window ``w``)
    of a unit sine of ``period`` samples in [-1, 1], seed 3; ``fleet_extra`` is added
    verbatim to the ``[fleet]`` table (e.g. ``'connection = "bulk"'``)."""
    fleet = f"devices = {devices}" + (f"\n{fleet_extra}" if fleet_extra else "")
    return f"""
[scenario]
name = "{name}"
seed = 3
[fleet]
{fleet}
[stream]
steps = {steps}
eps = 2.0
w = {w}
[source]
kind = "synthetic"
shape = "sine"
period = {period}
amplitude = 1.0
bounds = [-1.0, 1.0]
"""
