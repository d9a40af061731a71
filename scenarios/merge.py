"""``ldpfleet merge``: one run directory from the pieces of a run made of separate processes.

The collector side (``ldpfleet collector --out C``) and every fleet shard (``ldpfleet fleet
--shard i/k --out Fi``) write their own directories (docs/separate-processes.md). This puts
into ``OUT`` what ``ldpfleet run`` writes — results.json and ledger.json merged by the
scenario kind's merger (``scenarios.sides.write_merged`` for stream, GC-DP and secure-sum
runs; ``scenarios.cadr_sides.merge_cadr_outputs`` for CADR-LDP) — plus the trace and the
store (hard links where the file system allows, else copies), so ``ldpfleet report``,
``trace show`` and ``trace verify OUT`` work on it. ``ldpfleet run`` merges its pieces with
it too (``scenarios.split_run``).

A partitioned run (``[collector] partitions = P > 1``): the collector directory is the
coordinator's and the partition workers' directories come with the fleet directories (in any
order: a worker's results.json names its partition). ``merge_partition_dirs`` first unites
the coordinator and the workers into ``OUT/collector`` (``scenarios.coordinator``) and links
each worker's trace and store into OUT as ``trace-p{p}.sqlite`` / ``collector-p{p}.sqlite``.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import sqlite3
from collections.abc import Iterable
from pathlib import Path

from ldpfleet.broker.trace import TraceError
from ldpfleet.scenarios.jsonout import write_results

COPIED = ("trace.sqlite", "collector.sqlite", "reconstructions.npz")


def merge_run(
    collector_dir: str | Path, fleet_dirs: Iterable[str | Path], out_dir: str | Path
) -> Path:
    """Merge into ``out_dir`` (created); returns it. ``TraceError`` names a missing piece."""
    collector = Path(collector_dir)
    fleets = [Path(d) for d in fleet_dirs]
    results = collector / "results.json"
    if not results.exists():
        raise TraceError(f"no results.json in {collector}: is it a collector side's --out?")
    _refuse_a_run_that_never_ran(results, read_object(results))
    _check_pieces(collector, fleets, Path(out_dir))
    partitions = [d for d in fleets if _partition_index(d) is not None]
    fleets = [d for d in fleets if d not in partitions]
    # every refusal of the fleet pieces before the first write (merge_partition_dirs
    # writes OUT/collector and links the workers' traces): a refused merge leaves OUT as
    # it was
    for directory in fleets:
        if not (directory / "outcomes.json").exists():
            raise TraceError(f"no outcomes.json in {directory}: is it a fleet shard's --out?")
        read_object(directory / "outcomes.json")
        if (directory / "ledger.json").exists():
            read_object(directory / "ledger.json")
    refuse_a_shard_given_twice(fleets)
    if partitions or isinstance(read_object(results).get("partitions"), int):
        collector = merge_partition_dirs(collector, partitions, out_dir)
    missing = missing_shards(fleets)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    spec = json.loads(results.read_text()).get("scenario", {}).get("spec", {})
    if spec.get("cadr") is not None:
        from ldpfleet.scenarios.cadr_sides import merge_cadr_outputs

        merge_cadr_outputs(collector, fleets, out_dir=out)
    else:
        from ldpfleet.scenarios.sides import write_merged

        write_merged(collector, fleets, out)
    for name in COPIED:
        source = collector / name
        if source.exists() and source.resolve() != (out / name).resolve():
            _link_or_copy(source, out / name)
    _keep_trace_key(collector / "results.json", out / "results.json")
    if missing:
        _add_warning(out / "results.json", missing)
    return out


def _refuse_a_run_that_never_ran(results: Path, document: dict) -> None:
    """``TraceError`` with the refusal's own sentence when the run stopped before any device
    ran because a fleet shard refused its terms (``aborted.reason`` ``terms_differ``): the
    shards wrote nothing, and the merge said "a whole run's results" (CADR-LDP) or "no
    outcomes.json" (streams), neither of which says what happened."""
    aborted = document.get("aborted")
    if isinstance(aborted, dict) and aborted.get("reason") == "terms_differ":
        raise TraceError(
            f"run {document.get('run', '?')} never ran, nothing to merge: "
            f"{aborted.get('detail') or 'a fleet shard refused its terms'} ({results} says so)"
        )


