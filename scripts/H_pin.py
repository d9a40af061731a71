"""Pin helper H's refactors (long functions split into helpers; behaviour identical).

    python scripts/H_pin.py record OUT [GROUP ...]
    python scripts/H_pin.py check OUT [GROUP ...]

``record`` writes OUT/<group>.json for each group (all by default); ``check`` recomputes
them and prints every entry that differs (exit 1 if any). Groups:

- ``schema``: ``parse_scenario`` on scenarios/*.toml, the bulk scenarios of the tests and
  invalid variants of a bulk scenario (each key the bulk checks, ``_check_bulk_stream``,
  ``_check_bulk_sections`` and ``_check_bulk_source``, refuse set to a bad value): the
  loaded spec's repr, or the ScenarioError's message/field/limit/value.
- ``bulk``: results.json of a bulk run and of a partitioned bulk run (memory broker), minus
  timing/CPU/memory/latency/pid/port fields.
- ``audit``: ``audit_samples`` on several output sets, witnesses, eps/delta/gamma, and the
  refusals (type, message, field, limit, value).
- ``gcdp``: ``ldpfleet bench gcdp --draws 2 --seed 0 --json`` (and with ``--test-file
  data/uci-occupancy/datatest2.txt``) minus timing fields; ``_read_occupancy`` on every
  Occupancy file under data/ and odd variants (missing/extra/twice a column, empty,
  header only, bad cells and rows, dates back in time); ``PrivateCalibration.release``
  on good and bad inputs (released arrays' hashes, the generator's state after, the
  ledger's charges, or the refusal).
- ``trace``: ``ldpfleet trace verify`` (stdout and exit code, plain and ``--json``) on runs
  made once into OUT/runs by the first ``record`` (stream, GC-DP, CADR all/control, a
  collector side with two fleet shards, bulk runs of 1 and 2 partitions) and on copies
  tampered in the e2e tests' ways (trace rows, ledgers, results.json, bulk stores), plus
  bad arguments (two traces, a non-run file, a missing path).
- ``partition``: a stream run (tests/e2e/test_partitions.py's) with ``[collector]
  partitions`` 2 and 3 on the local Mosquitto: its results.json keys that do not depend
  on timing.
- ``stream``: ``check_stream`` on a corpus of good and bad streams (lists, arrays of
  every kind, ragged, text/empty/None cells, complex, masked, time columns, ints beyond
  the float range, non-finite samples): the array's hash or the refusal's type, message,
  field, limit and value. The answers of ``detect_period`` are pinned by
  scripts/cpr_period_same.py (OLD: a directory of the original collector/period*.py).
"""

from __future__ import annotations

import hashlib
import io
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


# ---------------------------------------------------------------- gcdp
def _bench_gcdp(*extra: str) -> dict:
    import subprocess

    cmd = [sys.executable, "-m", "ldpfleet.app.cli", "bench", "gcdp", "--draws", "2"]
    done = subprocess.run(
        [*cmd, "--seed", "0", "--json", *extra], capture_output=True, text=True, cwd=ROOT
    )
    try:
        body = _strip(json.loads(done.stdout))
    except ValueError:
        body = done.stdout
    return {"exit": done.returncode, "stdout": body, "stderr": done.stderr[-2000:]}


