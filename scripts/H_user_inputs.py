"""What a user passes to ``detect_period``, ``cpr``, ``cpr_many`` and ``run_audit`` (helper H).

Every case prints one line: ``ok`` with the answer's essentials (``period`` and its type,
``json.dumps`` of the result's fields) or the exception's type, ``field``, ``limit`` and
``value``. A line starts with ``!!`` when the outcome is not a sensible answer nor a typed
``ParameterError`` with its ``field`` and ``limit`` (``value`` may be ``None``: the value
refused): an untyped exception (a numpy traceback for
the user), a ``period`` that is not ``int`` / ``None``, fields ``json.dumps`` cannot write.

    python scripts/H_user_inputs.py [GROUP ...]     # GROUP: period cpr audit speed

Run it from a user venv (a non-editable install) outside the worktree, e.g.
``cd /tmp && /work/venv-H-user/bin/python /work/wt/H/scripts/H_user_inputs.py``.
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time

import numpy as np

import ldpfleet

RNG = np.random.default_rng(5)
CYCLE = RNG.random(24)
SW = ldpfleet.SquareWave(2.0)
REPORTS = SW.perturb(np.tile(CYCLE, 30), np.random.default_rng(6))  # 720 reports, T = 24
PROBLEMS: list[str] = []


def describe(result: object) -> str:
    """The essentials of a result, with ``!!`` problems recorded."""
    notes = []
    if isinstance(result, list):
        return "[" + ", ".join(describe(r) for r in result) + "]"
    period = getattr(result, "period", None)
    if period is not None and type(period) is not int:
        notes.append(f"period type {type(period).__name__}")
    if isinstance(result, ldpfleet.PeriodEstimate | ldpfleet.CprResult):
        for f in dataclasses.fields(result):
            v = getattr(result, f.name)
            if isinstance(v, np.ndarray):
                continue
            try:
                json.dumps(v)
            except (TypeError, ValueError) as e:
                notes.append(f"json {f.name}: {e}")
            if isinstance(v, np.generic):
                notes.append(f"{f.name} is {type(v).__name__}")
    text = f"period={period!r}"
    for name in ("candidate", "confidence", "searched", "clamped"):
        if hasattr(result, name):
            text += f" {name}={getattr(result, name)!r}"
    if hasattr(result, "eps_lb"):
        text = f"eps_lb={result.eps_lb!r} verdict={result.verdict}"
    if notes:
        PROBLEMS.append("; ".join(notes))
        return "!! " + text + " [" + "; ".join(notes) + "]"
    return text


def case(label: str, call) -> None:
    """Run ``call`` and print its outcome."""
    try:
        result = call()
    except ldpfleet.ParameterError as e:
        missing = [a for a in ("field", "limit") if getattr(e, a, None) is None]
        mark = "!! " if missing else "   "
        if missing:
            PROBLEMS.append(f"{label}: ParameterError missing {missing}")
        print(
            f"{mark}{label:48s} ParameterError field={e.field!r} limit={e.limit!r} "
            f"value={str(e.value)[:40]!r} :: {str(e)[:110]}"
        )
        return
    except TypeError as e:
        if "positional argument" in str(e) or "keyword argument" in str(e):
            # Python's own refusal of a call that does not match the signature
            print(f"   {label:48s} signature TypeError: {e}")
            return
        PROBLEMS.append(f"{label}: untyped {type(e).__name__}")
        print(f"!! {label:48s} UNTYPED TypeError: {str(e)[:150]}")
        return
    except Exception as e:  # the point: classify everything
        PROBLEMS.append(f"{label}: untyped {type(e).__name__}")
        print(f"!! {label:48s} UNTYPED {type(e).__module__}.{type(e).__name__}: {str(e)[:150]}")
        return
    d = describe(result)
    print(f"{'' if d.startswith('!!') else '   '}{label:48s} {d}")


def period_group() -> None:
    r = REPORTS
    dp = ldpfleet.detect_period
    case("list", lambda: dp(list(r)))
    case("tuple", lambda: dp(tuple(r)))
    case("generator", lambda: dp(v for v in r))
    case("range", lambda: dp(range(100)))
    case("int array", lambda: dp((r * 1000).astype(np.int64)))
    case("float32", lambda: dp(r.astype(np.float32)))
    case("bool array", lambda: dp(np.tile(CYCLE > 0.5, 30)))
    case("(n,1)", lambda: dp(r[:, None]))
    case("(1,n)", lambda: dp(r[None, :]))
    case("masked, no mask", lambda: dp(np.ma.masked_array(r)))
    case("masked, one masked", lambda: dp(np.ma.masked_array(r, mask=r > 1.2)))
    case("masked, mask=False", lambda: dp(np.ma.masked_array(r, mask=False)))
    case("NaN inside", lambda: dp(np.where(np.arange(r.size) == 7, np.nan, r)))
    case("inf inside", lambda: dp(np.where(np.arange(r.size) == 7, np.inf, r)))
    case("empty list", lambda: dp([]))
    case("empty array", lambda: dp(np.array([])))
    case("one element", lambda: dp([0.3]))
    case("constant", lambda: dp(np.full(720, 0.4)))
    case("constant int", lambda: dp([3] * 720))
    case("out of SW range (x100)", lambda: dp(r * 100 - 50))
    case("alpha=np.float32", lambda: dp(r, alpha=np.float32(0.01)))
    case("alpha=0", lambda: dp(r, alpha=0))
    case("alpha='0.01'", lambda: dp(r, alpha="0.01"))
    case("min_period=np.int64(3)", lambda: dp(r, min_period=np.int64(3)))
    case("max_period=np.int64(100)", lambda: dp(r, max_period=np.int64(100)))
    case("max_period=100.0", lambda: dp(r, max_period=100.0))
    case("max_period > n", lambda: dp(r, max_period=10_000))
    case("max_period < min_period", lambda: dp(r, min_period=30, max_period=20))
    case("min_cycles=1", lambda: dp(r, min_cycles=1))
    case("top_peaks=0", lambda: dp(r, top_peaks=0))
    case("positional min_period", lambda: dp(r, 3))
    case("dict", lambda: dp({"a": 1}))
    case("set", lambda: dp({1.0, 2.0, 3.0}))
    case("object array", lambda: dp(np.array(list(r), dtype=object)))
    case("object array with None", lambda: dp(np.array([*list(r[:50]), None], dtype=object)))
    case("list with None", lambda: dp([*list(r[:50]), None]))
    case("decimal list", lambda: dp([__import__("decimal").Decimal("0.5")] * 30))
    case("fractions", lambda: dp([__import__("fractions").Fraction(1, 3)] * 30))
    case("uint8 wrap", lambda: dp(np.tile(np.arange(24, dtype=np.uint8), 30)))
    case("float16", lambda: dp(r.astype(np.float16)))
    case("longdouble", lambda: dp(r.astype(np.longdouble)))
    case("huge 1e308", lambda: dp(r * 1e307))
    case("tiny 1e-310", lambda: dp(r * 1e-310))
    case("memmap-like view", lambda: dp(r[::2]))
    case("noise n=9", lambda: dp(r[:9]))
    case("noise n=8", lambda: dp(r[:8]))
    case("Python ints mixed with floats", lambda: dp([1, 2.5, 3] * 20))
    case("np.matrix", lambda: dp(np.matrix(r)))
    case("0-d array", lambda: dp(np.array(0.5)))
    case("numpy scalar", lambda: dp(np.float64(0.5)))
    case("pandas-like (__array__ obj)", lambda: dp(_ArrayLike(r)))


class _ArrayLike:
    """Something with ``__array__`` and ``__len__`` only, as a pandas Series or an xarray is."""

    def __init__(self, a):
        self.a = a

    def __array__(self, dtype=None, copy=None):
        return self.a if dtype is None else self.a.astype(dtype)

    def __len__(self):
        return len(self.a)


def cpr_group() -> None:
    r = REPORTS
    cpr = ldpfleet.cpr
    case("cpr list", lambda: cpr(list(r), SW))
    case("cpr float32", lambda: cpr(r.astype(np.float32), SW))
    case("cpr (n,1)", lambda: cpr(r[:, None], SW))
    case("cpr empty", lambda: cpr([], SW))
    case("cpr one", lambda: cpr([0.5], SW))
    case("cpr two", lambda: cpr([0.5, 0.6], SW))
    case("cpr constant", lambda: cpr(np.full(300, 0.5), SW))
    case("cpr out of range", lambda: cpr(r + 5, SW))
    case("cpr NaN", lambda: cpr(np.where(np.arange(r.size) == 3, np.nan, r), SW))
    case("cpr generator", lambda: cpr((v for v in r), SW))
    case("cpr mechanism=None", lambda: cpr(r, None))
    case("cpr mechanism=class", lambda: cpr(r, ldpfleet.SquareWave))
    case("cpr mechanism=Laplace", lambda: cpr(r, ldpfleet.LaplaceMechanism(2.0)))
    case("cpr mechanism='sw'", lambda: cpr(r, "sw"))
    case("cpr wrong eps (SW(0.5))", lambda: cpr(r, ldpfleet.SquareWave(0.5)))
    case("cpr config dict", lambda: cpr(r, SW, {"period": 24}))
    case("cpr period=24", lambda: cpr(r, SW, ldpfleet.CprConfig(period=24)))
    case("cpr period=np.int64(24)", lambda: cpr(r, SW, ldpfleet.CprConfig(period=np.int64(24))))
    case("cpr period > n", lambda: cpr(r[:20], SW, ldpfleet.CprConfig(period=24)))
    case("cpr masked", lambda: cpr(np.ma.masked_array(r, mask=r > 1.2), SW))
    case("cpr bool", lambda: cpr(np.tile(CYCLE > 0.5, 30), SW))
    case("cpr max_period np.int64", lambda: cpr(r, SW, ldpfleet.CprConfig(max_period=np.int64(50))))
    case("cpr tol=nan", lambda: ldpfleet.CprConfig(tol=math.nan))
    case("cpr kde_grid=1", lambda: ldpfleet.CprConfig(kde_grid=1))
    case("cpr_many list", lambda: ldpfleet.cpr_many([r, r[:300]], SW))
    case("cpr_many 2-D", lambda: ldpfleet.cpr_many(np.stack([r, r]), SW))
    case("cpr_many one stream", lambda: ldpfleet.cpr_many(r, SW))
    case("cpr_many empty list", lambda: ldpfleet.cpr_many([], SW))
    case("cpr_many generator", lambda: ldpfleet.cpr_many((x for x in [r, r]), SW))
    case("cpr_many dict", lambda: ldpfleet.cpr_many({"a": r, "b": r}, SW))
    case("cpr_many with empty stream", lambda: ldpfleet.cpr_many([r, []], SW))
    case("cpr_many list of lists", lambda: ldpfleet.cpr_many([list(r)], SW))
    case("cpr_many None", lambda: ldpfleet.cpr_many(None, SW))
    case("cpr_many 3-D", lambda: ldpfleet.cpr_many(np.zeros((2, 3, 4)) + 0.5, SW))
    case("cpr_many one-stream tuple", lambda: ldpfleet.cpr_many(tuple(r), SW))
    case("cpr_many list of np.float64", lambda: ldpfleet.cpr_many([np.float64(0.5)] * 3, SW))
    for eps in (0, -1, math.inf, math.nan, "2", np.float32(2.0), np.int64(2), True, 1e-13, 51):
        case(f"SquareWave({eps!r})", lambda eps=eps: ldpfleet.SquareWave(eps))
    case("cpr SW(np.float32(2))", lambda: cpr(r, ldpfleet.SquareWave(np.float32(2.0))))
    case("cpr SW variant sw-hybrid?", lambda: ldpfleet.SquareWave(2.0, variant="bogus"))


def audit_group() -> None:
    ra = ldpfleet.run_audit
    pm = ldpfleet.PiecewiseMechanism
    path = "ldpfleet.protocol.mechanisms:PiecewiseMechanism"
    case("audit class", lambda: ra(pm, 1.0, trials=2000))
    case("audit instance", lambda: ra(pm(1.0), 1.0, trials=2000))
    case("audit 'module:Class'", lambda: ra(path, 1.0, trials=2000))
    case("audit 'module.Class' (dot)", lambda: ra(path.replace(":", "."), 1.0, trials=2000))
    case("audit 'nosuchmod:X'", lambda: ra("nosuchmod:X", 1.0, trials=2000))
    case("audit 'ldpfleet:NoSuch'", lambda: ra("ldpfleet:NoSuch", 1.0, trials=2000))
    case("audit 'ldpfleet:__version__'", lambda: ra("ldpfleet:__version__", 1.0, trials=2000))
    case("audit 'math:sqrt'", lambda: ra("math:sqrt", 1.0, trials=2000))
    case("audit 'json:JSONDecoder'", lambda: ra("json:JSONDecoder", 1.0, trials=2000))
    case("audit unknown name", lambda: ra("pieceweise", 1.0, trials=2000))
    case("audit ''", lambda: ra("", 1.0, trials=2000))
    case("audit None", lambda: ra(None, 1.0, trials=2000))
    case("audit 5", lambda: ra(5, 1.0, trials=2000))
    case("audit function", lambda: ra(lambda eps: None, 1.0, trials=2000))
    case("audit int class", lambda: ra(int, 1.0, trials=2000))
    case("audit eps=-1", lambda: ra("laplace", -1, trials=2000))
    case("audit eps=inf", lambda: ra("laplace", math.inf, trials=2000))
    case("audit eps='1'", lambda: ra("laplace", "1", trials=2000))
    case("audit eps=np.float32(1)", lambda: ra("laplace", np.float32(1.0), trials=2000))
    case("audit eps=0", lambda: ra("laplace", 0, trials=2000))
    case("audit eps=True", lambda: ra("laplace", True, trials=2000))
    case("audit eps=100 (class limit 50)", lambda: ra(pm, 100.0, trials=2000))
    case("audit trials=1", lambda: ra("laplace", 1.0, trials=1))
    case("audit trials=2000.0", lambda: ra("laplace", 1.0, trials=2000.0))
    case("audit trials=np.int64", lambda: ra("laplace", 1.0, trials=np.int64(2000)))
    case("audit seed=np.int64", lambda: ra("laplace", 1.0, trials=2000, seed=np.int64(3)))
    case("audit gamma=0", lambda: ra("laplace", 1.0, trials=2000, gamma=0))
    case("audit delta=1", lambda: ra("laplace", 1.0, trials=2000, delta=1))
    case("audit positional trials", lambda: ra("laplace", 1.0, 0.0))
    case("audit missing eps", lambda: ra("laplace"))
    case("audit unknown kwarg", lambda: ra("laplace", 1.0, trails=2000))
    r = ra("laplace", 1.0, trials=2000)
    case("audit to_dict json", lambda: json.dumps(r.to_dict()) and "json ok")


def speed_group() -> None:
    rng = np.random.default_rng(11)
    for n in (10_000, 100_000, 1_000_000):
        x = SW.perturb(0.5 + 0.3 * np.sin(2 * np.pi * np.arange(n) / 48), rng)
        ldpfleet.detect_period(x[:10_000])
        t = time.process_time()
        est = ldpfleet.detect_period(x)
        print(f"   detect_period n={n:>9,} period={est.period} cpu={time.process_time() - t:.3f} s")
    x = SW.perturb(0.5 + 0.3 * np.sin(2 * np.pi * np.arange(10_000) / 48), rng)
    t = time.process_time()
    res = ldpfleet.cpr(x, SW)
    print(f"   cpr n=10,000 period={res.period} cpu={time.process_time() - t:.3f} s")


def main(groups: list[str]) -> int:
    for g in groups or ["period", "cpr", "audit", "speed"]:
        print(f"== {g}")
        {"period": period_group, "cpr": cpr_group, "audit": audit_group, "speed": speed_group}[g]()
    print(f"problems: {len(PROBLEMS)}")
    for p in PROBLEMS:
        print("  ", p)
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
