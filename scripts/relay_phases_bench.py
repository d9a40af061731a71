"""CPU of CADR-LDP's relay phases (NDOE + LPEA) without a broker: every device's
``CadrDevice`` and the ``PeerRelay`` machine in one process, every message through the
codec (encode at the sender, decode at the receiver), as on the wire.

It times, with ``time.process_time``, the relay's side (decode the batches, ``receive``,
encode the deliveries and broadcasts) and the devices' side (decode, ``receive``, encode)
separately, and prints a digest of every device's kept degree and DSR value: two code
versions that give the same digest made the same decisions.

    python scripts/relay_phases_bench.py                    # ego-Facebook, θ = 79, seed 0
    python scripts/relay_phases_bench.py --graph erdos_renyi:2000:p=0.01 --theta 12

The plan is the dp pipeline's on ego-Facebook (ε = 3, α = 0.1, θ share 0.6) and θ is
given (no secure sum); the LPEA phase is padded to 16 rounds as in the fleet run.
"""

from __future__ import annotations

import argparse
import hashlib
import time

import numpy as np
from ldpfleet.devices import graphs
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_device import CadrDevice
from ldpfleet.protocol.cadr_messages import CadrPlan, CadrTheta
from ldpfleet.protocol.lpea import PADDED_ROUNDS
from ldpfleet.protocol.peer_relay import PeerRelay, PhaseAborted, PhaseFinished

RUN = "bench-relay"


def _graph(spec: str):
    """``facebook`` or ``kind:n:param=value`` for ``devices.graphs.generate`` (seed 7)."""
    if spec == "facebook":
        return graphs.ego_facebook()
    kind, n, *pairs = spec.split(":")
    params = {key: float(value) for key, value in (pair.split("=") for pair in pairs)}
    return graphs.generate(kind, int(n), seed=7, **params)


def _devices(graph, seed: int) -> list[CadrDevice]:
    width = max(4, len(str(graph.n - 1)))
    names = [f"n{i:0{width}d}" for i in range(graph.n)]
    return [
        CadrDevice(
            RUN,
            names[i],
            [names[j] for j in graph.neighbours(i)],
            np.random.default_rng([seed, i]),
        )
        for i in range(graph.n)
    ]


class Bench:
    """The fleet's relay phases, message by message, through the codec."""

    def __init__(self, devices: list[CadrDevice], theta: int, bound: int) -> None:
        self.devices = {d.device: d for d in devices}
        self.relay = PeerRelay(RUN, self.devices)
        self.relay_cpu = 0.0
        self.device_cpu = 0.0
        self.messages = 0
        plan = CadrPlan(
            run=RUN, sender=topics.COLLECTOR_ID, eps=3.0, alpha=0.1, method="ll",
            degree_bound=bound, ndoe_parts=4, theta_fraction=0.6, noise_parties=1,
        )  # fmt: skip
        announce = CadrTheta(run=RUN, sender=topics.COLLECTOR_ID, theta=theta)
        for message, kind in ((plan, "cadr_plan"), (announce, "cadr_theta")):
            topic = topics.parse(topics.ctl(RUN, kind))
            for device in devices:
                device.receive(topic, message, 0.0)

    def _to_devices(self, outbound) -> list:
        """Deliver the relay's outbox; returns the devices' answers (encoded)."""
        answers = []
        for item in outbound:
            start = time.process_time()
            payload = codec.encode(item.message)
            self.relay_cpu += time.process_time() - start
            topic = topics.parse(item.topic)
            if topic.family == "svc":
                continue
            start = time.process_time()
            targets = self.devices.values() if topic.family == "ctl" else (
                [self.devices[topic.recipient]]
            )  # fmt: skip
            for device in targets:
                device.receive(topic, codec.decode(payload), 0.0)
                for out in device.pop_outbound():
                    answers.append((out.topic, codec.encode(out.message)))
            self.device_cpu += time.process_time() - start
            self.messages += len(targets)
        return answers

    def phase(self, name: str, **options) -> PhaseFinished:
        start = time.process_time()
        self.relay.start_phase(name, 0.0, **options)
        outbound = self.relay.pop_outbound()
        self.relay_cpu += time.process_time() - start
        while outbound:
            answers = self._to_devices(outbound)
            start = time.process_time()
            for topic_text, payload in answers:
                self.relay.receive(topics.parse(topic_text), codec.decode(payload), 0.0)
            outbound = self.relay.pop_outbound()
            self.relay_cpu += time.process_time() - start
            self.messages += len(answers)
        (event,) = [e for e in self.relay.pop_events() if isinstance(e, PhaseFinished)]
        assert not isinstance(event, PhaseAborted)
        return event

    def digest(self) -> str:
        h = hashlib.sha256()
        for name in sorted(self.devices):
            device = self.devices[name]
            h.update(f"{name}:{len(device.node.kept)}:{device.released!r};".encode())
        return h.hexdigest()[:16]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--graph", default="facebook")
    parser.add_argument("--theta", type=int, default=79)
    parser.add_argument("--bound", type=int, default=1045)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    bench = Bench(_devices(_graph(args.graph), args.seed), args.theta, args.bound)
    ndoe = bench.phase("ndoe")
    lpea = bench.phase("lpea", until_quiet=True, max_rounds=PADDED_ROUNDS, padded=True)
    print(
        f"ndoe items {ndoe.items}; lpea rounds {lpea.rounds} supersteps {lpea.supersteps} "
        f"items {lpea.items} batches {lpea.batches}; messages {bench.messages}"
    )
    print(
        f"cpu relay {bench.relay_cpu:.2f} s, devices {bench.device_cpu:.2f} s, "
        f"total {bench.relay_cpu + bench.device_cpu:.2f} s; digest {bench.digest()}"
    )


if __name__ == "__main__":
    main()