def _occupancy_texts() -> dict[str, str]:
    texts = {
        f"file:{p.name}": p.read_text()
        for p in sorted((ROOT / "data").rglob("*.txt"))
        if "Occupancy" in p.read_text()[:2000]
    }
    base = (ROOT / "data" / "uci-occupancy" / "datatest.txt").read_text().splitlines()
    head, rows = base[0], base[1:40]
    cells = [h.strip('"') for h in head.split(",")]
    plain = [",".join(cells)] + [",".join(r.split(",")[1:]) for r in rows]  # no row ids
    texts["no-row-id"] = "\n".join(plain) + "\n"
    texts["semicolon"] = "\n".join(line.replace(",", ";") for line in plain) + "\n"
    texts["empty"] = ""
    texts["header-only"] = head + "\n"
    drop = cells.index("CO2")
    texts["missing-column"] = "\n".join(
        ",".join(c for i, c in enumerate(line.split(",")) if i != drop) for line in plain
    )
    texts["extra-column"] = "\n".join(
        line + ("," + ("Extra" if n == 0 else str(n))) for n, line in enumerate(plain)
    )
    texts["twice"] = "\n".join(line + "," + line.split(",")[1] for line in plain)
    texts["wide-row"] = "\n".join([*plain[:5], plain[5] + ",1,2", *plain[6:]])
    texts["short-row"] = "\n".join([*plain[:5], plain[5].rsplit(",", 1)[0], *plain[6:]])
    texts["nan"] = "\n".join([*plain[:3], plain[3].replace(plain[3].split(",")[2], "nan", 1)])
    texts["text-cell"] = "\n".join([*plain[:3], plain[3].replace(plain[3].split(",")[3], "x", 1)])
    occ = [line.rsplit(",", 1) for line in plain]
    texts["occupancy-2"] = "\n".join([*plain[:4], occ[4][0] + ",2", *plain[5:]])
    texts["back-in-time"] = "\n".join([plain[0], *plain[1:10][::-1]])
    texts["odd-dates"] = "\n".join(
        [plain[0]] + [f"day{i}," + line.split(",", 1)[1] for i, line in enumerate(plain[1:])]
    )
    texts["trailing-delimiter"] = "\n".join(plain[:1] + [line + "," for line in plain[1:]])
    texts["blank-lines"] = "\n".join([*plain[:3], "", " , ,", *plain[3:]])
    texts["row-id-text-first"] = "\n".join(plain[:1] + ["x," + line for line in plain[1:]])
    return texts


def _hash(array) -> str:
    array = np.ascontiguousarray(array)
    return f"{array.dtype}{array.shape}:" + hashlib.sha256(array.tobytes()).hexdigest()


def _release_calls() -> dict:
    from ldpfleet.collector.gcdp.private_calibration import CAL_ACCOUNT, PrivateCalibration
    from ldpfleet.protocol.ledger import BudgetAccount, PrivacyLedger, WindowAccount

    out = {}

    def call(name, cal_kw, args, *, eps=10.0, account=CAL_ACCOUNT, window=None, **kw):
        t, rng, opened = kw.get("t"), kw.get("rng"), kw.get("opened", account)
        ledger = PrivacyLedger("collector")
        acct = WindowAccount(eps=eps, w=window) if window else BudgetAccount(eps=eps)
        ledger.open_account(opened, acct)
        rng = np.random.default_rng(len(out)) if rng is None else rng
        try:
            cal = PrivateCalibration(**cal_kw)
            given = kw.get("ledger", ledger)
            rel = cal.release(*args, ledger=given, rng=rng, account=account, t=t)
            res = {
                "scores": _hash(rel.scores),
                "utility": _hash(rel.utility),
                "influence": _hash(rel.influence),
                "tau": repr(rel.tau),
                "tau_index": repr(rel.tau_index),
                "eps_cal": repr(rel.eps_cal),
            }
        except Exception as exc:  # recorded as it is
            res = _error(exc)
        if isinstance(rng, np.random.Generator):
            res["rng"] = repr(rng.bit_generator.state)
        res["ledger"] = repr(ledger.to_dict()) if hasattr(ledger, "to_dict") else ""
        res["spent"] = repr(getattr(ledger.account(opened), "charges", None))
        out[name] = res

    for m, d, grid in ((4, 3, 5), (2, 1, 5), (7, 5, 5), (5, 2, 1)):
        rng = np.random.default_rng(m * 100 + d)
        upper = np.triu(rng.uniform(0.0, 1.0, (m, m)), k=1)
        scores = upper + upper.T + np.eye(m)
        mu, xi = rng.uniform(0.0, 1.0, d), rng.uniform(0.0, 1.0, d)
        u_tau = np.linspace(0.2, 0.9, grid)
        kw = {"eps_G": 0.3, "eps_tau": 0.1, "eps_mu": 0.2, "eps_xi": 0.15, "n_nodes": m, "d": d}
        if grid == 1:
            kw["tau_grid"] = (0.4,)
        args = (scores, mu, xi, u_tau)
        call(f"ok-{m}-{d}-{grid}", kw, args)
        call(f"ok-big-eps-{m}", {**kw, "eps_G": 3.0, "eps_tau": 2.0}, args)
        call(f"window-{m}", kw, args, eps=1.0, window=3, t=2, account="cal_w")
        call(f"exhausted-{m}", kw, args, eps=0.5)
        asym = scores.copy()
        asym[0, 1] = 0.0
        big = scores.copy()
        big[0, 1] = big[1, 0] = 1.5
        bad = {
            "scores-shape": (scores[:-1, :-1], mu, xi, u_tau),
            "scores-asym": (asym, mu, xi, u_tau),
            "scores-big": (big, mu, xi, u_tau),
            "mu-short": (scores, mu[:-1], xi, u_tau),
            "xi-big": (scores, mu, np.full(d, 1.5), u_tau),
            "tau-short": (scores, mu, xi, u_tau[:-1]),
            "tau-neg": (scores, mu, xi, -u_tau),
            "all-bad": (asym, mu[:-1], -xi, u_tau[:-1]),
        }
        for name, bad_args in bad.items():
            call(f"bad-{name}-{m}", kw, bad_args)
        call(f"bad-rng-{m}", kw, args, rng="no rng")
        call(f"bad-ledger-{m}", kw, args, ledger={})
        call(f"bad-account-{m}", kw, args, account="other", opened=CAL_ACCOUNT)
    return out


