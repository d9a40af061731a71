"""A mechanism class of the caller's script or notebook (``"__main__:Class"``) with device
processes (``[fleet] shards`` > 1) is refused before the run (helper U, library-user QA).

Found: ``parse_scenario({... "stream": {"mechanism": Mine}, "fleet": {"shards": 2}})`` run
on the embedded broker printed two shards' "module '__main__' has no attribute 'Mine'"
and returned results with ``devices_complete`` 0, no exception: the shard processes'
``__main__`` is not the caller's. In one process (shards = 1, the memory broker) it runs.
"""

from __future__ import annotations

import sys

import pytest

import ldpfleet


class Mine:
    """A contract mechanism, published as ``__main__:Mine`` below (a script's class)."""

    def __init__(self, eps):
        self.eps = eps
        self.inner = ldpfleet.LaplaceMechanism(eps)

    def perturb(self, x, rng):
        return self.inner.perturb(x, rng)

    def in_domain(self, y):
        return self.inner.in_domain(y)

    def estimate_mean(self, y):
        return self.inner.estimate_mean(y)


@pytest.fixture
def main_class(monkeypatch):
    """``Mine`` as a class of ``__main__``, as one defined in a script or a notebook is."""
    monkeypatch.setattr(Mine, "__module__", "__main__")
    monkeypatch.setattr(sys.modules["__main__"], "Mine", Mine, raising=False)
    return Mine


def sections(mechanism, shards) -> dict:
    return {
        "scenario": {"name": "main-class", "seed": 1},
        "fleet": {"devices": 4, "shards": shards},
        "stream": {"steps": 8, "eps": 2.0, "w": 4, "mechanism": mechanism},
        "source": {"kind": "synthetic", "shape": "sine", "period": 4, "bounds": [-1.0, 1.0]},
    }


def test_with_device_processes_it_is_refused_before_the_run(main_class, tmp_path):
    scenario = ldpfleet.parse_scenario(sections(main_class, 2))
    assert scenario.spec.stream.mechanism == "__main__:Mine"
    with pytest.raises(ldpfleet.ScenarioError) as caught:
        ldpfleet.run(scenario, broker="embedded", out_dir=tmp_path / "out")
    assert caught.value.field == "stream.mechanism"
    assert caught.value.value == "__main__:Mine"
    assert "module of its own" in str(caught.value)
    assert not (tmp_path / "out").exists()


def test_in_one_process_it_runs(main_class, tmp_path):
    for shards, broker in ((2, "memory"), (1, "embedded")):
        scenario = ldpfleet.parse_scenario(sections(main_class, shards))
        results = ldpfleet.run(scenario, broker=broker, out_dir=tmp_path / f"{shards}{broker}")
        assert results["devices_complete"] == 4
