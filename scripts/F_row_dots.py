"""Helper F (issue 19, C8): ``period_whiten._row_dots(u, v, out)`` against
``_row_sums(np.multiply(u, v, out=out))``, and ``_by_row(ufunc, x, v, out)`` against
``ufunc(x, v[:, None])`` (multiply, add), bit for bit, on random Fortran-ordered arrays of
the Whittle fits' shapes (19 rows, 8 .. 50,000 columns; also 2-5 rows) whose values span
many binades, and on the fallbacks (one row, C order). Exit status 1 if any value differs.

Run: ``nice -n 5 python scripts/F_row_dots.py``.
"""

from __future__ import annotations

import sys

import numpy as np
from ldpfleet.collector.period_whiten import _by_row, _row_dots, _row_sums


def main() -> int:
    rng = np.random.default_rng(20261206)
    checked = differ = 0
    for cols in (8, 9, 12, 37, 333, 1000, 4950, 4999, 5001, 16_384, 50_000):
        for rows in (19, 2, 5, 1):
            for order in ("F", "C"):
                spread = np.exp(rng.normal(0, 8, (rows, cols)))
                u = np.asarray(rng.random((rows, cols)) ** 3 * spread, order=order)
                scale = 10.0 ** rng.integers(-3, 4)
                v = np.asarray(rng.exponential(size=(rows, cols)) * scale, order=order)
                old = _row_sums(np.multiply(u, v, out=np.empty((rows, cols), order=order)))
                new = _row_dots(u, v, np.empty((rows, cols), order=order))
                checked += 1
                if not np.array_equal(old.view(np.int64), new.view(np.int64)):
                    differ += 1
                    print("DIFFERENT", rows, cols, order, flush=True)
                row = v[:, 0] * 7.0
                for ufunc in (np.multiply, np.add):
                    old = ufunc(u, row[:, None], out=np.empty((rows, cols), order=order))
                    new = _by_row(ufunc, u, row, np.empty((rows, cols), order=order))
                    checked += 1
                    if not np.array_equal(old.view(np.int64), new.view(np.int64)):
                        differ += 1
                        print("DIFFERENT", ufunc.__name__, rows, cols, order, flush=True)
    print(f"cases {checked}, different {differ}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