def read_object(path: Path) -> dict:
    """A piece's JSON file as an object; ``TraceError`` naming the file when it is not
    JSON (a side stopped while writing it: a JSONDecodeError traceback) or not an object
    (a list was read as a whole run's results)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise TraceError(
            f"{path} is not a run's JSON ({error}); was its side stopped while writing it?"
        ) from None
    if not isinstance(document, dict):
        raise TraceError(f"{path} is not a run's JSON object, got a {type(document).__name__}")
    return document


def refuse_a_shard_given_twice(fleets: list[Path]) -> None:
    """``TraceError`` when two fleet directories hold the same shard ``i/k`` (their
    outcomes.json say which): two copies of that shard ran (started again with another
    --out, so without its state file, or the same command twice), and each copy's devices
    privatised their steps afresh. The merged ledger kept one copy per device (a dict by
    device id) and showed one copy's spend, while the collector may have received both
    (privacy review V2: with noise the seed cannot replay, two independent reports of the
    same readings; the collector counts the second copy's batches under ``replay``)."""
    seen: dict[str, Path] = {}
    for directory in fleets:
        shard = read_object(directory / "outcomes.json").get("shard")
        if not isinstance(shard, str):
            continue
        if shard in seen:
            raise TraceError(
                f"shard {shard} is in both {seen[shard]} and {directory}: two copies of it "
                "ran, and each privatised its devices' steps, so one ledger per device would "
                "hide a second spend; merge the copy the collector side kept and check its "
                "rejections_by_reason for replay"
            )
        seen[shard] = directory


def missing_shards(fleets: list[Path]) -> str | None:
    """A warning when the fleet directories do not hold every shard ``i/k`` of the run
    (their outcomes.json say which): a merge of shard 0/2 alone had the ledger of half the
    devices and said nothing. None when they do, or when a shard is not named ``i/k``."""
    seen: dict[int, int] = {}
    for directory in fleets:
        shard = read_object(directory / "outcomes.json").get("shard")
        try:
            index, count = (int(part) for part in str(shard).split("/"))
        except ValueError:
            return None
        seen[index] = count
    counts = set(seen.values())
    if len(counts) != 1:
        return None
    absent = sorted(set(range(counts.pop())) - set(seen))
    if not absent:
        return None
    total = len(absent) + len(seen)
    names = ", ".join(f"{i}/{total}" for i in absent[:10])
    return (
        f"merged {len(seen)} of {total} fleet shards (missing {names}): the ledger and the "
        "per-device figures cover only the given shards' devices; give every shard's --out "
        "directory"
    )


def _add_warning(results_path: Path, warning: str) -> None:
    document = json.loads(results_path.read_text())
    document["warnings"] = [*(document.get("warnings") or []), warning]
    write_results(results_path, document)  # atomically: a stop mid-write keeps the old file


def _check_pieces(collector: Path, fleets: list[Path], out: Path) -> None:
    """``TraceError`` for pieces that cannot be merged: a directory given twice (its
    shard was counted twice), an output directory that is one of the pieces (the merge
    overwrote that side's results.json), a whole run given as the collector side (a
    KeyError traceback)."""
    seen: dict[Path, Path] = {}
    for directory in (collector, *fleets):
        key = directory.resolve()
        if key in seen:
            raise TraceError(f"{directory} is given twice: give each piece of the run once")
        seen[key] = directory
    if out.resolve() in seen:
        raise TraceError(
            f"--out {out} is one of the pieces: the merge would overwrite its results.json; "
            "give another directory (default: COLLECTOR_DIR/merged)"
        )
    document = read_object(collector / "results.json")
    whole = not is_collector_side(document)
    if whole and "outcomes.json" not in {p.name for p in collector.iterdir()}:
        raise TraceError(
            f"{collector}/results.json is a whole run's results (`ldpfleet run` or a merge), "
            "not a collector side's: give the collector side's --out (e.g. RUN/collector)"
        )


def is_collector_side(document: dict) -> bool:
    """``document`` (a results.json) is a collector side's (``ldpfleet collector``, a
    coordinator or a partition worker), not a whole run's (``ldpfleet run`` or a merge):
    its devices' ledgers are in the fleet shards' directories, not beside it."""
    if "side_processes" in document:
        return False
    side_keys = ("mean_estimates", "partitions", "partition", "stage_seconds", "collector_ledger")
    return any(key in document for key in side_keys)


SHARD_SEARCH_LIMIT = 1_000  # entries of the parent folder looked at for shard directories


def shard_dirs_near(collector: str | Path, run: str | None) -> list[Path]:
    """The fleet shards' directories of run ``run`` beside ``collector`` (its parent's
    folders holding an outcomes.json and a ledger.json of that run: the layout of
    ``ldpfleet run`` and of docs/separate-processes.md), sorted; at most
    ``SHARD_SEARCH_LIMIT`` entries of the parent are looked at."""
    collector = Path(collector)
    found: list[Path] = []
    if not run:
        return found
    try:
        entries = sorted(collector.resolve().parent.iterdir())[:SHARD_SEARCH_LIMIT]
    except OSError:
        return found
    for entry in entries:
        ledger = entry / "ledger.json"
        if entry == collector.resolve() or not (entry / "outcomes.json").is_file():
            continue
        try:
            document = json.loads(ledger.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(document, dict) and document.get("run") == run:
            found.append(collector.parent / entry.name)
    return found


def _partition_index(directory: Path) -> int | None:
    """The partition of a worker's directory (its results.json says), else None."""
    path = directory / "results.json"
    if not path.exists() or (directory / "outcomes.json").exists():
        return None
    entry = json.loads(path.read_text()).get("partition")
    return entry.get("index") if isinstance(entry, dict) else None


def merge_partition_dirs(coordinator_dir, partition_dirs, out_dir) -> Path:
    """Unite a coordinator's and its workers' directories into ``OUT/collector`` and link
    each worker's trace and store into OUT; returns ``OUT/collector``. ``TraceError``
    names a missing partition."""
    from ldpfleet.scenarios.coordinator import merge_partitions
    from ldpfleet.scenarios.sides import _scenario_of

    coordinator_dir, out = Path(coordinator_dir), Path(out_dir)
    document = json.loads((coordinator_dir / "results.json").read_text())
    count = document.get("partitions")
    by_index = {_partition_index(Path(d)): Path(d) for d in partition_dirs}
    missing = sorted(set(range(count or 0)) - set(by_index))
    if not isinstance(count, int) or missing:
        raise TraceError(
            f"{coordinator_dir} is a coordinator of {count} partitions: give every partition "
            f"worker's directory (missing partitions {missing[:10]})"
        )
    ordered = [by_index[p] for p in range(count)]
    merged = merge_partitions(_scenario_of(document), coordinator_dir, ordered, out / "collector")
    for p, directory in enumerate(ordered):
        for name, target in (("trace.sqlite", f"trace-p{p}.sqlite"),
                             ("collector.sqlite", f"collector-p{p}.sqlite")):  # fmt: skip
            if (directory / name).exists():
                _link_or_copy(directory / name, out / target)
    return merged


def _link_or_copy(source: Path, target: Path) -> None:
    """``target`` as a hard link to ``source`` (a trace can be gigabytes), or a copy where
    the file system refuses links."""
    target.unlink(missing_ok=True)
    if source.suffix == ".sqlite" and source.with_name(source.name + "-wal").exists():
        with contextlib.closing(sqlite3.connect(source)) as db:  # the link sees every row
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def _keep_trace_key(collector_results: Path, merged_results: Path) -> None:
    """The merged results.json carries the collector side's trace key (``trace verify``
    reads it there) and trace entry, whichever merger wrote it."""
    trace = json.loads(collector_results.read_text()).get("trace")
    merged = json.loads(merged_results.read_text())
    if trace and not (merged.get("trace") or {}).get("public_key"):
        merged["trace"] = {**(merged.get("trace") or {}), **trace}
        write_results(merged_results, merged)
