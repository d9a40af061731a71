"""A synthetic source's period CPR can never claim runs and scores 0 % without a word
(helper P's user trial, 2026-12-06): ``period = 2`` (detect_period's smallest period is 3)
and ``period = 101`` in 300 steps (at most steps / cpr.min_cycles = 100); likewise a
``kind = "periodic"`` source over fewer than 3 cycles (darwin, T = 25, in 60 steps). A CSV source's
``true_period`` beyond the range is refused on load (scenarios/schema_checks.py
``_check_cpr``); the synthetic ``period`` is not. /tmp/P-synthetic-period.diff refuses it,
but ``bench fleet --steps 10 --reconstruct cpr`` builds such a scenario (periods 12-48 in
10 steps; tests/unit/test_bench_fleet_keys_documented.py fails with it), so a warning may
suit better: the lead decides.

    python scripts/P_synthetic_period_unclaimable.py
"""

import tempfile

import ldpfleet


def main() -> None:
    for steps in (60, 75):  # kind = "periodic": darwin's cycle is 25 steps, 3 cycles = 75
        scenario = ldpfleet.parse_scenario(
            {
                "scenario": {"name": "p-unclaimable", "seed": 11},
                "fleet": {"devices": 4},
                "stream": {"steps": steps, "eps": 10.0, "w": 2, "reconstruct": "cpr"},
                "source": {"kind": "periodic", "dataset": "darwin"},
            }
        )
        with tempfile.TemporaryDirectory() as out:
            results = ldpfleet.run(scenario, broker="memory", out_dir=out)
        found = [d["period_hat"] for d in results["per_device"].values()]
        print(
            f"periodic darwin (T = 25), {steps} steps: found {found}, period_accuracy "
            f"{results['reconstruction']['period_accuracy']}, warnings {results['warnings']}"
        )
    for period in (2, 100, 101):
        scenario = ldpfleet.parse_scenario(
            {
                "scenario": {"name": "p-unclaimable", "seed": 5},
                "fleet": {"devices": 4},
                "stream": {"steps": 300, "eps": 20.0, "w": 2, "reconstruct": "cpr"},
                "source": {"kind": "synthetic", "period": period, "bounds": [-1.0, 1.0]},
            }
        )
        with tempfile.TemporaryDirectory() as out:
            results = ldpfleet.run(scenario, broker="memory", out_dir=out)
        found = [d["period_hat"] for d in results["per_device"].values()]
        print(
            f"period {period}: found {found}, period_accuracy "
            f"{results['reconstruction']['period_accuracy']}, warnings {results['warnings']}"
        )


if __name__ == "__main__":
    main()
