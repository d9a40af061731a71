"""The DP θ search's share cost per device in CPU time (helper I, claims check of row D1).

``python -m ldpfleet.app.bench_cadr_noise`` times with ``perf_counter`` (wall time), which a
shared machine inflates; this runs the same bench with ``time.process_time`` instead and
prints one line per cell: devices, ε, ε_θ, entries, exact and numpy ms per device (CPU).

Usage: ``python scripts/I_noise_cpu.py [DRAWS]`` (default 200).
"""

from __future__ import annotations

import sys
import time

from ldpfleet.app import bench_cadr_noise as bench


def _per_call_cpu(function, draws: int) -> float:
    """Mean CPU seconds of one call of ``function`` over ``draws`` calls."""
    started = time.process_time()
    for _ in range(draws):
        function()
    return (time.process_time() - started) / draws


def main() -> None:
    """Print the bench's rows with CPU time per device."""
    draws = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    bench._per_call = _per_call_cpu
    for row in bench.bench_cadr_noise(draws=draws)["rows"]:
        print(
            f"n {row['devices']} eps {row['eps']} eps_theta {row['eps_theta']:.3f} "
            f"entries {row['entries']} exact {row['exact_ms_per_device']:.3f} ms "
            f"numpy {row['numpy_float_ms_per_device']:.4f} ms (CPU per device)"
        )


if __name__ == "__main__":
    main()
