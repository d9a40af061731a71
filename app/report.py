"""``OUT/report.html``: one self-contained page per run (``ldpfleet report DIR``).

Everything is read from the run's outputs (results.json, ledger.json, trace.sqlite,
reconstructions.npz): the scenario, timing per stage, message volume by kind and over
time, the privacy ledger (distribution of ε spent per device, refusals), and a section per
capability present in the run — stream accuracy, CPR reconstructions against the truth and
the period confusion, secure-aggregation rounds with survivors and dropouts, CADR-LDP true
against released degrees, GC-DP budgets, faults and delivery. Plots are matplotlib PNGs
embedded as data URIs and the CSS is inline: the page fetches nothing.
"""

from __future__ import annotations

import base64
import html
import io
import json
import sqlite3
from pathlib import Path

import matplotlib
from ldpfleet.app.cadr_report import release_vs_baselines

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px;
       color: #222; line-height: 1.4; }
h1 { font-size: 1.6rem; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .9rem; }
td, th { border: 1px solid #ddd; padding: .25rem .6rem; text-align: left; }
th { background: #f4f4f4; } .ok { color: #176b2c; } .bad { color: #a11; }
img { max-width: 100%; border: 1px solid #eee; margin: .3rem 0; }
code { background: #f4f4f4; padding: 0 .2rem; }
"""


def _figure_uri(fig) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def _img(fig, alt: str) -> str:
    return f'<img alt="{html.escape(alt)}" src="{_figure_uri(fig)}">'


def _table(rows: list[tuple], header: tuple | None = None) -> str:
    out = ["<table>"]
    if header:
        out.append("<tr>" + "".join(f"<th>{html.escape(str(h))}</th>" for h in header) + "</tr>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{html.escape(_fmt(v))}</td>" for v in row) + "</tr>")
    out.append("</table>")
    return "".join(out)


def _fmt(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, dict | list):
        return json.dumps(value)[:300]
    return str(value)


def _read_json(path: Path) -> dict | None:
    return json.loads(path.read_text()) if path.exists() else None


# sections -------------------------------------------------------------------------------


def _scenario_section(results: dict) -> str:
    scenario = results.get("scenario", {})
    spec = scenario.get("spec", {})
    rows = [
        ("name", scenario.get("name")),
        ("file", scenario.get("path")),
        ("seed", scenario.get("seed", spec.get("scenario", {}).get("seed"))),
        ("run", results.get("run")),
        ("broker", results.get("broker")),
        ("wall seconds", results.get("seconds")),
    ]
    sections = [(name, value) for name, value in spec.items() if isinstance(value, dict)]
    spec_rows = [
        (f"[{name}] {key}", value)
        for name, section in sections
        for key, value in section.items()
        if value is not None
    ]
    return "<h2>Scenario</h2>" + _table(rows) + _table(spec_rows, ("key", "value"))


def _timing_section(results: dict) -> str:
    stages = results.get("stages") or {}
    rows = [
        (name, stage.get("status"), stage.get("seconds"))
        for name, stage in stages.items()
        if isinstance(stage, dict)
    ]
    # a CADR-LDP run reports its stages as name -> seconds
    rows += [
        (name, "ok", seconds)
        for name, seconds in (results.get("stage_seconds") or {}).items()
        if isinstance(seconds, int | float)
    ]
    if not rows:
        return ""
    fig, ax = plt.subplots(figsize=(7, 0.5 + 0.4 * len(rows)))
    ax.barh([r[0] for r in rows], [r[2] or 0.0 for r in rows], color="#4477aa")
    ax.set_xlabel("seconds")
    ax.invert_yaxis()
    return (
        "<h2>Timing per stage</h2>"
        + _table(rows, ("stage", "status", "seconds"))
        + _img(fig, "timing per stage")
    )


def _volume_section(trace: Path) -> str:
    if not trace.exists():
        return ""
    with sqlite3.connect(f"file:{trace}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT kind, COUNT(*), SUM(bytes) FROM messages GROUP BY kind ORDER BY 2 DESC"
        ).fetchall()
        times = db.execute("SELECT time, kind FROM messages").fetchall()
    if not rows:
        return "<h2>Messages</h2><p>The trace is empty.</p>"
    start = min(t for t, _ in times)
    span = max(t for t, _ in times) - start or 1.0
    bins = np.linspace(0, span, 41)
    fig, ax = plt.subplots(figsize=(8, 3.2))
    for kind, _, _ in rows[:8]:
        offsets = [t - start for t, k in times if k == kind]
        counts, _ = np.histogram(offsets, bins=bins)
        ax.plot(bins[:-1], counts, label=kind)
    ax.set_xlabel("seconds since the first message")
    ax.set_ylabel(f"messages per {span / 40:.3g} s")
    ax.legend(fontsize=8, ncol=4)
    return (
        "<h2>Messages</h2>"
        + _table(rows, ("kind", "messages", "bytes"))
        + _img(fig, "message volume over time")
    )


def _ledger_section(ledger: dict | None) -> str:
    if not ledger:
        return ""
    # a stream run's ledger.json has "devices"; a CADR-LDP run's is device -> ledger
    devices = ledger.get("devices")
    if devices is None:
        devices = {k: v for k, v in ledger.items() if isinstance(v, dict) and "accounts" in v}
    worst, total, refusals, budgets = [], [], 0, set()
    for entry in devices.values():
        for account in entry.get("accounts", {}).values():
            refusals += account.get("refusals", 0)
            if "max_window_spent" in account:
                worst.append(account["max_window_spent"])
                total.append(account.get("total_spent", 0.0))
            elif "spent" in account:  # a total budget (CADR-LDP node account)
                worst.append(account["spent"])
                total.append(account["spent"])
                budgets.add(account.get("eps"))
    rows = [
        ("budget ε", ledger.get("eps", ", ".join(str(b) for b in sorted(budgets)) or None)),
        ("window w", ledger.get("w", "(total budget)" if budgets else None)),
        ("worst spent (fleet)", ledger.get("max_window_spent", max(worst, default=None))),
        ("within budget", ledger.get("within_budget")),
        ("refusals", ledger.get("refusals", refusals)),
        ("devices", len(devices)),
    ]
    out = "<h2>Privacy ledger</h2>" + _table(rows)
    if worst:
        fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3))
        left.hist(worst, bins=20, color="#228833")
        left.set_xlabel("worst w-window ε spent, per device")
        if ledger.get("eps"):
            left.axvline(ledger["eps"], color="#a11", linestyle="--", label="budget ε")
            left.legend(fontsize=8)
        right.hist(total, bins=20, color="#66ccee")
        right.set_xlabel("total ε charged over the stream, per device")
        out += _img(fig, "distribution of epsilon spent")
    return out


def _accuracy_section(results: dict) -> str:
    per_device = results.get("per_device") or {}
    pairs = [
        (d["true_mean"], d["mean_estimate"])
        for d in per_device.values()
        if isinstance(d, dict) and d.get("mean_estimate") is not None and "true_mean" in d
    ]
    if not pairs:
        return ""
    truth, estimate = np.array(pairs).T
    fig, ax = plt.subplots(figsize=(4.5, 4))
    ax.scatter(truth, estimate, s=10)
    low, high = float(min(truth.min(), estimate.min())), float(max(truth.max(), estimate.max()))
    ax.plot([low, high], [low, high], color="#888", linewidth=1)
    ax.set_xlabel("true mean")
    ax.set_ylabel("estimated mean (from privatised reports)")
    accuracy = results.get("accuracy") or {}
    rows = [(k, v) for k, v in accuracy.items()]
    rows += [
        ("reports received / expected", f"{results.get('reports_received')} / "
         f"{results.get('reports_expected')}"),
        ("reports lost", results.get("reports_lost")),
        ("reports rejected", results.get("reports_rejected")),
    ]  # fmt: skip
    return "<h2>Stream accuracy</h2>" + _table(rows) + _img(fig, "true vs estimated means")


def _cpr_section(results: dict, out: Path) -> str:
    reconstruction = results.get("reconstruction")
    if not reconstruction:
        return ""
    html_out = "<h2>CPR reconstruction</h2>" + _table(list(reconstruction.items()))
    per_device = results.get("per_device") or {}
    periods = [
        (d.get("period_true"), d.get("period_hat"))
        for d in per_device.values()
        if isinstance(d, dict) and d.get("period_hat") is not None
    ]
    periods = [(t, h) for t, h in periods if t is not None]
    if periods:
        truth, found = np.array(periods, dtype=float).T
        fig, ax = plt.subplots(figsize=(4.5, 4))
        ax.scatter(truth, found, s=12, alpha=0.6)
        ax.plot([truth.min(), truth.max()], [truth.min(), truth.max()], color="#888")
        ax.set_xlabel("true period")
        ax.set_ylabel("detected period")
        ax.set_title("period confusion")
        html_out += _img(fig, "period confusion")
    path = out / "reconstructions.npz"
    if path.exists():
        data = np.load(path, allow_pickle=False)
        truth_path = out / "truth_sample.npz"
        truth = np.load(truth_path, allow_pickle=False) if truth_path.exists() else None
        names = [n for n in data.files if "." not in n]
        if truth is not None:
            names = [n for n in names if n in truth.files] or names
        names = names[:4]
        if names:
            fig, axes = plt.subplots(len(names), 1, figsize=(8, 1.8 * len(names)), squeeze=False)
            for ax, name in zip(axes[:, 0], names, strict=False):
                if truth is not None and name in truth.files:
                    ax.plot(np.asarray(truth[name]).ravel(), linewidth=1, color="#999",
                            label="truth (simulator)")  # fmt: skip
                ax.plot(np.asarray(data[name]).ravel(), linewidth=1, label="reconstruction")
                ax.set_ylabel(name, fontsize=8)
            axes[0, 0].legend(fontsize=8)
            axes[-1, 0].set_xlabel("step")
            html_out += _img(fig, "reconstructions against the truth for sample devices")
    return html_out


def _secagg_section(results: dict) -> str:
    secure = results.get("secure_sum")
    if not secure:
        return ""
    rows = [
        ("graph", secure.get("graph")),
        ("dimension", secure.get("dim")),
        ("devices", secure.get("devices")),
        ("survivors", secure.get("survivors")),
        ("dropped", len(secure.get("dropped_devices") or [])),
        ("exact", secure.get("exact")),
        ("aborted", secure.get("aborted")),
        ("seconds", secure.get("seconds")),
    ]
    stages = secure.get("seconds_per_stage") or {}
    collector = secure.get("collector") or {}
    rounds = [
        (name, collector.get(key), stages.get(stage))
        for name, key, stage in (
            ("AdvertiseKeys", "advertised", "advertise"),
            ("ShareKeys", "shared", "share"),
            ("MaskedInput", "masked", "masked"),
            ("Unmask", "unmasked", "unmask"),
        )
    ]
    fig, ax = plt.subplots(figsize=(6, 3))
    counts = [r[1] or 0 for r in rounds]
    ax.bar([r[0] for r in rounds], counts, color="#aa3377")
    ax.set_ylabel("devices taking part")
    ax.set_ylim(0, max([*counts, 1]) * 1.15)
    return (
        "<h2>Secure aggregation</h2>"
        + _table(rows)
        + _table(rounds, ("round", "devices", "seconds"))
        + _img(fig, "secure aggregation rounds")
    )


def _cadr_section(results: dict) -> str:
    per_device = results.get("per_device") or {}
    pairs = [
        (d["degree"], d["released"])
        for d in per_device.values()
        if isinstance(d, dict) and "degree" in d and "released" in d
    ]
    if not pairs:
        return ""
    degrees, released = np.array(pairs, dtype=float).T
    fig, ax = plt.subplots(figsize=(7, 3.2))
    top = float(np.percentile(np.concatenate([degrees, released]), 99)) + 1
    bins = np.linspace(min(0.0, released.min()), top, 40)
    ax.hist(degrees, bins=bins, alpha=0.6, label="true degree")
    ax.hist(released, bins=bins, alpha=0.6, label="released degree")
    ax.set_xlabel("degree")
    ax.legend(fontsize=8)
    rows = [
        (k, results.get(k))
        for k in ("method", "eps", "alpha", "theta", "theta_rule", "mae", "mse", "seconds")
        if k in results
    ]
    out = (
        "<h2>CADR-LDP degree release</h2>"
        + _table(rows)
        + release_vs_baselines(results)
        + _img(fig, "degree distributions")
    )
    eps, alpha, theta = results.get("eps"), results.get("alpha"), results.get("theta")
    if isinstance(eps, int | float) and isinstance(alpha, int | float):
        # the error model θ is chosen by (collector.theta_search.local_error): projection
        # loss max(d - θ, 0) plus the DSR noise scale θ / ((1 - α) ε), averaged over the
        # true degrees, against the MAE the run measured at its θ
        eps_dsr = (1 - alpha) * eps
        thetas = np.arange(1, int(degrees.max()) + 2)
        model = [float(np.mean(np.maximum(degrees - t, 0) + t / eps_dsr)) for t in thetas]
        fig, ax = plt.subplots(figsize=(7, 3))
        ax.plot(thetas, model, label="expected error (model the θ search minimises)")
        if isinstance(theta, int) and "mae" in results:
            ax.scatter([theta], [results["mae"]], color="#a11", zorder=3,
                       label=f"this run: θ = {theta}, MAE {results['mae']:.2f}")  # fmt: skip
        ax.set_xlabel("θ")
        ax.set_ylabel("mean absolute error")
        ax.set_yscale("log")
        ax.legend(fontsize=8)
        out += _img(fig, "MAE against theta")
    return out


def _gcdp_section(results: dict) -> str:
    gcdp = results.get("gcdp")
    if not gcdp:
        return ""
    rows = [(k, v) for k, v in gcdp.items() if not isinstance(v, list | dict)]
    rows += [(f"accuracy: {k}", v) for k, v in (gcdp.get("accuracy") or {}).items()]
    out = "<h2>GC-DP central release</h2>" + _table(rows)
    budgets, utility = gcdp.get("budgets"), gcdp.get("utility")
    if isinstance(budgets, list) and budgets:
        panels = 2 if isinstance(utility, list) and len(utility) == len(budgets) else 1
        fig, axes = plt.subplots(1, panels, figsize=(5 * panels, 3), squeeze=False)
        axes[0, 0].bar(range(len(budgets)), budgets, color="#ee6677")
        axes[0, 0].set_xlabel("coordinate (device)")
        axes[0, 0].set_ylabel("ε per window")
        axes[0, 0].set_title("budget per coordinate", fontsize=9)
        if panels == 2:
            axes[0, 1].bar(range(len(utility)), utility, color="#4477aa")
            axes[0, 1].set_xlabel("coordinate (device)")
            axes[0, 1].set_title("utility weight per coordinate", fontsize=9)
        out += _img(fig, "GC-DP budgets per coordinate")
    return out


def _reliability_section(results: dict) -> str:
    parts = []
    delivery = results.get("delivery")
    if delivery:
        parts.append(_table(list(delivery.items()), ("delivery", "value")))
    if results.get("rejections_by_reason"):
        parts.append(
            _table(list(results["rejections_by_reason"].items()), ("rejected: reason", "count"))
        )
    faults = results.get("faults")
    if faults:
        parts.append("<h3>Injected faults</h3>")
        parts.append(_table(list(faults.get("injected", {}).items())))
        parts.append(_table(list(faults.get("outcome", {}).items())))
    if results.get("missing_batches"):
        parts.append(_table(list(results["missing_batches"].items()), ("device", "missing")))
    return "<h2>Delivery and faults</h2>" + "".join(parts) if parts else ""


def _audit_section(out: Path) -> str:
    """``OUT/audit.json`` if present: what ``ldpfleet audit ... > OUT/audit.json`` printed
    (one audit, a list of them, or ``all``'s document with ``audits``)."""
    audit = _read_json(out / "audit.json")
    if not audit:
        return ""
    if isinstance(audit, dict) and "audits" not in audit:
        audit = [audit]
    entries = audit if isinstance(audit, list) else audit.get("audits", [])
    rows = [
        (
            a.get("mechanism"),
            a.get("eps_claimed", a.get("eps_claim")),
            a.get("eps_lb"),
            a.get("verdict"),
        )
        for a in entries
        if isinstance(a, dict)
    ]
    return "<h2>Privacy audit</h2>" + _table(rows, ("mechanism", "ε claimed", "ε lower bound",
                                                   "verdict"))  # fmt: skip


def build_report(out_dir: str | Path) -> str:
    """The report page of a run directory, as HTML text."""
    out = Path(out_dir)
    results = _read_json(out / "results.json")
    if results is None:
        raise FileNotFoundError(f"no results.json in {out} (run `ldpfleet run` first)")
    ledger = _read_json(out / "ledger.json")
    title = f"ldpfleet run {results.get('run', '')}"
    body = [
        f"<h1>{html.escape(title)}</h1>",
        _scenario_section(results),
        _timing_section(results),
        _volume_section(out / "trace.sqlite"),
        _ledger_section(ledger),
        _accuracy_section(results),
        _cpr_section(results, out),
        _secagg_section(results),
        _cadr_section(results),
        _gcdp_section(results),
        _reliability_section(results),
        _audit_section(out),
    ]
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        + "".join(part for part in body if part)
        + "</body></html>"
    )


def write_report(out_dir: str | Path) -> Path:
    """Write ``OUT/report.html``; returns its path."""
    path = Path(out_dir) / "report.html"
    path.write_text(build_report(out_dir))
    return path
