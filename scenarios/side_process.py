"""One side of a run as its own OS process (what ``ldpfleet run`` starts).

``python -m ldpfleet.scenarios.side_process collector|fleet SCENARIO --broker URL --run ID
--out DIR [--shard i/k] [--seed N] [--credentials FILE] [--progress]`` runs
``scenarios.sides.collector_side`` or ``fleet_side`` (every kind of scenario: stream, GC-DP,
secure sum, CADR-LDP) exactly as ``ldpfleet collector`` / ``ldpfleet fleet`` do, without the
application layer (the scenarios layer never imports it). ``scenarios.split_run`` builds
``ldpfleet run`` from these processes.

With ``[collector] partitions = P > 1`` the collector side is ``coordinator`` (one) and
``partition --partition p/P`` (one per partition), ``scenarios.coordinator`` (a CADR-LDP
scenario's: ``scenarios.cadr_partition``); the coordinator prints the progress and stage
lines.

With ``--progress`` the collector side writes one JSON object per line on stdout for its
parent: ``{"progress": [persisted, expected, joined, devices]}`` while the stream stage runs
(``joined``: devices whose hello arrived) and
``{"stage": name, "seconds": s}`` when a CADR-LDP stage completes. Its last line is
``{"done": true}`` once results.json is written. Everything else (warnings, log records)
goes to stderr.

Exit status: 0 when the side ran to its end and wrote its outputs (the outputs say whether
the run was complete), 1 when it stopped with a sentence (no collector announced the run, a
stage failed, the other side went silent), 2 on bad input (scenario, shard, credentials).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import math
import sys
import time
from pathlib import Path

from ldpfleet.broker.select import BrokerUnavailable
from ldpfleet.devices.fleet import parse_shard
from ldpfleet.devices.rendezvous import RendezvousError
from ldpfleet.scenarios.fleet_shard import load_run_credentials
from ldpfleet.scenarios.loop import run as run_loop
from ldpfleet.scenarios.shards import cancelled_on_sigterm

MODULE = "ldpfleet.scenarios.side_process"
PROGRESS_EVERY = 0.25  # seconds between two progress lines (only when the count moved)


def _say(document: dict) -> None:
    """One JSON line for the parent process."""
    sys.stdout.write(json.dumps(document) + "\n")
    sys.stdout.flush()


def _seconds(text: str) -> float:
    """A timeout option: a finite number of seconds > 0 (as the ``ldpfleet`` options)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (value > 0 and math.isfinite(value)):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text!r}")
    return value


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}")
    parser.add_argument("side", choices=("collector", "fleet", "coordinator", "partition"))
    parser.add_argument("scenario", type=Path, help="scenario file or built-in name")
    parser.add_argument("--broker", "-b", required=True, help="mqtt://host:port of the broker")
    parser.add_argument("--run", required=True, help="run id shared by both sides")
    parser.add_argument("--shard", default="0/1", help="fleet: run slice i of k")
    parser.add_argument("--partition", default="0/1", help="partition: worker p of P")
    parser.add_argument("--out", "-o", type=Path, required=True, help="where to write")
    parser.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    parser.add_argument("--credentials", type=Path, default=None, help="credentials.json")
    parser.add_argument("--fleet-timeout", type=_seconds, default=60.0, help="collector: join")
    parser.add_argument("--wait-timeout", type=_seconds, default=60.0, help="fleet: rendezvous")
    parser.add_argument("--progress", action="store_true", help="collector: JSON progress lines")
    parser.add_argument(
        "--device-noise", default=None, help="fleet: [privacy] device_noise (seeded or os)"
    )
    return parser.parse_args(argv)


async def _collector(args: argparse.Namespace, scenario, credentials) -> dict:
    from ldpfleet.collector.cadr_fleet import stage_listener
    from ldpfleet.collector.readiness import join_listener
    from ldpfleet.scenarios.sides import collector_side

    extra: dict = {}
    if args.progress and scenario.spec.cadr is None:
        extra["progress"] = _progress_lines()
    token = stage_listener.set(
        (lambda name, seconds: _say({"stage": name, "seconds": seconds})) if args.progress else None
    )
    joins = join_listener.set(_join_lines() if args.progress else None)
    try:
        results = await collector_side(
            scenario,
            args.broker,
            args.run,
            args.out,
            seed=args.seed,
            credentials=credentials,
            fleet_timeout=args.fleet_timeout,
            **extra,
        )
    finally:
        stage_listener.reset(token)
        join_listener.reset(joins)
    if scenario.spec.cadr is not None and "theta" in results:
        print(
            f"collector: run {args.run} released {len(results['released'])} degrees, "
            f"theta {results['theta']}, MAE {results['mae']:.3f}; outputs in {args.out}",
            file=sys.stderr if args.progress else sys.stdout,
            flush=True,
        )
    return results


