"""GC-DP's central release noise follows ``[privacy] device_noise`` (privacy review V).

The release's Laplace noise came from ``release_rng(seed)`` only, and results.json holds
the seed: whoever has both can replay the noise and subtract it from the published release.
Now results.json says where the noise came from (``release_noise`` and a note), and with
``device_noise = "os"`` it is drawn from fresh OS entropy: two runs of one seed release
different values. Fails without the change: no ``release_noise``, the same generator.
"""

from __future__ import annotations

from ldpfleet.collector.gcdp_stage import GcdpStage, release_rng
from ldpfleet.scenarios.plans import gcdp_stage_config
from ldpfleet.scenarios.schema import load_scenario

from tests.unit.test_gcdp_fleet_scenario import RELEASE


def test_seeded_release_noise_is_a_function_of_the_seed_and_says_so():
    loaded = load_scenario(RELEASE)
    config = gcdp_stage_config(loaded)
    assert config.release_noise == "seeded"
    stage = GcdpStage(config, "r1", loaded.device_ids(), seed=6)
    summary = stage.summary()
    assert summary["release_noise"] == "seeded"
    assert "whoever holds the seed" in summary["release_noise_note"]
    assert release_rng(6).random() == release_rng(6, "seeded").random()


def test_os_release_noise_differs_between_runs_of_one_seed():
    loaded = load_scenario(RELEASE).with_device_noise("os")
    config = gcdp_stage_config(loaded)
    assert config.release_noise == "os"
    stage = GcdpStage(config, "r1", loaded.device_ids(), seed=6)
    assert stage.summary()["release_noise"] == "os"
    # 2**-53-grained doubles from two fresh 128-bit entropy seeds: equal with probability
    # about 2**-53, far below 1e-6
    assert release_rng(6, "os").random() != release_rng(6, "os").random()
