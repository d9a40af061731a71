"""Pin helper H's refactors (long functions split into helpers; behaviour identical).

    python scripts/H_pin.py record OUT [GROUP ...]
    python scripts/H_pin.py check OUT [GROUP ...]

``record`` writes OUT/<group>.json for each group (all by default); ``check`` recomputes
them and prints every entry that differs (exit 1 if any). Groups:

- ``schema``: ``parse_scenario`` on scenarios/*.toml, the bulk scenarios of the tests and
  invalid variants of a bulk scenario (each key ``_check_bulk`` refuses set to a bad
  value): the loaded spec's repr, or the ScenarioError's message/field/limit/value.
- ``bulk``: results.json of a bulk run and of a partitioned bulk run (memory broker), minus
  timing/CPU/memory/latency/pid/port fields.
- ``audit``: ``audit_samples`` on several output sets, witnesses, eps/delta/gamma, and the
  refusals (type, message, field, limit, value).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

BULK = """
[scenario]
name = "bulk-small"
seed = 4
[fleet]
devices = 150
connection = "bulk"
gateway_devices = 60
shards = 2
[stream]
steps = 30
eps = 2.0
w = 3
batch_steps = 3
reconstruct = "cpr"
retransmit_after = 30
[source]
kind = "synthetic"
shape = "sine"
period = [6, 10]
amplitude = 1.0
noise = 0.1
bounds = [-1.5, 1.5]
[collector]
trace = "none"
partitions = 2
"""


def _error(exc: BaseException) -> dict:
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        **{k: repr(getattr(exc, k, None)) for k in ("field", "limit", "value")},
    }


# ---------------------------------------------------------------- schema
def _bulk_variants() -> dict[str, str]:
    """Invalid (and a few valid) variants of BULK, one per key the bulk checks look at."""
    sub = {
        "mech-laplace": ('reconstruct = "cpr"', 'reconstruct = "cpr"\nmechanism = "laplace"'),
        "mech-duchi": ('reconstruct = "cpr"', 'reconstruct = "cpr"\nmechanism = "duchi"'),
        "mech-sw01": ('reconstruct = "cpr"', 'reconstruct = "cpr"\nmechanism = "sw01"'),
        "w-big": ("w = 3", "w = 1025"),
        "w-max": ("w = 3", "w = 1024"),
        "batch-not-divisor": ("batch_steps = 3", "batch_steps = 4"),
        "batch-big": ("batch_steps = 3", "batch_steps = 60"),
        "steps-short": ("steps = 30", "steps = 2"),
        "state-dir": ("shards = 2", 'shards = 2\nstate_dir = "/tmp/x"'),
        "csv": (
            'kind = "synthetic"\nshape = "sine"\nperiod = [6, 10]\namplitude = 1.0\nnoise = 0.1\n',
            'kind = "csv"\npath = "data/uci-occupancy/datatest.txt"\ncolumn = "Light"\n',
        ),
        "periodic": (
            'kind = "synthetic"\nshape = "sine"\nperiod = [6, 10]\namplitude = 1.0\nnoise = 0.1\n',
            'kind = "periodic"\ndataset = "darwin"\n',
        ),
        "shape": ('shape = "sine"', 'shape = "square"'),
        "jitter": ("noise = 0.1", "noise = 0.1\njitter = 0.5"),
        "phase": ("noise = 0.1", "noise = 0.1\nphase = 0.5"),
    }
    out = {}
    for name, (old, new) in sub.items():
        assert old in BULK, name
        out[name] = BULK.replace(old, new, 1)
    out["secure-sum"] = BULK + "[secure_sum]\n"
    gcdp = (
        '[gcdp]\neps_rel = 1.0\nwindow = 30\nmethod = "gcdp"\ntau = 0.15\n'
        'calibration_path = "data/uci-occupancy/datatraining.txt"\n'
    )
    out["gcdp"] = BULK + gcdp
    out["faults-default"] = BULK + "[faults]\n"
    faults = {
        "crash_fraction": "0.1",
        "never_return": "1",
        "crash_between": "[0.1, 0.5]",
        "down_seconds": "1.0",
        "hostile_messages": "5",
        "collector_delay": "0.1",
    }
    for key, value in faults.items():
        out[f"faults-{key}"] = BULK + f"[faults]\n{key} = {value}\n"
    # two problems at once: the first check in order wins
    out["two-w-batch"] = BULK.replace("w = 3", "w = 2000").replace(
        "batch_steps = 3", "batch_steps = 4"
    )
    out["two-state-shape"] = BULK.replace("shards = 2", 'shards = 2\nstate_dir = "/x"').replace(
        'shape = "sine"', 'shape = "square"'
    )
    out["two-faults-gcdp"] = BULK + gcdp + "[faults]\nhostile_messages = 3\n"
    out["paced-crash"] = BULK.replace("w = 3", "w = 3\nstep_seconds = 0.1") + (
        "[faults]\ncrash_fraction = 0.1\n"
    )
    return out


def _schema_corpus() -> dict[str, str]:
    corpus = {f"file:{p.name}": p.read_text() for p in sorted((ROOT / "scenarios").glob("*.toml"))}
    corpus["bulk"] = BULK
    for path in sorted((ROOT / "tests").rglob("*.py")):
        text = path.read_text()
        if 'connection = "bulk"' not in text:
            continue
        for i, block in enumerate(text.split('"""')):
            if "[scenario]" in block and 'connection = "bulk"' in block:
                corpus[f"test:{path.name}:{i}"] = block.replace('"MECH"', '"sw"')
    for name, text in _bulk_variants().items():
        corpus[f"variant:{name}"] = text
    return corpus


