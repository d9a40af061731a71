"""How draw-sensitive is ``bench gcdp``'s τ, and does its mean ± sd say so? (helper F,
docs/preregistration/F-tau-spread.md, committed before this ran.)

For seeds 0..19 (10 draws each, the documented command's), on the shipped training file
and each shipped test file (datatest, datatest2): the τ ``select_tau`` chooses and every
τ's validation F1 per draw; GC-DP's test F1 per draw at ε = 0.2, 1, 4 under every τ of the
grid (the printed cell is the chosen τ's); Lap-DP at the same draws as the control. The
draws are the bench's own (``_draw``, generator keys (seed, eps, k[, 2])), so the seed-S
row of a cell is what ``ldpfleet bench gcdp --draws 10 --seed S`` prints.

    python scripts/F_tau.py [--seeds 20] [--draws 10] [--out /tmp/F/tau.json]

Prints the summary tables (markdown) and writes every figure as JSON.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
from ldpfleet.app import bench_gcdp as b
from ldpfleet.app.gcdp_datasets import prepare
from ldpfleet.collector.gcdp.constants import TAU_GRID
from scipy import stats

EPS = (0.2, 1.0, 4.0)
DATA = Path(b.DATA_DIR)
FILES = ("datatest.txt", "datatest2.txt")
F_LEVEL = 1e-3  # the pre-registered level of the F test


def per_draw(method, prep, feats, labels, cal, eps, draws, seed, stream) -> np.ndarray:
    """The task F1 of each of ``draws`` releases (the bench's ``_draw``, same keys)."""
    return np.array(
        [
            b._draw(method, prep, feats, labels, cal, eps, (seed, k, stream), None)[0]
            for k in range(draws)
        ]
    )


def validation(prep, seeds, draws) -> dict:
    """Per seed: every τ's validation F1 per draw (ε = 1, stream 2; the bench's
    ``tau_validation_draws``), the chosen τ (checked against ``select_tau``) and the
    bench's ``tau_margin`` (the runner-up among the τ whose draws differ, the paired
    standard error)."""
    out = {}
    for seed in seeds:
        rows = b.tau_validation_draws(prep, draws, seed)
        chosen, means = b.chosen_tau(rows)
        assert chosen == b.select_tau(prep, draws, seed)[0], seed
        out[seed] = {
            "tau": chosen,
            "means": means,
            "sds": {tau: float(r.std()) for tau, r in rows.items()},
            **b.tau_margin(rows, chosen),
        }
    return out


def test_cells(prep, seeds, draws, taus) -> dict:
    """Per ε: GC-DP's test F1 per draw under every τ and Lap-DP's, per seed."""
    cals = {tau: b._calibrate_prepared(prep, tau) for tau in TAU_GRID}
    lap = {"bounds": prep.bounds, "gau_l2": prep.gau_l2, "gau_changed": prep.gau_changed,
           "readings": prep.readings}  # fmt: skip
    out = {}
    for eps in EPS:
        cell = {"gcdp": {}, "lap": {}}
        for seed in seeds:
            cell["gcdp"][seed] = {
                tau: per_draw(
                    "GC-DP", prep, prep.test_f, prep.test_l, cals[tau], eps, draws, seed, 0
                )
                for tau in TAU_GRID
            }
            cell["lap"][seed] = per_draw("Lap-DP", prep, prep.test_f, prep.test_l, lap, eps,
                                         draws, seed, 0)  # fmt: skip
        out[eps] = cell
    return out


def f_ratio(rows: list[np.ndarray]) -> tuple[float, float, float, float]:
    """(sd over seeds of the printed mean, mean printed f1_std (ddof 0), the standard error
    the printed figures imply (pooled within-run sd with ddof 1 / sqrt(draws)), F ratio of
    the between-seed variance of the means to the pooled within-run variance / draws)."""
    draws = rows[0].size
    means = np.array([r.mean() for r in rows])
    within = float(np.mean([r.var(ddof=1) for r in rows]))
    implied_se = np.sqrt(within / draws)
    ratio = float(means.var(ddof=1) / (within / draws)) if within > 0 else float("inf")
    return float(means.std(ddof=1)), float(np.mean([r.std() for r in rows])), implied_se, ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--draws", type=int, default=10)
    parser.add_argument("--out", default="/tmp/F/tau.json")
    args = parser.parse_args()
    seeds = list(range(args.seeds))
    draws = args.draws
    critical = float(stats.f.isf(F_LEVEL, len(seeds) - 1, len(seeds) * (draws - 1)))
    start = time.process_time()
    report: dict = {"seeds": seeds, "draws": draws, "f_critical": critical, "files": {}}
    val = None
    for name in FILES:
        prep = prepare("occupancy", window=b.WINDOW, test_file=DATA / name)
        if val is None:  # tau is chosen on the training file: the same for both test files
            val = validation(prep, seeds, draws)
            report["validation"] = {str(s): v for s, v in val.items()}
        taus = {s: val[s]["tau"] for s in seeds}
        cells = test_cells(prep, seeds, draws, taus)
        summary = {}
        for eps, cell in cells.items():
            printed = [cell["gcdp"][s][taus[s]] for s in seeds]
            by_tau = {
                tau: float(np.mean([cell["gcdp"][s][tau].mean() for s in seeds]))
                for tau in TAU_GRID
            }
            fixed = {tau: f_ratio([cell["gcdp"][s][tau] for s in seeds]) for tau in TAU_GRID}
            summary[str(eps)] = {
                "gcdp_printed": f_ratio(printed),
                "gcdp_printed_range": [
                    float(min(r.mean() for r in printed)),
                    float(max(r.mean() for r in printed)),
                ],
                "gcdp_by_tau_mean": by_tau,
                "gcdp_fixed_tau": fixed,
                "lap": f_ratio([cell["lap"][s] for s in seeds]),
            }
        report["files"][name] = summary
    report["cpu_s"] = round(time.process_time() - start, 1)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    _print(report)


def _print(report: dict) -> None:
    val = report["validation"]
    taus = [v["tau"] for v in val.values()]
    print(f"seeds {report['seeds'][0]}..{report['seeds'][-1]}, draws {report['draws']}, "
          f"F critical (1e-3) {report['f_critical']:.2f}, CPU {report['cpu_s']} s\n")  # fmt: skip
    print("chosen tau: " + ", ".join(f"{t:.2f} x{taus.count(t)}" for t in TAU_GRID))
    print("| seed | tau | runner-up | margin (F1 pts) | paired se | margin / se |")
    print("|---|---|---|---|---|---|")
    for s, v in val.items():
        diff, se = v["f1_difference"], v["standard_error"]
        ratio = diff / se if se else float("inf")
        print(f"| {s} | {v['tau']:.2f} (= {v['same_draws']}) | {v['runner_up']:.2f} | "
              f"{diff:.2f} | {se:.2f} | {ratio:.2f} |")  # fmt: skip
    within = sum(v["note"] is not None for v in val.values())
    print(f"\nchoices within two standard errors (tau_margin.note): {within} of {len(val)}\n")
    print(
        "| file | eps | GC-DP printed mean: range over seeds | sd over seeds | mean f1_std "
        "| implied se | F | Lap-DP F | GC-DP test mean by tau 0.10/0.15/0.20/0.25/0.30 |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, summary in report["files"].items():
        for eps, s in summary.items():
            sd, std, se, ratio = s["gcdp_printed"]
            lo, hi = s["gcdp_printed_range"]
            by_tau = " / ".join(f"{v:.1f}" for v in s["gcdp_by_tau_mean"].values())
            print(f"| {name} | {eps} | {lo:.1f} - {hi:.1f} | {sd:.2f} | {std:.2f} | {se:.2f} "
                  f"| {ratio:.2f} | {s['lap'][3]:.2f} | {by_tau} |")  # fmt: skip


if __name__ == "__main__":
    main()
