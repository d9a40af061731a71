"""Same-draws digest of the ``audit all`` battery (helper A, claim A6): one hash per entry
that changes if any random draw or any output of the entry's audits changes.

For every battery entry (``fleet-stream`` included) at every budget ``audit all`` audits it
at (``app.audit_cli.audit_tasks``; the dropout canary at eps 2 only):

1. the canary's raw samples: ``sample_d`` and ``sample_dprime`` (or ``sample_at(x)`` at
   every grid input of a pair search) drawn with ``--runs`` runs from a fixed generator,
   hashed with the generator's state after the draw (so an extra or a missing draw shows);
2. the whole audit row at ``--trials`` runs per world (``audit_cli._one_audit``: eps_lb,
   counts, thresholds, witness, verdict, every field but ``cpu_seconds``).

Usage: ``python scripts/A_audit_digest.py [--only NAME]... [--trials 200] [--runs 24]``
prints one line per entry (``NAME digest cpu``) and the digest of all lines; ``--out FILE``
writes them as JSON, ``--check FILE`` compares with such a file (exit status 1 if any entry
differs). Speed-ups must leave every digest unchanged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time

import numpy as np


def _feed(h, obj) -> None:
    """Hash ``obj`` exactly: arrays by dtype, shape and bytes; containers element-wise."""
    if isinstance(obj, np.ndarray):
        h.update(f"nd{obj.dtype.str}{obj.shape}".encode())
        if obj.dtype == object:
            for item in obj.ravel():
                _feed(h, item)
        else:
            h.update(np.ascontiguousarray(obj).tobytes())
    elif isinstance(obj, (list, tuple)):
        h.update(f"seq{type(obj).__name__}{len(obj)}".encode())
        for item in obj:
            _feed(h, item)
    elif isinstance(obj, dict):
        h.update(f"dict{len(obj)}".encode())
        for key, value in obj.items():
            _feed(h, key)
            _feed(h, value)
    elif isinstance(obj, float):
        h.update(b"f" + float(obj).hex().encode())
    else:
        h.update(f"{type(obj).__name__}:{obj!r}".encode())


def _samples(h, spec, runs: int, seed: int) -> None:
    if spec.pair_search is not None:
        samplers = [(f"x={x!r}", spec.pair_search.sample_at(x)) for x in spec.pair_search.inputs]
    else:
        samplers = [("d", spec.canary.sample_d), ("dprime", spec.canary.sample_dprime)]
    for index, (label, sample) in enumerate(samplers):
        rng = np.random.default_rng([seed, index])
        out = sample(rng, runs)
        h.update(label.encode())
        _feed(h, out)
        h.update(repr(rng.bit_generator.state).encode())


def entry_digest(name: str, eps_list, trials: int, runs: int, seed: int) -> tuple[str, float]:
    from ldpfleet.app.audit_cli import GAU_DELTA, _battery, _one_audit

    battery = _battery()
    h = hashlib.sha256(name.encode())
    started = time.process_time()
    for eps in battery.audit_all_budgets(name, tuple(eps_list)):
        delta = GAU_DELTA if name == "gau-dp" else 0.0
        h.update(f"eps={eps!r}".encode())
        _samples(h, battery.build_spec(name, eps, delta), runs, seed)
        row = _one_audit((name, eps, delta, trials, 0.05 / 88, seed))
        row.pop("cpu_seconds")
        h.update(json.dumps(row, sort_keys=True).encode())
    return h.hexdigest()[:20], time.process_time() - started


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", action="append", help="this entry only (repeat)")
    p.add_argument("--trials", type=int, default=200, help="runs per world of each audit")
    p.add_argument("--runs", type=int, default=24, help="runs of each raw canary sample")
    p.add_argument("--seed", type=int, default=20261207)
    p.add_argument("--out", help="write the digests as JSON")
    p.add_argument("--check", help="compare with a JSON written by --out")
    a = p.parse_args(argv)
    from ldpfleet.app.audit_cli import _battery

    names = a.only or list(_battery().BATTERY)
    digests = {}
    for name in names:
        digest, cpu = entry_digest(name, (0.5, 1.0, 2.0), a.trials, a.runs, a.seed)
        digests[name] = digest
        print(f"{name:28s} {digest} {cpu:7.2f} s", flush=True)
    whole = hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()[:20]
    print(f"{'all':28s} {whole}")
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(digests, f, indent=1, sort_keys=True)
    if a.check:
        with open(a.check, encoding="utf-8") as f:
            want = json.load(f)
        bad = [n for n in names if want.get(n) != digests[n]]
        print("same digests" if not bad else f"DIFFERENT: {', '.join(bad)}")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
