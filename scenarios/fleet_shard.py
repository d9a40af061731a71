"""One shard of a scenario's device fleet against a broker, in this process.

    python -m ldpfleet.scenarios.fleet_shard SCENARIO --broker URL --run RUN
        [--shard i/k] [--seed S] [--out DIR] [--credentials PATH]

``run_fleet_shard`` runs the devices ``i ≡ shard (mod k)`` of the scenario and writes
``ledger.json`` and ``outcomes.json`` (``DeviceOutcome`` per device, crashes, connect time,
peak RSS) into ``DIR`` (default ``runs/RUN/fleet-i-of-k``). SIGTERM ends the devices and
what they did so far is still written. The sharded fleet (``scenarios.shards``) spawns this
module once per shard; ``ldpfleet fleet`` is the same function behind the command line.
Exit status: 0 when every device delivered everything, 1 otherwise, 2 on bad arguments.
Before it loads the scenario it appends to ``sys.path`` the folders the runner named in
``LDPFLEET_PLUGIN_PATH`` (``plugin_load.use_plugin_path``): where the runner's process
imported a plugin mechanism from, e.g. a folder its caller's script put on ``sys.path``.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import resource
import signal
import sys
from pathlib import Path

from ldpfleet.broker.auth import AuthError, Credentials
from ldpfleet.broker.select import open_broker
from ldpfleet.devices.fleet import DeviceOutcome, Fleet, parse_shard
from ldpfleet.scenarios.jsonout import write_json
from ldpfleet.scenarios.loop import run as run_loop
from ldpfleet.scenarios.plans import fleet_config, fleet_state_file
from ldpfleet.scenarios.plugin_load import use_plugin_path
from ldpfleet.scenarios.runner import ledger_document
from ldpfleet.scenarios.schema import LoadedScenario, load_scenario

__all__ = ["load_run_credentials", "main", "run_fleet_shard", "write_shard_outputs"]


def load_run_credentials(path: Path | None, run: str | None = None) -> Credentials | None:
    """Load a run's credentials.json; refuse a run id other than theirs."""
    if path is None:
        return None
    credentials = Credentials.load(path)
    if run is not None and run != credentials.run:
        raise AuthError(f"{path} is for run {credentials.run!r}, not {run!r}")
    return credentials


def run_fleet_shard(
    scenario: LoadedScenario,
    broker: str,
    run: str,
    shard: tuple[int, int] = (0, 1),
    *,
    seed: int | None = None,
    out: Path | None = None,
    credentials: Credentials | None = None,
) -> tuple[list[DeviceOutcome], Path]:
    """Run shard ``shard`` of ``scenario``'s fleet on ``broker`` and write its ledger and
    outcomes (before its event loop closes); returns the outcomes and the directory.
    Raises ``asyncio.CancelledError`` when stopped before its devices were built (nothing
    to write)."""
    written: list[list[DeviceOutcome]] = []
    target = out or Path("runs") / run / f"fleet-{shard[0]}-of-{shard[1]}"

    def write(fleet: Fleet, outcomes: list[DeviceOutcome]) -> None:
        write_shard_outputs(target, scenario, run, shard, broker, fleet, outcomes)
        written.append(outcomes)

    async def go() -> list[DeviceOutcome]:
        # SIGTERM (a runner stopping its shards) ends the devices; the outcomes so far
        # are still written. They are written INSIDE the loop: closing the loop restores
        # SIGTERM's default action, so a SIGTERM arriving after it (a runner whose
        # finish_grace ran out on a loaded machine) killed the shard before it wrote
        # anything, and its devices' ledgers were lost.
        task = asyncio.current_task()
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
        state_file = fleet_state_file(scenario, run, shard, target)
        config = fleet_config(scenario, run, seed, state_file=state_file)
        async with open_broker(broker, credentials=credentials) as (transport, _):
            fleet = Fleet(config, transport, shard=shard)
            try:
                outcomes = await fleet.run()
            except asyncio.CancelledError:
                write(fleet, fleet.outcomes())  # no await: a second SIGTERM cannot cut it
                raise
            write(fleet, outcomes)
            return outcomes

    try:
        return run_loop(go()), target
    except asyncio.CancelledError:
        if not written:
            raise
        return written[0], target


def write_shard_outputs(
    target: Path,
    scenario: LoadedScenario,
    run: str,
    shard: tuple[int, int],
    broker: str,
    fleet: Fleet | None,
    outcomes: list[DeviceOutcome],
    *,
    extra: dict | None = None,
) -> None:
    """A shard's ``ledger.json`` and ``outcomes.json`` in ``target`` (``extra``: more
    outcomes.json entries, e.g. the shard's secure-sum part)."""
    config = scenario.stream_config(run)
    target.mkdir(parents=True, exist_ok=True)
    write_json(
        target / "ledger.json", ledger_document(run, config.eps, config.w, outcomes), indent=2
    )
    write_json(
        target / "outcomes.json",
        {
            "shard": f"{shard[0]}/{shard[1]}",
            "broker": broker,
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
            "connect_seconds": fleet.connect_seconds if fleet else None,
            "crashed": fleet.crashed if fleet else {},
            # where the devices' noise came from (devices.noise_entropy; never the noise)
            "device_noise": fleet.fleet_config.device_noise if fleet else None,
            "devices": outcomes,
            **(extra or {}),
        },
    )


def _arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m ldpfleet.scenarios.fleet_shard")
    parser.add_argument("scenario", type=Path, help="scenario file")
    parser.add_argument("--broker", "-b", required=True, help="mqtt://host:port of the broker")
    parser.add_argument("--run", required=True, help="run id shared with the collector")
    parser.add_argument("--shard", default="0/1", help="run slice i of k")
    parser.add_argument("--seed", type=int, default=None, help="override the scenario's seed")
    parser.add_argument("--device-noise", default=None, help="[privacy] device_noise: seeded, os")
    parser.add_argument("--out", "-o", type=Path, default=None, help="where to write")
    parser.add_argument("--credentials", type=Path, default=None, help="credentials.json")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    """The shard process: run it, print one line, return the exit status."""
    args = _arguments(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # the folders the runner imported a plugin mechanism from (its caller's sys.path)
    use_plugin_path()
    try:
        shard = parse_shard(args.shard)
        scenario = load_scenario(args.scenario).with_device_noise(args.device_noise)
        credentials = load_run_credentials(args.credentials, args.run)
        outcomes, target = run_fleet_shard(
            scenario,
            args.broker,
            args.run,
            shard,
            seed=args.seed,
            out=args.out,
            credentials=credentials,
        )
    except asyncio.CancelledError:
        return 1
    except (ValueError, OSError) as error:  # bad scenario, source, credentials or broker
        print(f"error: {error}", file=sys.stderr)
        return 2
    done = sum(o.state == "done" for o in outcomes)
    print(
        f"shard {args.shard}: {done}/{len(outcomes)} devices delivered everything; "
        f"ledger in {target}"
    )
    return 0 if done == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
