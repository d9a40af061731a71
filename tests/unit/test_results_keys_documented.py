"""Every key of a stream run's results.json is explained in docs/results.md (before, no
document listed them: ``stages.stream.fleet_seconds``, ``close_reason``,
``stream.values_received`` were in none, the others scattered over five documents).

The run is ``faults`` (the quickstart with crashes and a hostile client) on the in-memory
transport, so that the sections a clean run leaves empty (``faults``, rejections, missing
batches) are filled; a run on a real broker adds ``side_processes``.
"""

from pathlib import Path

import pytest

import ldpfleet
from tests.doc_keys import documented_keys, json_keys

DOC = Path(__file__).resolve().parents[2] / "docs" / "results.md"

# dictionaries whose keys are data (device ids, message kinds, reasons), not names, and the
# capability sections, whose own keys their documents describe
OPAQUE = {
    "scenario.spec", "per_device", "missing_batches", "rejections_by_field",
    "rejections_by_reason", "budget_refusals", "device_rejections", "trace.by_kind",
    "reconstruction", "secure_sum", "gcdp", "faults", "fleet.unfinished_devices",
    "fleet.device_errors", "fleet.shards", "side_processes",
}  # fmt: skip


def _keys(d: dict) -> list[str]:
    return json_keys(d, opaque=OPAQUE)


def _documented() -> set[str]:
    return documented_keys(DOC)


@pytest.mark.slow
def test_every_key_of_a_stream_run_is_documented(tmp_path):
    results = ldpfleet.run("faults", broker="memory", out_dir=tmp_path)
    stages = {f"stages.{name}" for name in results["stages"]}
    keys = [k for k in _keys(results) if not any(k.startswith(s + ".") for s in stages)]
    keys = [k for k in keys if k not in stages] + [
        f"stages.stream.{k}" for k in results["stages"]["stream"]
    ]
    documented = _documented()
    assert [k for k in keys if k not in documented] == []
    # per_device entries, by their fields
    fields = set(next(iter(results["per_device"].values())))
    row = next(r for r in DOC.read_text().splitlines() if r.startswith("| `per_device` |"))
    assert [f for f in sorted(fields) if f"`{f}`" not in row] == []


def test_the_document_names_only_keys_a_run_has():
    """A renamed key is caught either way: each documented top-level name is one a stream
    run writes (ldpfleet/scenarios' sources spell it)."""
    root = Path(__file__).resolve().parents[2]
    source = "".join(p.read_text() for p in (root / "scenarios").glob("*.py"))
    source += (
        (root / "collector" / "service.py").read_text()
        if (root / "collector" / "service.py").exists()
        else ""
    )
    missing = [k for k in sorted(_documented()) if "." not in k and f'"{k}"' not in source]
    assert missing == []
