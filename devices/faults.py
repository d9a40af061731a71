"""Which devices crash, when, and whether they come back (``[faults]``, fault injection).

The plan is a pure function of the ``[faults]`` settings (a ``CrashConfig``, built by the
scenarios layer), the fleet's device ids, the stream length and the seed, so a sharded
fleet agrees on it and a run can be repeated exactly. A device crashes right after it has
saved the state in which step ``crash_step`` is privatised and before it publishes
anything of it (the harshest moment for a persist-before-publish device: the state is on
its storage, nothing of it on the wire). Everything in its RAM is then gone: its session,
its timers, its machine. After ``down_seconds`` a returning device restores its machine
from storage and goes on; a device that never returns leaves its batches missing, which
the collector reports (``missing_batches``) instead of waiting for them forever.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

FAULTS_STREAM = 0xFA17  # the random stream the plan is drawn from (with the seed)


@dataclass(frozen=True)
class CrashConfig:
    """Which share of the fleet crashes, when, and how many never come back."""

    crash_fraction: float  # share of the devices that crash (chosen from the seed)
    never_return: int  # of the crashed devices, how many never come back
    crash_between: tuple[float, float]  # the crash step, as a fraction of the stream
    down_seconds: float  # how long a returning device stays down


@dataclass(frozen=True)
class Crash:
    """One device's crash."""

    device: str
    step: int  # it crashes once this many steps are privatised (and saved)
    returns: bool


def crash_plan(
    faults: CrashConfig | None, devices: Sequence[str], steps: int, seed: int
) -> dict[str, Crash]:
    """Device id -> its crash, for the devices of ``devices`` (streams of ``steps`` steps)
    that crash (none without ``faults``)."""
    if faults is None or faults.crash_fraction <= 0:
        return {}
    rng = np.random.default_rng([seed, FAULTS_STREAM])
    count = round(faults.crash_fraction * len(devices))
    chosen = rng.choice(len(devices), size=count, replace=False)
    low, high = faults.crash_between
    plan = {}
    for rank, index in enumerate(chosen.tolist()):
        step = int(np.clip(round(rng.uniform(low, high) * steps), 1, steps))
        device = devices[index]
        plan[device] = Crash(device, step, returns=rank >= faults.never_return)
    return plan
