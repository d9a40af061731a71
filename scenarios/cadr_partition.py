"""A CADR-LDP run with collector partitions: the coordinator, the workers and the merge.

DESIGN.md "Scale" (issue 23); ``collector.cadr_partition`` is the protocol between them.
``cadr_coordinator_side`` is ``scenarios.cadr_sides.cadr_collector_side`` with a
``ReleaseGatherer``: it waits for every worker's ``ready`` before it announces the run (the
fleet shards start on the announcement), then runs the recorder, the relay, the readiness
barrier and the collector (``collect_cadr``: plan, θ search and its secure sums, θ, relay
phases) and takes the DSR values and refusals from the workers (the ``releases`` hook)
before it releases and post-processes them exactly as one collector does. Its results.json
is a collector side's, plus ``partitions: P``. A fleet shard that refused the run (other
terms: ``FleetRefused``) stops it at once as it stops one collector side
(``scenarios.cadr_sides.collect_unless_refused``: results.json holds only ``aborted``,
reason ``terms_differ``), and the workers stop on its ``run closed``. Its recorder records
what one collector's records but the workers' status topic (``ready`` repeats, chunks):
the devices keep the unpartitioned CADR topics, so it also sees every DSR release and
acknowledgement (with ``[cadr] trace = "all"``) and the workers' rejections.

``cadr_partition_side`` is worker ``p`` of ``P``: ``serve_cadr_partition`` for its devices
(``topics.partition_of``), their releases persisted in its ``collector.sqlite``; its
results.json holds its counts and ``partition: {index, of, devices}``.

``merge_cadr_partitions`` makes the collector side's directory (the coordinator's
results.json with the partitions' counts, its trace) that ``merge_cadr_outputs`` merges
with the fleet shards as usual.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import shutil
import time
from pathlib import Path

from ldpfleet.broker.auth import Credentials
from ldpfleet.broker.recorder import stamp_public_key
from ldpfleet.broker.select import open_broker
from ldpfleet.broker.transport import Transport
from ldpfleet.collector.announce import announce_run_closed
from ldpfleet.collector.cadr_fleet import CadrFailed
from ldpfleet.collector.cadr_partition import (
    ReleaseGatherer,
    listen_to_workers,
    serve_cadr_partition,
)
from ldpfleet.collector.readiness import DevicesMissing
from ldpfleet.protocol import topics
from ldpfleet.protocol.cadr_budget import CadrBudget
from ldpfleet.protocol.partition import status_topic
from ldpfleet.scenarios.cadr_run import (
    CadrSettings,
    cadr_trace_filters,
    collect_cadr,
    collector_results,
    device_names,
    fresh_outputs,
    load_scenario_graph,
    scenario_header,
    write_cadr_results,
)
from ldpfleet.scenarios.cadr_sides import (
    CadrSideStopped,
    _joinable,
    cadr_terms,
    collect_unless_refused,
)
from ldpfleet.scenarios.jsonout import write_results
from ldpfleet.scenarios.sides import run_announcer

__all__ = [
    "cadr_coordinator_side",
    "cadr_partition_side",
    "coordinator_trace_filters",
    "merge_cadr_partitions",
]


def coordinator_trace_filters(run: str, trace: str) -> tuple[str, ...]:
    """The coordinator recorder's filters: one collector's (``trace = "control"``:
    ``cadr_trace_filters``; ``"all"``: the whole run) without the workers' status topic."""
    prefix = f"{topics.PREFIX}/{run}"
    services = (f"{prefix}/svc/+/reject", f"{prefix}/svc/+/phase", f"{prefix}/svc/recorder/#")
    if trace == "control":
        kept = tuple(f for f in cadr_trace_filters(run) if f != f"{prefix}/svc/#")
        return (*kept, *services)
    return (f"{prefix}/ctl/#", f"{prefix}/rel/#", f"{prefix}/dev/#", *services)


def _partitions_of(scenario) -> int:
    return scenario.spec.collector.partitions