def pin_schema() -> dict:
    from ldpfleet.scenarios.schema import parse_scenario

    out = {}
    for name, text in _schema_corpus().items():
        try:
            loaded = parse_scenario(text)
            out[name] = {"spec": repr(loaded.spec)}
        except Exception as exc:  # recorded as it is
            out[name] = _error(exc)
    return out


# ---------------------------------------------------------------- bulk
DROP = ("seconds", "rss", "cpu", "latency", "pid", "port", "elapsed", "rate", "_ms", "time")


def _strip(obj):
    if isinstance(obj, dict):
        return {
            k: _strip(v)
            for k, v in obj.items()
            if k != "run" and not any(d in k.lower() for d in DROP)
        }
    if isinstance(obj, list):
        return [_strip(v) for v in obj]
    if isinstance(obj, str) and ("/tmp" in obj or " s " in obj or " s," in obj):
        return "<text with path/timing>"
    return obj


def _run_bulk(text: str) -> dict:
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    with tempfile.TemporaryDirectory(prefix="H_pin-") as tmp:
        path = Path(tmp) / "bulk.toml"
        path.write_text(text)
        out = Path(tmp) / "out"
        result = CliRunner().invoke(
            app, ["run", str(path), "-b", "memory", "--out", str(out)], catch_exceptions=False
        )
        results = json.loads((out / "results.json").read_text())
        recon = {}
        npz = out / "reconstructions.npz"
        if npz.exists():
            with np.load(npz) as data:
                for key in sorted(data.files):
                    recon[key] = hashlib.sha256(
                        np.ascontiguousarray(data[key]).tobytes()
                    ).hexdigest()
        return {"exit": result.exit_code, "results": _strip(results), "recon": recon}


def pin_bulk() -> dict:
    return {
        "partitioned": _run_bulk(BULK),
        "one-partition": _run_bulk(BULK.replace("partitions = 2", "partitions = 1")),
        "sw01-3-partitions": _run_bulk(
            BULK.replace("partitions = 2", "partitions = 3").replace(
                'reconstruct = "cpr"', 'reconstruct = "cpr"\nmechanism = "sw01"'
            )
        ),
    }


