"""Stream-stage analytics: per-device mean estimates from Square Wave reports.

Post-processing only (no privacy cost): the unbiased point estimate of each report is
averaged over the device's stream and mapped back to physical units with the public
bounds. Reconstruction (CPR) builds on the same store.
"""

from __future__ import annotations

import numpy as np

from protocol.stream import StreamConfig
from protocol.sw import denormalise


def sw_mean_estimates(config: StreamConfig, streams: dict[str, np.ndarray]) -> dict[str, float]:
    """Per device, the estimated mean of its clipped stream in physical units."""
    mechanism = config.mechanism_object()
    return {
        device: float(denormalise(np.mean(mechanism.estimate(values)), config.lo, config.hi))
        for device, values in streams.items()
        if len(values)
    }
