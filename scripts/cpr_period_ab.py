"""Old against new ``detect_period`` on the same streams (issue 19 measurements).

``OLD`` is a copy of an earlier ``collector/period.py`` (e.g. ``git show
6cedd9b:collector/period.py > /tmp/period_old.py``); "new" is the installed package. From
the split into ``collector/period_*.py`` (helper K5) on, OLD is a directory holding the
revision's ``period.py`` and ``period_*.py``::

    mkdir /tmp/period_old && for f in $(git ls-tree --name-only REV collector/ | grep /period);
    do git show REV:$f > /tmp/period_old/${f#collector/}; done

(a lone copy of a split ``period.py`` refuses to load: it would run the new modules).

- ``grid OLD [CACHE.json]``: the period grid's streams as ``app/bench_cpr._grid_cell``
  builds them (seed 0): every cell x trials 0-2, and the (12, 30), (25, 12), (50, 3),
  (144, 12) cells x trials 0-9 (5,060 streams). Prints the exact answers old / new, the
  changed answers, the cells with fewer exact answers, and the cells newly below a
  baseline (paired sign test p < 0.05). CACHE keeps the old answers and the baselines
  (about 10 min here the first time, 20 s after).
- ``speed OLD [CALLS]``: CPU per call on the grid's 10,000-report speed stream (Darwin
  T = 25, eps0 = 1, seed 0), old and new alternating in one process.

Run: ``python scripts/cpr_period_ab.py grid /tmp/period_old.py /tmp/grid_cache.json``.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
from ldpfleet.app.bench_cpr import (
    autocorrelation_period,
    folded_variance_period,
    grid_cells,
    grid_stream,
    grid_template,
    sign_test_p,
    trial_rng,
)
from ldpfleet.collector.period import detect_period
from ldpfleet.protocol.sw import SquareWave

EXTRA = {(12, 30), (25, 12), (50, 3), (144, 12)}


OLD_PACKAGE = "period_old_split"  # the package an OLD directory's modules are loaded as


class _OldSplitLoader(importlib.abc.Loader):
    """Executes one module of an OLD directory with its imports of
    ``ldpfleet.collector.period*`` redirected to ``OLD_PACKAGE``."""

    def __init__(self, path: str) -> None:
        self.path = path

    def create_module(self, spec):
        return None

    def exec_module(self, module) -> None:
        source = Path(self.path).read_text()
        source = source.replace("ldpfleet.collector.period", f"{OLD_PACKAGE}.period")
        source = source.replace(
            "from ldpfleet.collector import period", f"from {OLD_PACKAGE} import period"
        )
        exec(compile(source, self.path, "exec"), module.__dict__)


class _OldSplitFinder(importlib.abc.MetaPathFinder):
    """Finds ``OLD_PACKAGE.NAME`` as ``DIRECTORY/NAME.py``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def find_spec(self, fullname, path=None, target=None):
        if not fullname.startswith(OLD_PACKAGE + "."):
            return None
        file = str(self.directory / (fullname.rsplit(".", 1)[1] + ".py"))
        return importlib.util.spec_from_file_location(fullname, file, loader=_OldSplitLoader(file))


def _load_old_split(directory: Path):
    """``period`` of an OLD directory (a split revision's ``period.py`` and ``period_*.py``)."""
    package = type(sys)(OLD_PACKAGE)
    package.__path__ = []
    sys.modules[OLD_PACKAGE] = package
    sys.meta_path.insert(0, _OldSplitFinder(directory))
    return importlib.import_module(f"{OLD_PACKAGE}.period")


def load_old(path: str):
    """The module at ``path`` (a copy of an earlier collector/period.py), or ``period`` of
    the directory ``path`` (a split revision's ``period.py`` and ``period_*.py``)."""
    if Path(path).is_dir():
        return _load_old_split(Path(path))
    spec = importlib.util.spec_from_file_location("period_old", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["period_old"] = module
    spec.loader.exec_module(module)
    return module


def _below(rows: list[dict], key: str) -> bool:
    for base in ("fv", "ac"):
        base_only = sum(r[base] == r["T"] and r[key] != r["T"] for r in rows)
        ours_only = sum(r[key] == r["T"] and r[base] != r["T"] for r in rows)
        if sign_test_p(base_only, ours_only) < 0.05:
            return True
    return False


def grid(old, cache_path: str | None) -> None:
    cache = (
        json.loads(Path(cache_path).read_text())
        if cache_path and os.path.exists(cache_path)
        else {}
    )
    cells: dict[str, list[dict]] = {}
    for source, period, cycles, eps0, jitter, drift in grid_cells(None, None, None):
        tag = f"{source}/{period}/{cycles}/{eps0}/{jitter}/{drift}"
        for trial in range(10 if (period, cycles) in EXTRA else 3):
            rng = trial_rng(0, "grid", trial, tag)
            clean = grid_stream(
                grid_template(source, period, rng), period * cycles, rng, jitter, drift
            )
            reports = SquareWave(eps0).perturb(clean, rng)
            key = f"{tag}/{trial}"
            if key not in cache:
                cache[key] = {
                    "old": old.detect_period(reports).period,
                    "fv": folded_variance_period(reports),
                    "ac": autocorrelation_period(reports),
                }
            row = {**cache[key], "new": detect_period(reports).period, "T": period, "key": key}
            cells.setdefault(tag, []).append(row)
    if cache_path:
        Path(cache_path).write_text(json.dumps(cache))
    rows = [r for c in cells.values() for r in c]
    changed = [(r["key"], r["old"], r["new"]) for r in rows if r["old"] != r["new"]]
    exact = {k: sum(r[k] == r["T"] for r in rows) for k in ("old", "new")}
    worse = [
        t
        for t, c in cells.items()
        if sum(r["new"] == r["T"] for r in c) < sum(r["old"] == r["T"] for r in c)
    ]
    newly = [t for t, c in cells.items() if _below(c, "new") and not _below(c, "old")]
    print(f"streams {len(rows)}, cells {len(cells)}; exact old {exact['old']}, new {exact['new']}")
    print(f"changed answers {len(changed)}: {changed[:40]}")
    print(f"cells with fewer exact answers {len(worse)}: {worse[:40]}")
    print(f"cells newly below a baseline {len(newly)}: {newly}")


def speed(old, calls: int) -> None:
    rng = np.random.default_rng(0)
    reports = SquareWave(1.0).perturb(
        grid_stream(grid_template("darwin", 25, rng), 10_000, rng), rng
    )
    assert old.detect_period(reports).period == detect_period(reports).period
    times: dict[str, list[float]] = {"old": [], "new": []}
    pair = (("old", old.detect_period), ("new", detect_period))
    for i in range(calls):
        for name, fn in pair if i % 2 == 0 else pair[::-1]:
            started = time.process_time()
            fn(reports)
            times[name].append(time.process_time() - started)
    for name, values in times.items():
        print(
            f"{name}: median {1000 * np.median(values):.2f} ms CPU, max {1000 * max(values):.2f} ms"
        )


if __name__ == "__main__":
    command, old_path, *rest = sys.argv[1:]
    module = load_old(old_path)
    if command == "grid":
        grid(module, rest[0] if rest else None)
    else:
        speed(module, int(rest[0]) if rest else 60)