# ---------------------------------------------------------------- audit
def pin_audit() -> dict:
    from ldpfleet.collector.audit.core import audit_samples

    witnesses = {
        "id": lambda x: np.asarray(x),
        "neg": lambda x: -np.asarray(x),
        "abs": lambda x: np.abs(np.asarray(x)),
    }
    out = {}
    for seed in (0, 1, 7):
        for n in (10, 200, 3000):
            for shift in (0.0, 0.5, 3.0):
                rng = np.random.default_rng(seed)
                sel = (rng.normal(0, 1, n), rng.normal(shift, 1, n + 3))
                ev = (rng.normal(0, 1, n + 1), rng.normal(shift, 1, n))
                for eps, delta, gamma, sg in ((1.0, 0.0, 0.05, None), (0.1, 0.01, 0.1, 0.2)):
                    key = f"s{seed}-n{n}-shift{shift}-eps{eps}-d{delta}-g{gamma}-sg{sg}"
                    res = audit_samples(
                        sel, ev, witnesses, eps=eps, delta=delta, gamma=gamma,
                        mechanism="m", canary="c", seed=seed, selection_gamma=sg,
                    )  # fmt: skip
                    out[key] = json.dumps(res.to_dict(), sort_keys=True, default=repr)
    rng = np.random.default_rng(5)
    sel = (rng.normal(0, 1, 50), rng.normal(1, 1, 50))
    ev = (rng.normal(0, 1, 50), rng.normal(1, 1, 50))

    def short_on_eval(x):
        return np.asarray(x)[:-1] if len(x) == 51 else np.asarray(x)

    def nan_on(x):
        y = np.asarray(x, dtype=float).copy()
        y[3] = np.nan
        return y

    ev_long = (np.concatenate([ev[0], [0.0]]), ev[1])
    bad = {
        "no-witness": dict(selection=sel, evaluation=ev, witnesses={}, eps=1.0),
        "eps-neg": dict(selection=sel, evaluation=ev, witnesses=witnesses, eps=-1.0),
        "eps-inf": dict(selection=sel, evaluation=ev, witnesses=witnesses, eps=float("inf")),
        "eps-str": dict(selection=sel, evaluation=ev, witnesses=witnesses, eps="1"),
        "gamma-bad": dict(selection=sel, evaluation=ev, witnesses=witnesses, eps=1.0, gamma=1.5),
        "sel-gamma-bad": dict(
            selection=sel, evaluation=ev, witnesses=witnesses, eps=1.0, selection_gamma=0.0
        ),
        "eps-and-gamma": dict(selection=sel, evaluation=ev, witnesses={}, eps=-1, gamma=2),
        "short-eval": dict(
            selection=sel, evaluation=ev_long, witnesses={"s": short_on_eval}, eps=1.0
        ),
        "nan": dict(
            selection=sel, evaluation=ev, witnesses={"id": witnesses["id"], "n": nan_on}, eps=1.0
        ),
        "wrong-count": dict(
            selection=sel, evaluation=ev, witnesses={"w": lambda x: np.zeros(3)}, eps=1.0
        ),
    }
    for name, kwargs in bad.items():
        try:
            res = audit_samples(**kwargs)
            out[f"bad:{name}"] = json.dumps(res.to_dict(), sort_keys=True, default=repr)
        except Exception as exc:  # recorded as it is
            out[f"bad:{name}"] = _error(exc)
    return out


def _leaves(old, new, path: str) -> list[tuple[str, object, object]]:
    """The paths where two JSON values differ."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            d
            for k in sorted(set(old) | set(new))
            for d in _leaves(old.get(k), new.get(k), f"{path}.{k}")
        ]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            d
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for d in _leaves(a, b, f"{path}[{i}]")
        ]
    return [] if old == new else [(path, old, new)]


GROUPS = {"schema": pin_schema, "bulk": pin_bulk, "audit": pin_audit}


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("record", "check"):
        print(__doc__)
        return 2
    mode, out = argv[0], Path(argv[1])
    groups = argv[2:] or list(GROUPS)
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for group in groups:
        now = json.loads(json.dumps(GROUPS[group](), sort_keys=True, default=repr))
        path = out / f"{group}.json"
        if mode == "record":
            path.write_text(json.dumps(now, sort_keys=True, indent=1))
            print(f"{group}: recorded {len(now)} entries in {path}")
            continue
        before = json.loads(path.read_text())
        diff = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
        for key in diff:
            for path, old, new in _leaves(before.get(key), now.get(key), key)[:20]:
                print(f"{group}: DIFFERS {path}\n  before: {old!r:.300}\n  after:  {new!r:.300}")
        failed += len(diff)
        print(f"{group}: {len(now)} entries, {len(diff)} differ")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
