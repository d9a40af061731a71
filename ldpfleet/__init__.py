"""ldpfleet: fleets of IoT device agents running local differential privacy protocols
over a real MQTT broker."""

from __future__ import annotations

__version__ = "0.1.0"
