"""The run states the warning of ``replay_jump_warnings`` in results.json ``warnings``
(needs /tmp/P-replay-jump.diff's scenarios/runner.py and scenarios/sides.py)."""

import numpy as np

import ldpfleet


def test_a_run_whose_replays_break_the_true_period_says_so(tmp_path):
    values = 20 + 5 * np.sin(2 * np.pi * np.arange(200) / 36)
    (tmp_path / "p.csv").write_text("v\n" + "".join(f"{v:.4f}\n" for v in values))
    scenario = {
        "scenario": {"name": "p-jump", "seed": 3},
        "fleet": {"devices": 3},
        "stream": {"steps": 150, "eps": 8.0, "w": 4, "reconstruct": "cpr"},
        "source": {"kind": "csv", "path": str(tmp_path / "p.csv"), "bounds": [10.0, 30.0]},
    }
    plain = ldpfleet.run(ldpfleet.parse_scenario(scenario), broker="memory", out_dir=tmp_path / "a")
    assert plain["warnings"] == []  # no true_period stated: nothing to break
    scenario["source"]["true_period"] = 36
    results = ldpfleet.run(
        ldpfleet.parse_scenario(scenario), broker="memory", out_dir=tmp_path / "b"
    )
    (sentence,) = results["warnings"]
    assert "not a whole number of source.true_period = 36" in sentence
    assert "the replays of 2 of 3 devices run past its end" in sentence
    assert ldpfleet.read_results(tmp_path / "b")["warnings"] == results["warnings"]
