"""Scenario texts the library-user and verify tests share: a tiny synthetic stream."""

from __future__ import annotations


def stream_text(
    name: str,
    *,
    seed: int = 3,
    devices: int = 2,
    steps: int = 8,
    eps: float = 2.0,
    w: int = 4,
    shape: str = "sine",
    period: int = 4,
    fleet_extra: str = "",
    extra: str = "",
) -> str:
    """A TOML scenario: ``devices`` devices stream ``steps`` SW reports (``eps``, window
    ``w``) of a unit ``shape`` of ``period`` samples in [-1, 1]; ``fleet_extra`` is added
    verbatim to the ``[fleet]`` table (e.g. ``'connection = "bulk"'``), ``extra`` after
    the last table (e.g. ``"[collector]\\npartitions = 2"``)."""
    fleet = f"devices = {devices}" + (f"\n{fleet_extra}" if fleet_extra else "")
    return f"""
[scenario]
name = "{name}"
seed = {seed}
[fleet]
{fleet}
[stream]
steps = {steps}
eps = {eps!r}
w = {w}
[source]
kind = "synthetic"
shape = "{shape}"
period = {period}
amplitude = 1.0
bounds = [-1.0, 1.0]
""" + (f"{extra}\n" if extra else "")


def sine_stream_text(
    name: str,
    *,
    devices: int = 2,
    steps: int = 8,
    period: int = 4,
    w: int = 4,
    fleet_extra: str = "",
) -> str:
    """``stream_text`` of a sine at ε 2, seed 3."""
    return stream_text(
        name, devices=devices, steps=steps, period=period, w=w, fleet_extra=fleet_extra
    )