def pin_gcdp() -> dict:
    from ldpfleet.collector.gcdp.evaluation import _read_occupancy

    out = {
        "bench": _bench_gcdp(),
        "bench-test2": _bench_gcdp("--test-file", "data/uci-occupancy/datatest2.txt"),
    }
    for name, text in _occupancy_texts().items():
        try:
            x, y = _read_occupancy(io.StringIO(text))
            out[f"read:{name}"] = {"x": _hash(x), "y": _hash(y)}
        except Exception as exc:  # recorded as it is
            out[f"read:{name}"] = _error(exc)
    out.update({f"release:{k}": v for k, v in _release_calls().items()})
    return out


# ---------------------------------------------------------------- trace verify
STREAM = """
[scenario]
name = "verify"
seed = 3
[fleet]
devices = 3
[stream]
steps = 24
eps = 1.0
w = 4
[source]
kind = "synthetic"
shape = "square"
period = 6
amplitude = 1.0
bounds = [-1.0, 1.0]
"""
CADR = """
[scenario]
name = "verify-degrees"
seed = 2
[graph]
source = "barabasi_albert:n=20,m=2,seed=5"
[cadr]
theta = 3
trace = "{trace}"
[broker]
url = "memory"
"""


def _make_clean_runs(base: Path) -> None:
    """The clean runs (as tests/e2e/test_trace_verify.py and test_bulk_trace.py make
    them), once: the trace group verifies these same files before and after the edits."""
    import asyncio

    from ldpfleet.broker.transport import MemoryTransport
    from ldpfleet.protocol.bulk import BulkPlan
    from ldpfleet.scenarios.bulk_run import run_bulk
    from ldpfleet.scenarios.runner import run_scenario
    from ldpfleet.scenarios.schema import load_scenario, parse_scenario
    from ldpfleet.scenarios.sides import collector_side, fleet_side

    async def make():
        await run_scenario(
            parse_scenario(STREAM), broker="memory", out_dir=base / "stream", run_id="v1"
        )
        release = load_scenario(ROOT / "scenarios" / "occupancy-release.toml")
        await run_scenario(release, broker="memory", out_dir=base / "gcdp", run_id="v2")
        for trace in ("all", "control"):
            await run_scenario(
                parse_scenario(CADR.format(trace=trace)),
                broker="memory",
                out_dir=base / f"cadr-{trace}",
                run_id=f"v3{trace}",
            )
        scenario, transport = parse_scenario(STREAM), MemoryTransport()
        sides = base / "sides"
        await asyncio.gather(
            fleet_side(scenario, transport, "v5", (0, 2), sides / "c" / "fleet-0-of-2",
                       wait_timeout=60.0),
            collector_side(scenario, transport, "v5", sides / "c", fleet_timeout=60.0),
            fleet_side(scenario, transport, "v5", (1, 2), sides / "f1", wait_timeout=60.0),
        )  # fmt: skip
        for partitions in (1, 2):
            plan = BulkPlan(
                run="bulk-trace", devices=300, steps=20, batch_steps=5, eps=1.0, w=10, seed=7,
                gateway_devices=100, partitions=partitions, max_entries=64,
            )  # fmt: skip
            await run_bulk(plan, broker="memory", out_dir=base / f"bulk{partitions}", trace="all")

    asyncio.run(make())


