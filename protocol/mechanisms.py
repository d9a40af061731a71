"""The per-step stream mechanisms a device may run, by name.

``sw`` and ``sw01``: Square Wave (``protocol.sw``); ``laplace``: the Laplace baseline
(``protocol.laplace``). All map a value in [0, 1] to a report, are pure eps-LDP, and offer
``perturb``, ``estimate``, ``density`` and ``in_domain``. ``raw`` (``protocol.raw``) is the
central model's identity: no local privacy, no budget (``eps = 0``), no ``density``; it
is only allowed in scenarios whose collector performs a central release (``[gcdp]``).
"""

from __future__ import annotations

from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.laplace import LaplaceMechanism
from ldpfleet.protocol.raw import RawMechanism
from ldpfleet.protocol.sw import SquareWave

STREAM_MECHANISMS = ("sw", "sw01", "laplace", "raw")
LDP_MECHANISMS = ("sw", "sw01", "laplace")


def stream_mechanism(name: str, eps: float) -> SquareWave | LaplaceMechanism | RawMechanism:
    """The mechanism ``name`` at budget ``eps`` per report (``raw``: eps must be 0)."""
    if name in ("sw", "sw01"):
        return SquareWave(eps, name)
    if name == "laplace":
        return LaplaceMechanism(eps)
    if name == "raw":
        return RawMechanism(eps)
    raise ParameterError(f"must be one of {STREAM_MECHANISMS}, got {name!r}", field="mechanism")