def _progress_lines():
    """A progress callback that prints a line when the count moved."""
    last: list[tuple] = []

    def progress(*counts: int) -> None:
        if not last or last[0] != counts:
            last[:] = [counts]
            _say({"progress": list(counts)})

    return progress


def _join_lines():
    """A join callback that prints ``{"joined": [joined, expected]}`` at most every
    PROGRESS_EVERY seconds, and always for the last device."""
    last = [0.0]

    def joined(count: int, expected: int) -> None:
        now = time.monotonic()
        if count == expected or now - last[0] >= PROGRESS_EVERY:
            last[0] = now
            _say({"joined": [count, expected]})

    return joined


async def _coordinator(args: argparse.Namespace, scenario, credentials) -> dict:
    from ldpfleet.collector.cadr_fleet import stage_listener
    from ldpfleet.scenarios.coordinator import coordinator_side

    cadr = scenario.spec.cadr is not None
    token = stage_listener.set(
        (lambda name, seconds: _say({"stage": name, "seconds": seconds})) if args.progress else None
    )
    try:
        return await coordinator_side(
            scenario,
            args.broker,
            args.run,
            args.out,
            seed=args.seed,
            credentials=credentials,
            fleet_timeout=args.fleet_timeout,
            workers_timeout=args.fleet_timeout,
            progress=_progress_lines() if args.progress and not cadr else None,
        )
    finally:
        stage_listener.reset(token)


async def _partition(args: argparse.Namespace, scenario, credentials) -> dict:
    from ldpfleet.scenarios.coordinator import partition_side

    return await partition_side(
        scenario,
        args.broker,
        args.run,
        parse_shard(args.partition),
        args.out,
        seed=args.seed,
        credentials=credentials,
    )


async def _fleet(args: argparse.Namespace, scenario, credentials) -> dict:
    from ldpfleet.scenarios.sides import fleet_side

    print(f"fleet {args.shard}: waiting for run {args.run}", flush=True)
    return await fleet_side(
        scenario,
        args.broker,
        args.run,
        parse_shard(args.shard),
        args.out,
        seed=args.seed,
        credentials=credentials,
        wait_timeout=args.wait_timeout,
    )


def main(argv: list[str] | None = None) -> int:
    """Run the side; return the exit status (module docstring)."""
    from ldpfleet.scenarios.schema import load_scenario

    args = _arguments(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    stops: tuple[type[BaseException], ...] = (RendezvousError, BrokerUnavailable)
    try:
        scenario = load_scenario(args.scenario).with_device_noise(args.device_noise)
        credentials = load_run_credentials(args.credentials, args.run)
        side = {
            "collector": _collector,
            "fleet": _fleet,
            "coordinator": _coordinator,
            "partition": _partition,
        }[args.side]
        result = run_loop(cancelled_on_sigterm(side(args, scenario, credentials)))
    except asyncio.CancelledError:
        print(f"{args.side}: stopped (SIGTERM)", file=sys.stderr, flush=True)
        return 1
    except Exception as error:
        cadr = sys.modules.get("ldpfleet.scenarios.cadr_sides")
        if cadr is not None:
            stops += (cadr.CadrSideStopped,)
        if isinstance(error, stops):
            print(f"{args.side}: {getattr(error, 'sentence', error)}", file=sys.stderr, flush=True)
            return 1
        if isinstance(error, (ValueError, OSError)):  # bad scenario, shard or credentials
            print(f"error: {error}", file=sys.stderr, flush=True)
            return 2
        raise
    if args.side in ("collector", "coordinator") and args.progress:
        _say({"done": True})
    if args.side == "fleet":
        devices = result.get("devices") or result.get("outcomes") or ()
        print(f"fleet {args.shard}: {len(devices)} devices ended; outputs in {args.out}")
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
    sys.exit(130)
