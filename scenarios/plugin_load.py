"""A mechanism's load-time check under a time limit (above the protocol layer, which
stays pure: no threads, no clocks).

``protocol.mechanisms.stream_mechanism`` runs the contract's sample check on the first
build of each (name, eps) and remembers it passed. A plugin whose ``perturb`` (or
``in_domain``, ``estimate_mean``) never returns hung ``ldpfleet run`` and ``ldpfleet
audit`` at load, forever, without a word: where a scenario is loaded and where the audit
command loads a plugin, :func:`mechanism_in_time` makes that first build in a worker
thread joined with ``LOAD_CHECK_SECONDS``; later builds find the check done.
"""

from __future__ import annotations

import threading

from ldpfleet.protocol.errors import ParameterError
from ldpfleet.protocol.mechanisms import stream_mechanism

# Seconds the load-time check may take (the built-ins need milliseconds, a pure-Python
# plugin on its 557 inputs well under one second): a plugin past it is refused.
LOAD_CHECK_SECONDS = 60.0


def mechanism_in_time(name: str, eps: float):
    """``stream_mechanism(name, eps)`` in a worker thread joined with
    ``LOAD_CHECK_SECONDS``. Past the limit, one sentence (``ParameterError``, field
    ``mechanism``); the blocked call is left to its daemon thread (Python cannot stop it),
    which the exiting command does not wait for. The check's own errors are raised as
    they are."""
    outcome: list = []

    def work() -> None:
        try:
            outcome.append(stream_mechanism(name, eps))
        except BaseException as error:  # handed to the caller's thread as it is
            outcome.append(error)

    worker = threading.Thread(target=work, name=f"ldpfleet-check {name}", daemon=True)
    worker.start()
    worker.join(LOAD_CHECK_SECONDS)
    if worker.is_alive():
        raise ParameterError(
            f"{name!r} did not finish the load-time check within {LOAD_CHECK_SECONDS:g} s "
            "(perturb, in_domain or estimate_mean on a few hundred inputs): a plugin that "
            "blocks (a network call, a lock, input()) or is that slow cannot serve a device",
            field="mechanism",
            limit=f"a load-time check that finishes within {LOAD_CHECK_SECONDS:g} s",
            value=name,
        )
    if isinstance(outcome[0], BaseException):
        raise outcome[0]
    return outcome[0]
