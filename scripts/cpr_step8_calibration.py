"""Step 8 of ``detect_period`` (the local claim route), calibration records and rule table.

Helper C's calibration of the stricter route (docs/cpr.md, "Step 8, stricter"): on every
stream where the gates of steps 4-6 abstain, record what step 8 looks at (the lag of
largest whitened autocorrelation, its exact and segment-wise log p-values, the penalty,
the threshold, every divisor's statistics and the "explained" tests) and the installed
route's answer; then evaluate rule variants offline on the records.

- ``record SET SEED TRIALS OUT.json``: SET is ``jumps`` (the phase-jump cells, trial seeds
  ``[SEED, cell, trial]``), ``aperiodic`` (white, trend, AR(1) 0.9 / 0.95 / 0.98 / 0.99,
  random walk x n = 96, 150, 300, 1,000 (TRIALS), 3,000 (TRIALS // 3) x eps0 = 1, 5),
  ``grid`` (the grid's cells), ``heldout`` (the held-out periodic shapes) or ``same`` (the
  3,540 streams of ``cpr_period_same.py``; SEED and TRIALS ignored). With the environment
  variable ``PERIOD_MODULE=path/to/period.py`` the records are of that module (e.g. the
  first route, ``git show 07bee68^:collector/period.py``).
- ``rules OUT.json ...``: claims right / wrong / on aperiodic streams of each rule variant.

Calibration run (seeds never used for evaluation): ``record jumps 901 10``, ``record
aperiodic 902 200``, ``record grid 903 2``, ``record heldout 904 4``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections import Counter

import numpy as np
from ldpfleet.app import bench_cpr as b
from ldpfleet.app import cpr_held_out_periodic as ho
from ldpfleet.app import cpr_phase_jumps as pj

if os.environ.get("PERIOD_MODULE"):
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    from cpr_period_ab import load_old

    P = load_old(os.environ["PERIOD_MODULE"])
else:
    from ldpfleet.collector import period as P
from ldpfleet.protocol.sw import SquareWave
from scipy import special

RECORDS: list[dict] = []
ORIGINAL = P._Search.local_claim


def divisors(value: int, low: int) -> list[int]:
    return [q for q in range(low, value) if value % q == 0]


def seg_power(xw, period, cycles=P.SEGMENT_CYCLES):
    """Per-harmonic segment-summed power over the within scale, and the segments count."""
    n = xw.size
    segments = n // (cycles * period)
    if segments < 2 or period < 3:
        return None, 0
    k = (n // segments) // period
    block = xw[: segments * k * period].reshape(segments, k, period)
    sums = block.sum(axis=1)
    spec = P.sp_fft.rfft(sums, axis=1)[:, 1 : (period - 1) // 2 + 1]
    power = np.sum(spec.real**2 + spec.imag**2, axis=0) / (k * period)
    within = float(np.sum(block * block)) - float(np.sum(sums * sums)) / k
    dof = segments * (k - 1) * period
    return power / (max(within, 1e-300) / dof), segments


def extra_logp(power, m, shape_per=1.0):
    """Smallest log p (levels, Bonferroni) of the harmonics j, m not dividing j."""
    limit = power.size
    if limit == 0:
        return 0.0
    extra = power.copy()
    extra[m - 1 :: m] = 0.0
    mask = np.ones(limit)
    mask[m - 1 :: m] = 0.0
    total, dof = np.cumsum(extra), np.cumsum(mask)
    levels = sorted({h for h in P.HARMONIC_LEVELS if h < limit} | {limit})
    ix = np.array(levels) - 1
    ok = dof[ix] > 0
    if not ok.any():
        return 0.0
    logp = P._log_sf(total[ix][ok], shape_per * dof[ix][ok])
    return float(np.min(logp) + np.log(ok.sum()))


def recording(self):
    n = self.n
    rho = P._overlap_rho(self.autocorr, np.arange(self.max_period + 1))
    lag = self.min_period + int(np.argmax(rho[self.min_period :]))
    ex, h = self.exact_logp(lag)
    seg = P.segment_logp(self.xw, lag)
    z = float(-special.ndtri(P.LOCAL_TAIL / max(1, self.max_period - self.min_period + 1)))
    share = min(1.0, max(0.0, 1.0 - float(rho[lag])))
    margin = P._rename_margin(z, n - lag, share)
    pw_exact = self.power(lag) / P._within_scale(self.xw, self.t, lag)
    pw_seg, segs = seg_power(self.xw, lag)
    divs = []
    for q in divisors(lag, self.min_period):
        exq, _ = self.exact_logp(q)
        m = lag // q
        divs.append(
            {
                "q": q,
                "rho": float(rho[q]),
                "ex": exq,
                "seg": P.segment_logp(self.xw, q),
                "pen": P.few_cycles_penalty(n / q),
                "extra_ex": extra_logp(pw_exact, m),
                "extra_seg": extra_logp(pw_seg, m, segs) if pw_seg is not None else 0.0,
            }
        )
    result = ORIGINAL(self)
    rec = {
        "n": n,
        "minp": self.min_period,
        "maxp": self.max_period,
        "thr": self.threshold,
        "tests": self.tests,
        "L": lag,
        "rhoL": float(rho[lag]),
        "ex": ex,
        "h": h,
        "seg": seg,
        "pen": P.few_cycles_penalty(n / lag),
        "margin": margin,
        "masked": P.masked_logp(self.xd, lag),
        "neigh": P.neighbour_logp(self.xw, lag),
        "divs": divs,
        "k8": None if result is None else result.period,
    }
    RECORDS.append(rec)
    return result


P._Search.local_claim = recording


def jump_streams(seed, trials):
    for i, (kind, period, cycles, eps0, jumps) in enumerate(pj.cells()):
        for trial in range(trials):
            rng = np.random.default_rng([seed, i, trial])
            clean = pj.jump_stream(b.grid_template(kind, period, rng), period * cycles, jumps, rng)
            yield (
                f"j/{kind}/{period}/{cycles}/{eps0}/{jumps}/{trial}",
                period,
                SquareWave(eps0).perturb(clean, rng),
            )


APER = [
    (k, n, e)
    for k in ("white", "trend", "ar1_0.9", "ar1", "ar1_0.98", "ar1_slow", "random_walk")
    for n in (96, 150, 300, 1000, 3000)
    for e in (1.0, 5.0)
]


def aperiodic_streams(seed, trials):
    for kind, n, eps0 in APER:
        for trial in range(trials if n < 3000 else max(1, trials // 3)):
            rng = b.trial_rng(seed, "aperiodic", trial, f"{kind}/{n}/{eps0}")
            y = SquareWave(eps0).perturb(b.aperiodic_stream(kind, n, rng), rng)
            yield f"a/{kind}/{n}/{eps0}/{trial}", None, y


def grid_streams(seed, trials):
    for source, period, cycles, eps0, jitter, drift in b.grid_cells(None, None, None):
        tag = f"{source}/{period}/{cycles}/{eps0}/{jitter}/{drift}"
        for trial in range(trials):
            rng = b.trial_rng(seed, "grid", trial, tag)
            clean = b.grid_stream(
                b.grid_template(source, period, rng), period * cycles, rng, jitter, drift
            )
            yield f"g/{tag}/{trial}", period, SquareWave(eps0).perturb(clean, rng)


def heldout_streams(seed, trials):
    for i, kind in enumerate(ho.SHAPES):
        for j, (period, cycles) in enumerate(ho.PERIOD_CYCLES):
            for eps0 in ho.EPS0:
                for trial in range(trials):
                    rng = np.random.default_rng([seed, i, j, int(eps0 * 10), trial])
                    cycle = ho.held_out_shape(kind, period, rng)
                    clean = b.grid_stream(cycle, period * cycles, rng, ho.JITTER)
                    y = SquareWave(eps0).perturb(clean, rng)
                    yield f"h/{kind}/{period}/{cycles}/{eps0}/{trial}", period, y


def same_streams(seed, trials):
    sys.path.insert(0, __file__.rsplit("/", 1)[0])
    import cpr_period_same as same

    cells = pj.cells()
    for key, y in same.streams():
        truth = None
        if key.startswith("g"):
            truth = int(key.split("/")[2])
        elif key.startswith("j/"):
            truth = cells[int(key.split("/")[1])][1]
        elif key in ("e/sine", "e/sine365", "e/square7", "e/sine97"):
            truth = {"e/sine": 37, "e/sine365": 365, "e/square7": 7, "e/sine97": 97}[key]
        yield key, truth, y


SETS = {
    "same": same_streams,
    "jumps": jump_streams,
    "aperiodic": aperiodic_streams,
    "grid": grid_streams,
    "heldout": heldout_streams,
}


ALPHA_SHAPE = P.ALPHA_SHAPE


prime_factors = P._prime_factors  # the detector's own (duplicates D2)


def combined(ex, seg, how):
    if how == "min2":
        return min(ex, seg) + math.log(2.0)
    if how == "max":
        return max(ex, seg)
    if how == "ex":
        return ex
    if how == "seg":
        return seg
    raise ValueError(how)


def gate(r, how, extra=0.0, masked=False, many=0.0):
    value = combined(r["ex"], r["seg"], how)
    cycles = r["n"] / r["L"]
    thr = r["thr"] - extra - (many if cycles >= 12 else 0.0)
    ok = value - r["pen"] < thr
    if ok and masked and cycles < 12:
        ok = r["masked"] - r["pen"] < r["thr"]
    return ok


def k8_divisor(r):
    divs = {d["q"]: d for d in r["divs"]}
    lag = r["L"]
    rho = {r["L"]: r["rhoL"], **{q: d["rho"] for q, d in divs.items()}}
    moved = True
    while moved:
        moved = False
        for p in prime_factors(lag):
            small = lag // p
            d = divs.get(small)
            if d is None:
                continue
            if (
                rho[lag] - rho[small] <= r["margin"]
                and min(d["ex"], d["seg"]) - d["pen"] < r["thr"]
            ):
                lag, moved = small, True
                break
    return lag


def strict_divisor(r, how, level=ALPHA_SHAPE, use="ex", margin=True):
    """Smallest divisor q of L that passes L's gate statistic and whose extra harmonics
    (L's harmonics off the multiples of L/q) are not significant."""
    best = r["L"]
    for d in sorted(r["divs"], key=lambda d: d["q"]):
        if margin and r["rhoL"] - d["rho"] > r["margin"]:
            continue
        value = combined(d["ex"], d["seg"], how)
        if not value - d["pen"] < r["thr"]:
            continue
        if use == "ex":
            extra = d["extra_ex"]
        elif use == "both":
            extra = min(d["extra_ex"], d["extra_seg"]) + math.log(2)
        else:
            extra = d["extra_seg"]
        if extra < math.log(level):
            continue
        best = d["q"]
        break
    return best


def answer(r, rule):
    if not gate(
        r,
        rule.get("how", "min2"),
        rule.get("extra", 0.0),
        rule.get("masked", False),
        rule.get("many", 0.0),
    ):
        return None
    div = rule.get("div", "k8")
    if div == "k8":
        return k8_divisor(r)
    if div == "none":
        return r["L"]
    return strict_divisor(
        r,
        rule.get("dhow", rule.get("how", "min2")),
        rule.get("level", ALPHA_SHAPE),
        rule.get("use", "ex"),
        rule.get("dmargin", True),
    )


def summary(data, rule):
    rows = data["rows"]
    c = Counter()
    for r in rows:
        a = answer(r, rule)
        if a is None:
            continue
        t = r["truth"]
        if t is None:
            c["false"] += 1
        elif a == t:
            c["right"] += 1
        else:
            c["wrong"] += 1
    return c


STRICT = {"div": "strict", "use": "both"}
RULES = {  # "K": the first route (6de835a); "stricter": the route of 07bee68
    "K": {"how": "min2", "div": "k8"},
    "seg 1, 1": {"how": "seg", **STRICT},
    "seg 2, 1": {"how": "seg", **STRICT, "extra": math.log(2)},
    "stricter": {"how": "seg", **STRICT, "extra": math.log(2), "many": math.log(10)},
    "seg 4, 10": {"how": "seg", **STRICT, "extra": math.log(4), "many": math.log(10)},
    "min2 1, 10": {"how": "min2", **STRICT, "many": math.log(10)},
    "both tests": {"how": "max", **STRICT},
    "seg + masked": {"how": "seg", **STRICT, "masked": True},
}


def record(name: str, seed: int, trials: int, out: str) -> None:
    """Run ``detect_period`` on SET's streams; write the step-8 records of the abstentions."""
    started = time.time()
    total, rows = 0, []
    for key, truth, y in SETS[name](seed, trials):
        total += 1
        before = len(RECORDS)
        P.detect_period(y)
        if len(RECORDS) > before:
            RECORDS[-1].update({"key": key, "truth": truth})
            rows.append(RECORDS[-1])
    with open(out, "w") as fh:
        json.dump({"total": total, "rows": rows}, fh)
    print(name, seed, "streams", total, "abstained", len(rows), f"{time.time() - started:.0f}s")


if __name__ == "__main__":
    if sys.argv[1] == "record":
        record(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
    else:
        for path in sys.argv[2:]:
            with open(path) as handle:
                data = json.load(handle)
            print(path, "streams", data["total"], "abstained", len(data["rows"]))
            for name, rule in RULES.items():
                c = summary(data, rule)
                print(f"  {name:14s} right {c['right']} wrong {c['wrong']} aperiodic {c['false']}")