def _tampered(base: Path) -> dict[str, list[Path]]:
    """Copies of the clean runs with one thing changed each, as the e2e tests do."""
    import shutil
    import sqlite3

    from ldpfleet.protocol.bulk import stored_dtype

    cases: dict[str, list[Path]] = {}

    def copy(kind: str, name: str) -> Path:
        target = base / "tampered" / name
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(base / kind, target)
        cases[name] = [target]
        return target

    def sql(directory: Path, query: str, args=(), db="trace.sqlite"):
        with sqlite3.connect(directory / db) as con:
            con.execute(query, args)

    def first_row(directory: Path, kind: str) -> tuple[int, dict]:
        with sqlite3.connect(directory / "trace.sqlite") as con:
            row = con.execute(
                "SELECT id, payload FROM messages WHERE kind = ? ORDER BY id LIMIT 1", (kind,)
            ).fetchone()
        return row[0], json.loads(row[1])

    def edit_json(path: Path, change) -> None:
        document = json.loads(path.read_text())
        change(document)
        path.write_text(json.dumps(document))

    d = copy("stream", "stream-eps0")
    row, body = first_row(d, "sw_report")
    body["eps0"] *= 2
    sql(d, "UPDATE messages SET payload = ? WHERE id = ?", (json.dumps(body).encode(), row))
    d = copy("stream", "stream-delete-row")
    sql(d, "DELETE FROM messages WHERE id = ?", (first_row(d, "sw_report")[0],))
    d = copy("stream", "stream-garbled")
    sql(d, "UPDATE messages SET payload = ? WHERE id = ?", (b"\x00garbled{", 5))
    d = copy("stream", "stream-no-chain")
    sql(d, "UPDATE messages SET chain = NULL WHERE id = 4")
    d = copy("stream", "stream-delete-span")
    sql(d, "DELETE FROM messages WHERE id BETWEEN 3 AND 6")
    d = copy("stream", "stream-delete-two-places")
    sql(d, "DELETE FROM messages WHERE id IN (3, 9)")
    d = copy("stream", "stream-delete-last")
    sql(d, "DELETE FROM messages WHERE id >= 30")
    d = copy("stream", "stream-text-id")
    sql(d, "UPDATE messages SET topic = 7 WHERE id = 7")
    d = copy("stream", "stream-chain-and-gap")
    sql(d, "DELETE FROM messages WHERE id = 10")
    sql(d, "UPDATE messages SET time = time + 1 WHERE id = 20")
    d = copy("stream", "stream-not-sqlite")
    (d / "trace.sqlite").write_bytes(b"not a database" * 100)
    d = copy("stream", "stream-results-no-run")
    edit_json(d / "results.json", lambda doc: doc.update(run="other-run"))
    d = copy("stream", "stream-results-no-scenario")
    edit_json(d / "results.json", lambda doc: doc.pop("scenario"))
    d = copy("stream", "stream-results-eps")
    edit_json(d / "results.json", lambda doc: doc["scenario"]["spec"]["stream"].update(eps=5.0))
    d = copy("stream", "stream-no-results")
    (d / "results.json").unlink()
    d = copy("stream", "stream-results-not-object")
    (d / "results.json").write_text("[1, 2]")
    d = copy("stream", "stream-no-ledger")
    (d / "ledger.json").unlink()
    d = copy("stream", "stream-ledger-eps")

    def ledger_eps(doc):
        first = next(iter(doc["devices"].values()))
        first["accounts"]["stream"].update(eps=0.5)

    edit_json(d / "ledger.json", ledger_eps)
    d = copy("sides", "sides-conflict")
    ledger = next((d / "f1").rglob("ledger.json"))
    other = next((d / "c").rglob("ledger.json"))

    def conflict(doc):
        mine = json.loads(other.read_text())["devices"]
        doc["devices"].update({k: {**v, "x": 1} for k, v in mine.items()})

    edit_json(ledger, conflict)
    cases["sides-conflict"] = [d / "c", d / "f1"]
    cases["sides-collector-only"] = [base / "sides" / "c"]
    cases["sides-both"] = [base / "sides" / "c", base / "sides" / "f1"]
    cases["two-traces"] = [base / "stream", base / "gcdp"]
    cases["trace-file"] = [base / "stream" / "trace.sqlite"]
    cases["other-file"] = [base / "stream" / "ledger.json", base / "gcdp" / "results.json"]
    cases["missing"] = [base / "nowhere"]
    cases["non-run-file"] = [base / "bulk2" / "p0" / "reports.bin"]
    cases["no-trace"] = [base / "bulk2" / "p0", base / "stream" / "nothing-here"]
    cases["no-trace-dir"] = [base / "bulk2" / "p0"]
    d = copy("gcdp", "gcdp-edit")
    with sqlite3.connect(d / "trace.sqlite") as con:
        kinds = [k for (k,) in con.execute("SELECT DISTINCT kind FROM messages ORDER BY kind")]
    kind = next(k for k in kinds if "gcdp" in k or "release" in k)
    row, body = first_row(d, kind)
    if "eps_rel" in body:
        body["eps_rel"] *= 2
    else:
        body["_edited"] = 1
    sql(d, "UPDATE messages SET payload = ? WHERE id = ?", (json.dumps(body).encode(), row))

    def release_account(change):
        def edit(doc):
            change(doc["collector"]["accounts"]["gcdp_release"])

        return edit

    d = copy("gcdp", "gcdp-ledger-eps")
    edit_json(d / "ledger.json", release_account(lambda a: a.update(eps=9.0)))
    d = copy("gcdp", "gcdp-ledger-charges")
    edit_json(d / "ledger.json", release_account(lambda a: a.update(charges=59)))
    d = copy("gcdp", "gcdp-ledger-spent")
    edit_json(d / "ledger.json", release_account(lambda a: a["window_spent"].__setitem__(3, 0)))
    d = copy("gcdp", "gcdp-ledger-short")
    edit_json(d / "ledger.json", release_account(lambda a: a.update(window_spent=[1.0])))
    d = copy("gcdp", "gcdp-no-account")
    edit_json(d / "ledger.json", lambda doc: doc["collector"].update(accounts={}))
    d = copy("gcdp", "gcdp-two-accounts")
    edit_json(
        d / "ledger.json",
        lambda doc: doc["collector"]["accounts"].update(other={"eps": 1.0}),
    )
    d = copy("gcdp", "gcdp-double")
    with sqlite3.connect(d / "trace.sqlite") as con:
        row, payload = con.execute(
            "SELECT id, payload FROM messages WHERE kind = ? ORDER BY id LIMIT 1 OFFSET 1",
            (kind,),
        ).fetchone()
        body = json.loads(payload)
        body["window"] = 0
        con.execute(
            "UPDATE messages SET payload = ? WHERE id = ?", (json.dumps(body).encode(), row)
        )
    d = copy("cadr-all", "cadr-edit")
    with sqlite3.connect(d / "trace.sqlite") as con:
        kinds = [k for (k,) in con.execute("SELECT DISTINCT kind FROM messages ORDER BY kind")]
    for kind in kinds:
        if "dsr" in kind:
            row, body = first_row(d, kind)
            for key, value in body.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    body[key] = value + 1
                    break
            sql(d, "UPDATE messages SET payload = ? WHERE id = ?", (json.dumps(body).encode(), row))
            break
    d = copy("cadr-control", "cadr-control-time")
    sql(d, "UPDATE messages SET time = time + 1 WHERE id = 3")

    dtype = stored_dtype(5)

    def edit_store(name: str, edit, partition: int = 1, kind: str = "bulk2") -> None:
        d = copy(kind, name)
        path = d / f"p{partition}" / "reports.bin"
        rows_ = np.fromfile(path, dtype=dtype)
        edit(rows_).tofile(path)

    def field(name, index, value):
        def edit(rows_):
            rows_[name][index] = value
            return rows_

        return edit

    edit_store("bulk-eps0", field("eps0", 0, 0.5))
    edit_store("bulk-eps0-small", field("eps0", 2, 0.01))

    def value_edit(rows_):
        rows_["values"][3, 1] = np.nextafter(rows_["values"][3, 1], 0)
        return rows_

    edit_store("bulk-value", value_edit)

    def out_of_domain(rows_):
        rows_["values"][4, 0] = 9.0
        return rows_

    edit_store("bulk-domain", out_of_domain)
    edit_store("bulk-drop", lambda r: r[1:])
    edit_store("bulk-twice", lambda r: np.concatenate([r, r[-1:]]))
    edit_store("bulk-unknown-device", field("device", 1, 100_000))
    edit_store("bulk-seq-beyond", field("seq", 2, 50))
    edit_store("bulk-wrong-partition", field("device", 0, 0), partition=1)
    edit_store("bulk-wrong-partition-p0", field("device", 0, 299), partition=0)
    edit_store("bulk1-eps0", field("eps0", 0, 0.5), partition=0, kind="bulk1")
    edit_store("bulk-empty-store", lambda r: r[:0])
    d = copy("bulk2", "bulk-count")
    edit_json(d / "results.json", lambda doc: doc["partitions"][0].update(reports_received=3))
    d = copy("bulk2", "bulk-signature")
    with sqlite3.connect(d / "trace-p0.sqlite") as con:
        sig = con.execute("SELECT value FROM meta WHERE key = 'signature'").fetchone()[0]
        forged = ("0" if sig[0] != "0" else "1") + sig[1:]
        con.execute("UPDATE meta SET value = ? WHERE key = 'signature'", (forged,))
    d = copy("bulk2", "bulk-trace-row")
    sql(d, "UPDATE messages SET time = time + 1 WHERE id = 5", db="trace-p1.sqlite")
    d = copy("bulk2", "bulk-no-store")
    (d / "p1" / "reports.bin").unlink()
    d = copy("bulk2", "bulk-one-part-listed")
    edit_json(d / "results.json", lambda doc: doc["trace"]["partitions"].pop())
    d = copy("bulk2", "bulk-no-plan")
    edit_json(d / "results.json", lambda doc: doc.pop("plan"))
    d = copy("bulk2", "bulk-trace-none")
    edit_json(d / "results.json", lambda doc: doc["trace"].update(recorder="none"))
    d = copy("bulk2", "bulk-mode-control")
    edit_json(d / "results.json", lambda doc: doc["trace"].update(mode="control"))
    d = copy("bulk2", "bulk-total")
    edit_json(d / "results.json", lambda doc: doc.update(reports_received=1))
    d = copy("bulk2", "bulk-missing-part-trace")
    (d / "trace-p1.sqlite").unlink()
    return cases