async def cadr_coordinator_side(
    scenario,
    broker: str | Transport,
    run: str,
    out_dir: str | Path,
    *,
    seed: int | None = None,
    credentials: Credentials | None = None,
    fleet_timeout: float = 60.0,
    workers_timeout: float = 60.0,
) -> dict:
    """The coordinator (module docstring); writes OUT/results.json and OUT/trace.sqlite.
    ``CadrSideStopped`` when a worker is not ready within ``workers_timeout`` seconds, the
    devices do not join, a stage fails or a fleet shard refused the run's terms (at once;
    then ``OUT/results.json`` holds only ``aborted``, reason ``terms_differ``:
    ``scenarios.cadr_sides.collect_unless_refused``); the workers then hear ``run closed``
    and stop (tests/e2e/test_B6_cadr_partition_terms_refused.py)."""
    count = _partitions_of(scenario)
    settings = CadrSettings.of_scenario(scenario, seed)
    graph, _ = load_scenario_graph(scenario)
    out = fresh_outputs(out_dir)
    announcer = run_announcer(scenario, run, cadr_terms(scenario, graph, settings.seed))
    gatherer = ReleaseGatherer(run, count)
    async with (
        open_broker(_joinable(broker), credentials=credentials) as (transport, info),
        transport.connect(f"{run}-collector-announce") as conn,
        transport.connect(f"{run}-collector-coordinator") as workers,
    ):
        await workers.subscribe(status_topic(run))
        listening = asyncio.create_task(listen_to_workers(workers, gatherer))

        async def announce() -> None:
            missing = await gatherer.wait_ready(workers_timeout)
            if missing:
                raise CadrSideStopped(
                    f"{len(missing)} of {count} partition workers of run {run} did not say "
                    f"ready within {workers_timeout:g} s (partitions {missing[:10]})"
                )
            await announcer.open(conn)

        async def closing(reason: str) -> None:
            await announcer.close(conn, reason)

        try:
            # a fleet shard that refused the run stops it at once (results.json: aborted,
            # terms_differ), as it stops an unpartitioned CADR-LDP collector side
            collected = await collect_unless_refused(
                transport,
                scenario,
                graph,
                settings.seed,
                run,
                out,
                collect_cadr(
                    transport,
                    graph,
                    settings,
                    run,
                    listening=announce,
                    join_timeout=fleet_timeout,
                    trace_path=out / "trace.sqlite",
                    closing=closing,
                    releases=gatherer.gathered,
                    trace_filters=coordinator_trace_filters(run, settings.trace),
                ),
                closing,
            )
        except (DevicesMissing, CadrFailed) as error:
            await _close_for_workers(conn, run)
            raise CadrSideStopped(str(error)) from None
        except BaseException:  # the workers stop on 'run closed', whatever ended the run
            await _close_for_workers(conn, run)
            raise
        finally:
            await announcer.stop_repeating()
            listening.cancel()
            await asyncio.gather(listening, return_exceptions=True)
    results = collector_results(
        graph, settings, collected, broker=info.kind, run=run, processes=None
    )
    results |= {"partitions": count, "partition_messages_refused": gatherer.refused}
    written = write_cadr_results(out, {"scenario": scenario_header(scenario), **results})
    return stamp_public_key(out, written)


async def _close_for_workers(conn, run: str) -> None:
    """A failed run's ``run closed`` (``collect_cadr`` says it only after a release)."""
    with contextlib.suppress(Exception):
        await announce_run_closed(conn, run)


def partition_devices(graph, partition: int, partitions: int) -> list[str]:
    """The devices of ``partition`` (graph order)."""
    return [d for d in device_names(graph) if topics.partition_of(d, partitions) == partition]


async def cadr_partition_side(
    scenario,
    broker: str | Transport,
    run: str,
    partition: tuple[int, int],
    out_dir: str | Path,
    *,
    seed: int | None = None,
    credentials: Credentials | None = None,
) -> dict:
    """Worker ``p`` of ``P`` (module docstring); writes OUT/results.json and
    OUT/collector.sqlite; returns the results."""
    p, count = partition
    settings = CadrSettings.of_scenario(scenario, seed)
    graph, _ = load_scenario_graph(scenario)
    devices = partition_devices(graph, p, count)
    searched = settings.theta_plan(graph).searched  # the small-fleet rule searches nothing
    budget = CadrBudget.for_pipeline(
        settings.eps, settings.alpha, settings.pipeline, searched, graph.n, settings.method
    )  # method clip: DSR takes what the θ search leaves
    out = fresh_outputs(out_dir)
    wall = time.perf_counter()
    async with open_broker(_joinable(broker), credentials=credentials) as (transport, info):
        counts = await serve_cadr_partition(
            transport,
            run,
            (p, count),
            devices,
            eps_dsr=budget.dsr,
            store_path=out / "collector.sqlite",
        )
    results = {
        "run": run,
        "broker": info.kind,
        "partition": {"index": p, "of": count, "devices": len(devices)},
        **counts,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "seconds": round(time.perf_counter() - wall, 3),
    }
    write_results(out / "results.json", results, indent=2)
    return results


def merge_cadr_partitions(coordinator_dir: str | Path, partition_dirs, out_dir: str | Path) -> Path:
    """The collector side's directory in ``out_dir``: the coordinator's results.json (its
    ``partitions`` entry becomes the workers' counts) and trace."""
    coordinator_dir, out = Path(coordinator_dir), Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    document = json.loads((coordinator_dir / "results.json").read_text())
    parts = [json.loads((Path(d) / "results.json").read_text()) for d in partition_dirs]
    document["partitions"] = {
        "count": len(parts),
        "devices": [part["partition"]["devices"] for part in parts],
        "released": [part["released"] for part in parts],
        "rejected": [part["rejected"] for part in parts],
        "duplicates": [part["duplicates"] for part in parts],
        "messages_refused": document.pop("partition_messages_refused", 0),
        "peak_rss_mb": [part.get("peak_rss_mb") for part in parts],
    }
    write_results(out / "results.json", document, indent=2)
    if (coordinator_dir / "trace.sqlite").exists():
        shutil.copy2(coordinator_dir / "trace.sqlite", out / "trace.sqlite")
    return out
