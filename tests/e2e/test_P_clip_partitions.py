"""Method clip with collector partitions: each worker's DSR intake takes clip's ε_dsr (ε less
the θ search's part), so P = 2 releases what one collector releases. Needs
/tmp/P-partition.diff (scenarios/cadr_partition.py passes the method to the budget)."""

from __future__ import annotations

import tests.e2e.test_partition_cadr as part


def test_clip_workers_release_what_one_collector_releases(tmp_path, monkeypatch):
    clip = part.SCENARIO.replace('theta = "auto-dev"', 'method = "clip"\ntheta = "auto-dev"')
    monkeypatch.setattr(part, "SCENARIO", clip)
    one, _, _ = part.over_memory(tmp_path / "one", 1, "all")
    two, _, done = part.over_memory(tmp_path / "two", 2, "all")
    assert one["method"] == two["method"] == "clip" and set(one["budget"]) == {"theta", "dsr"}
    assert sum(w["released"] for w in done[1:3]) == 60
    for key in part.SAME:
        assert two.get(key) == one.get(key), key
    # each ledger.json names its run (cadrmem1, cadrmem2): the device ledgers agree
    ledgers = part.device_ledgers(tmp_path / "two" / "o", "cadrmem2")
    assert ledgers == part.device_ledgers(tmp_path / "one" / "o", "cadrmem1")