def pin_trace(out: Path) -> dict:
    from ldpfleet.app.cli import app
    from typer.testing import CliRunner

    base = out / "runs"
    if not (base / "bulk2" / "results.json").exists():
        _make_clean_runs(base)
    cases = {k: [base / k] for k in ("stream", "gcdp", "cadr-all", "cadr-control")}
    cases |= {"bulk1": [base / "bulk1"], "bulk2": [base / "bulk2"]}
    cases |= _tampered(base)
    result = {}
    for name, paths in cases.items():
        done = CliRunner().invoke(app, ["trace", "verify", *map(str, paths)])
        result[name] = {"exit": done.exit_code, "output": done.output}
        result[f"{name}:json"] = (
            CliRunner().invoke(app, ["trace", "verify", *map(str, paths), "--json"]).output
        )
    return result


# ---------------------------------------------------------------- partitioned runs
SAME = ("per_device", "accuracy", "devices_complete", "reports_received", "reports_lost",
        "reports_rejected", "missing_batches", "budget_refusals", "stages", "privacy",
        "reconstruction", "gcdp", "kind", "aborted")  # fmt: skip


def _partitioned(text: str, name: str, count: int) -> dict:
    """``ldpfleet run`` with ``[collector] partitions = count`` on the local Mosquitto
    (coordinator, workers and fleet as processes; run id unique to this script): the
    results.json keys that do not depend on timing (tests/e2e/test_partitions.py's SAME)."""
    import os
    import subprocess

    text = text.replace("[fleet]\n", f"[collector]\npartitions = {count}\n\n[fleet]\n", 1)
    with tempfile.TemporaryDirectory(prefix="H_pin-") as tmp:
        path = Path(tmp) / "s.toml"
        path.write_text(text)
        out = Path(tmp) / "out"
        run = f"hpin-{name}{count}-{os.getpid()}"
        done = subprocess.run(
            [sys.executable, "-m", "ldpfleet.app.cli", "run", str(path), "--broker",
             "mqtt://127.0.0.1:1883", "--out", str(out), "--run", run],
            capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        if done.returncode:
            return {"exit": done.returncode, "stderr": done.stderr[-3000:]}
        results = json.loads((out / "results.json").read_text())
        kept = {k: _strip(results.get(k)) for k in SAME}
        return {"exit": 0, "results": json.loads(json.dumps(kept).replace(run, "RUN"))}


def pin_partition() -> dict:
    stream = (
        (ROOT / "scenarios" / "quickstart.toml").read_text()
        .replace("devices = 50", "devices = 16")
        .replace("steps = 200", "steps = 40")
        .replace("batch_steps = 5 ", 'reconstruct = "cpr"\nbatch_steps = 5 ')
        .replace("[stream]\n", "[stream]\nretransmit_after = 600\n", 1)
    )  # fmt: skip
    return {f"stream-p{count}": _partitioned(stream, "s", count) for count in (2, 3)}


# ---------------------------------------------------------------- check_stream
def _stream_corpus() -> dict[str, object]:
    import datetime

    masked = np.ma.masked_array([1.0, 2.0, 3.0], mask=[False, True, False])
    return {
        "list": [1, 2, 3.5],
        "tuple": (1.0, "2", 3),
        "float32": np.arange(5, dtype=np.float32),
        "int64": np.arange(5),
        "bool": np.array([True, False]),
        "strings-numeric": ["1", "2.5", " 3 "],
        "strings-array": np.array(["1", "2"]),
        "empty-list": [],
        "empty-array": np.array([]),
        "scalar": 3.0,
        "zero-d": np.array(2.0),
        "none": None,
        "dict": {"a": 1},
        "string": "123",
        "bytes": b"12",
        "set": {1.0, 2.0},
        "generator": (i for i in range(3)),
        "2d": np.ones((2, 3)),
        "2d-list": [[1, 2], [3, 4]],
        "ragged": [[1, 2], [3]],
        "ragged-mixed": [1, [2, 3]],
        "nan": [1.0, float("nan"), 2.0],
        "inf": np.array([1.0, 2.0, -np.inf]),
        "nan-and-text": [1.0, float("nan"), "x"],
        "text-cell": [1.0, "abc", 2.0],
        "empty-cell": ["1", "", "2"],
        "none-cell": [1.0, None],
        "object-array": np.array([1, "x"], dtype=object),
        "object-numeric": np.array([1, 2.5], dtype=object),
        "complex": [1 + 2j, 3],
        "complex-array": np.array([1j, 2]),
        "complex-real": np.array([1 + 0j, 2 + 0j]),
        "masked": masked,
        "masked-none": np.ma.masked_array([1.0, 2.0], mask=[False, False]),
        "masked-2d": np.ma.masked_array([[1.0, 2.0]], mask=[[True, False]]),
        "datetime64": np.array(["2020-01-01", "2020-01-02"], dtype="datetime64[D]"),
        "timedelta64": np.array([1, 2], dtype="timedelta64[s]"),
        "datetime-list": [datetime.datetime(2020, 1, 1), datetime.datetime(2020, 1, 2)],
        "big-int": [1, 10**400],
        "big-int-neg": [-(10**309), 1],
        "huge-float-str": ["1e400"],
        "decimal-like": [np.float16(1.5), np.int8(3)],
        "list-of-arrays": [np.array(1.0), np.array(2.0)],
        "list-of-1d": [np.array([1.0]), np.array([2.0])],
    }


def pin_stream() -> dict:
    from ldpfleet.collector.period_input import check_stream

    out = {}
    for key, x in _stream_corpus().items():
        for name in ("x", "reports"):
            try:
                arr = check_stream(x, name)
                out[f"{key}:{name}"] = {"ok": _hash(arr), "values": repr(arr.tolist())[:200]}
            except Exception as exc:  # recorded as it is
                out[f"{key}:{name}"] = _error(exc)
    return out


GROUPS = {
    "stream": pin_stream,
    "partition": pin_partition,
    "schema": pin_schema,
    "bulk": pin_bulk,
    "audit": pin_audit,
    "gcdp": pin_gcdp,
    "trace": pin_trace,
}


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in ("record", "check"):
        print(__doc__)
        return 2
    mode, out = argv[0], Path(argv[1])
    groups = argv[2:] or list(GROUPS)
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for group in groups:
        made = GROUPS[group](out) if group == "trace" else GROUPS[group]()
        now = json.loads(json.dumps(made, sort_keys=True, default=repr))
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
