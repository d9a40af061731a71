"""``devices.state_file.DeviceStateFile`` on its own (helper T2's planted-bug hunt, round 2):
only the Mosquitto end-to-end shard-kill test exercised it. A restored device must get its
LAST saved state (its ledger and generator: nothing privatised or charged twice), and a
file of another run, shard or seed must never be adopted."""

from __future__ import annotations

from dataclasses import dataclass

from ldpfleet.devices.state_file import DeviceStateFile


@dataclass
class _Reporter:
    """Stands in for a ``StreamReporter``: the file pickles it whole, keyed by ``device``."""

    device: str
    spent: float
    has_outbound: bool = True


IDENTITY = {"run": "r1", "shard": "0/2", "seed": "7"}


def test_load_returns_the_last_save(tmp_path):
    """Kills SF2: a save of a device already saved ignored (``ON CONFLICT DO NOTHING``):
    a restarted shard would restore its first state, spend the budget again and
    privatise the same steps afresh."""
    states = DeviceStateFile(tmp_path / "s.sqlite", dict(IDENTITY))
    states.save(_Reporter("d1", 0.5))
    states.save(_Reporter("d1", 1.5))
    states.save(_Reporter("d2", 0.25))
    states.close()
    again = DeviceStateFile(tmp_path / "s.sqlite", dict(IDENTITY))
    assert again.resumed
    assert again.load("d1") == _Reporter("d1", 1.5)
    assert again.load("d2") == _Reporter("d2", 0.25)
    assert again.load("d3") is None
    again.close(delete=True)


def test_a_file_of_another_run_shard_or_seed_starts_afresh(tmp_path):
    """Kills SF1: the identity compared by its keys only (or not at all): a device would
    resume another run's (or shard's, or seed's) ledger and generator."""
    path = tmp_path / "s.sqlite"
    for key, other in (("run", "r2"), ("shard", "1/2"), ("seed", "8")):
        states = DeviceStateFile(path, dict(IDENTITY))
        states.save(_Reporter("d1", 1.0))
        states.close()
        foreign = DeviceStateFile(path, {**IDENTITY, key: other})
        assert not foreign.resumed, key
        assert foreign.load("d1") is None, key
        foreign.close()
        # and the file now belongs to the new identity: the old one starts afresh too
        back = DeviceStateFile(path, dict(IDENTITY))
        assert not back.resumed and back.load("d1") is None, key
        back.close()
