"""``OUT/report.html``: one self-contained page per run (``ldpfleet report DIR``).

Everything is read from the run's outputs (results.json, ledger.json, trace.sqlite,
reconstructions.npz). The page answers first: a headline block (what ran, on which
broker, devices complete, reports lost, the accuracy figures, the ε budget and the worst
spend, the time); then the scenario (its keys in a collapsed section), timing per stage,
message volume, the privacy ledger, and a section per capability present in the run —
stream accuracy, CPR reconstructions (a readable window and an overview of the whole
stream) and the period confusion, secure-aggregation rounds, CADR-LDP true against
released degrees, GC-DP budgets, faults and delivery. Numbers are rounded for people
(the exact values stay in results.json). Every plot is a matplotlib PNG embedded as a
data URI inside a ``<figure>`` with alt text and a caption; the CSS is inline: the page
fetches nothing.
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import json
import math
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from ldpfleet.app.accuracy_text import (
    cosine_distance_text,
    device_means_text,
    fleet_average_text,
    private_device_accuracy,
    release_mae_text,
)
from ldpfleet.app.cadr_report import degree_figure_inputs, release_vs_baselines

STYLE = """
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 1100px;
       padding: 0 1rem; color: #222; line-height: 1.4; }
h1 { font-size: 1.6rem; margin-bottom: .2rem; } .sub { color: #555; margin-top: 0; }
h2 { border-bottom: 1px solid #ccc; padding-bottom: .2rem; margin-top: 2rem; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-size: .9rem;
        max-width: 100%; display: block; overflow-x: auto; }
td, th { border: 1px solid #ddd; padding: .25rem .6rem; text-align: left;
         overflow-wrap: anywhere; vertical-align: top; }
th { background: #f4f4f4; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.ok { color: #176b2c; } .bad { color: #a11; } .warn { color: #8a5a00; }
figure { margin: .6rem 0 1.2rem; } figcaption { font-size: .85rem; color: #444; }
img { max-width: 100%; height: auto; border: 1px solid #eee; }
code { background: #f4f4f4; padding: 0 .2rem; }
.headline { display: grid; grid-template-columns: max-content 1fr; gap: .3rem 1.2rem;
            background: #f7f9fb; border: 1px solid #d8e0e8; border-radius: 6px;
            padding: .9rem 1.2rem; margin: 1rem 0; }
.headline dt { font-weight: 600; color: #333; } .headline dd { margin: 0; }
details { margin: .5rem 0 1rem; } summary { cursor: pointer; color: #245; }
p.note { font-size: .9rem; color: #444; }
"""

# how many points of a long series the CPR window shows, and the overview's resolution
CPR_WINDOW = 240
OVERVIEW_POINTS = 400
# a list longer than this is shown abridged (the exact list is in results.json)
LIST_SHOWN = 8


class _Plots:
    """matplotlib, imported only when a plot is drawn (a page without plots stays cheap),
    configured once: no offset notation on axes, plain tick labels."""

    plt = None

    @classmethod
    def get(cls):
        if cls.plt is None:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt

            plt.rcParams.update({
                "axes.formatter.useoffset": False,  # never "+2e3" over an axis
                "axes.formatter.limits": (-4, 6),
                "font.size": 9,
                "axes.titlesize": 9,
                "axes.labelsize": 9,
                "legend.fontsize": 8,
                "figure.dpi": 90,
            })  # fmt: skip
            cls.plt = plt
        return cls.plt


def _figure(draw: Callable, size: tuple[float, float], alt: str, caption: str, **grid) -> str:
    """A ``<figure>`` with the PNG that ``draw(fig, axes)`` makes, its alt text and a
    caption. The figure uses constrained layout (one draw; ``bbox_inches="tight"`` draws
    twice)."""
    plt = _Plots.get()
    fig, axes = plt.subplots(figsize=size, layout="constrained", squeeze=False, **grid)
    draw(fig, axes)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    plt.close(fig)
    uri = "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()
    return (
        f'<figure><img alt="{html.escape(alt)}" src="{uri}">'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
    )


# numbers for people --------------------------------------------------------------------


def _num(value, digits: int = 4) -> str:
    """A number rounded for reading: ints with thousands separators, floats to ``digits``
    significant digits without exponent notation in the usual ranges."""
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if value != 0 and (abs(value) >= 1e7 or abs(value) < 1e-4):
            return f"{value:.{digits - 1}e}"
        text = f"{value:.{digits}g}"
        if "e" in text:  # e.g. 12345.6 at 4 digits
            text = f"{value:.0f}"
        return text
    return str(value)


def _fmt(value) -> str:
    """A table cell: numbers rounded, lists of numbers rounded and abridged, mappings as
    ``key: value`` pairs; None as a dash."""
    if isinstance(value, float | int | bool) or value is None:
        return _num(value)
    if isinstance(value, list | tuple):
        shown = ", ".join(_fmt(v) for v in value[:LIST_SHOWN])
        if len(value) > LIST_SHOWN:
            return f"[{shown}, …] ({len(value):,} values; exact in results.json)"
        return f"[{shown}]"
    if isinstance(value, dict):
        text = ", ".join(f"{k}: {_fmt(v)}" for k, v in list(value.items())[:LIST_SHOWN])
        if len(value) > LIST_SHOWN:
            text += f", … ({len(value):,} entries in results.json)"
        return text
    return str(value)


def _table(rows: list[tuple], header: tuple) -> str:
    """A table with a header row; numeric cells right-aligned."""
    out = ["<table><thead><tr>"]
    out += [f'<th scope="col">{html.escape(str(h))}</th>' for h in header]
    out.append("</tr></thead><tbody>")
    for row in rows:
        cells = []
        for value in row:
            number = isinstance(value, int | float) and not isinstance(value, bool)
            klass = ' class="num"' if number else ""
            cells.append(f"<td{klass}>{html.escape(_fmt(value))}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _read_json(path: Path) -> dict | None:
    """A run's JSON output (results.json, ledger.json, audit.json) as an object, None when
    absent; ``TraceError`` (one sentence, exit 2) when it cannot be read, is not JSON (a
    run killed while writing it) or is not an object."""
    from ldpfleet.broker.trace import TraceError

    if not path.exists():
        return None
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except IsADirectoryError:
        raise TraceError(f"{path} is a directory, not a run's JSON output") from None
    except OSError as error:
        raise TraceError(f"{path} cannot be read ({error.strerror or error})") from None
    except (UnicodeDecodeError, ValueError) as error:
        raise TraceError(
            f"{path} is not JSON ({error}); was the run stopped while writing it? run it again"
        ) from None
    if not isinstance(document, dict):
        raise TraceError(
            f"{path} is not a run's results (a JSON object), got a {type(document).__name__}"
        )
    return document


# the top-level entries of results.json the page reads, by the type they must have
# (None and absent: the section is left out); anything else was an AttributeError or
# TypeError traceback from deep inside a section
_OBJECTS = (
    "scenario", "stream", "stages", "accuracy", "per_device", "reconstruction", "secure_sum",
    "gcdp", "delivery", "faults", "rejections_by_reason", "missing_batches", "stage_seconds",
    "trace", "raw", "postprocessed", "baselines", "budget", "privacy_claim", "counters",
)  # fmt: skip
_NUMBERS = (
    "devices", "devices_complete", "devices_rejected", "reports_expected", "reports_received",
    "reports_lost", "reports_rejected", "reports_withdrawn", "clipped_share", "seconds",
    "eps", "alpha", "edges", "mae", "mse", "distribution_l1", "device_messages_up",
    "device_messages_down",
)  # fmt: skip
_LISTS = ("warnings",)
# entries inside those objects that the page reads, by type
_NESTED = {
    ("scenario", "spec"): dict, ("stages", "stream"): dict, ("gcdp", "accuracy"): dict,
    ("secure_sum", "seconds_per_stage"): dict, ("secure_sum", "collector"): dict,
    ("secure_sum", "dropped_devices"): list,
}  # fmt: skip


def _checked_results(results: dict, path: Path) -> dict:
    """``results`` with its None entries among ``_OBJECTS`` and ``_LISTS`` dropped;
    ``TraceError`` naming the entry, the type it must have and the one it has when an
    entry the page reads is of another type (a hand-edited or foreign results.json)."""
    from ldpfleet.broker.trace import TraceError

    def refuse(key: str, wanted: str, value=None) -> TraceError:
        value = results[key] if value is None else value
        return TraceError(
            f"{path}: {key!r} must be {wanted}, got a {type(value).__name__} "
            f"({json.dumps(value)[:60]}); is it a run's results.json?"
        )

    checked = dict(results)
    for key, kind, wanted in (
        *((k, dict, "an object") for k in _OBJECTS),
        *((k, list, "a list") for k in _LISTS),
    ):
        if key in results and results[key] is None:
            del checked[key]
        elif key in results and not isinstance(results[key], kind):
            raise refuse(key, wanted)
    for key in _NUMBERS:
        value = results.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise refuse(key, "a number")
    for (key, sub), kind in _NESTED.items():
        section = checked.get(key)
        if not isinstance(section, dict) or section.get(sub) is None:
            if isinstance(section, dict) and sub in section:
                checked[key] = {k: v for k, v in section.items() if k != sub}
            continue
        if not isinstance(section[sub], kind):
            wanted = "an object" if kind is dict else "a list"
            raise refuse(f"{key}.{sub}", wanted, section[sub])
    return checked


def _checked_ledger(ledger: dict | None, path: Path) -> dict | None:
    """``TraceError`` naming the entry when ledger.json does not have the shape the page
    reads (numbers where numbers are summed and compared, objects of accounts); a
    hand-edited one was an AttributeError or TypeError traceback."""
    from ldpfleet.broker.trace import TraceError

    if ledger is None:
        return None

    def check(value, kind, wanted: str, where: str, optional: bool = True) -> None:
        if value is None and optional:
            return
        bad = isinstance(value, bool) if kind == (int, float) else False
        if bad or not isinstance(value, kind):
            raise TraceError(
                f"{path}: {where!r} must be {wanted}, got a {type(value).__name__} "
                f"({json.dumps(value)[:60]}); is it a run's ledger.json?"
            )

    for key in ("eps", "w", "max_window_spent", "refusals"):
        check(ledger.get(key), (int, float), "a number", key)
    for key in ("devices", "collector"):
        check(ledger.get(key), dict, "an object", key)
    owners = [(f"devices.{d}", e) for d, e in (ledger.get("devices") or {}).items()]
    if "devices" not in ledger:  # a CADR-LDP run's ledger.json is device -> ledger
        owners = [(d, e) for d, e in ledger.items() if isinstance(e, dict) and "accounts" in e]
    if ledger.get("collector") is not None:
        owners.append(("collector", ledger["collector"]))
    for owner, entry in owners:
        check(entry, dict, "an object", owner, optional=False)
        accounts = entry.get("accounts")
        check(accounts, dict, "an object", f"{owner}.accounts")
        for name, account in (accounts or {}).items():
            where = f"{owner}.accounts.{name}"
            check(account, dict, "an object", where, optional=False)
            for key in ("eps", "spent", "total_spent", "max_window_spent", "refusals"):
                check(account.get(key), (int, float), "a number", f"{where}.{key}")
    return ledger


def _is_cadr(results: dict) -> bool:
    return "stage_seconds" in results and "released" in results


def _broker_text(results: dict) -> str:
    broker = results.get("broker")
    if isinstance(broker, dict):
        kind, url = broker.get("kind"), broker.get("url")
        if kind == "memory":
            return "memory (in-process, no MQTT broker)"
        return f"{kind} ({url})" if url and url != kind else str(kind)
    if broker == "memory":
        return "memory (in-process, no MQTT broker)"
    return str(broker) if broker else "—"


def _ledger_devices(ledger: dict | None) -> dict:
    if not ledger:
        return {}
    devices = ledger.get("devices")
    if devices is None:  # a CADR-LDP run's ledger.json is device -> ledger
        devices = {k: v for k, v in ledger.items() if isinstance(v, dict) and "accounts" in v}
    return devices


def _spending(ledger: dict | None) -> tuple[list[float], list[float], float | None, int]:
    """Per device: worst w-window spend (or total spend of a total budget), total charged;
    the budget ε and the refusals."""
    worst, total, budgets, refusals = [], [], set(), 0
    for entry in _ledger_devices(ledger).values():
        for account in entry.get("accounts", {}).values():
            refusals += account.get("refusals", 0)
            if "max_window_spent" in account:
                worst.append(account["max_window_spent"])
                total.append(account.get("total_spent", 0.0))
                budgets.add(account.get("eps"))
            elif "spent" in account:  # a total budget (CADR-LDP node account)
                worst.append(account["spent"])
                total.append(account["spent"])
                budgets.add(account.get("eps"))
    eps = (ledger or {}).get("eps")
    if eps is None and len(budgets) == 1:
        eps = next(iter(budgets))
    return worst, total, eps, (ledger or {}).get("refusals", refusals)


def _at_budget(value: float, eps: float) -> bool:
    """Equal to the budget up to float summation error (w charges of eps / w)."""
    return abs(value - eps) <= 1e-9 * max(1.0, abs(eps))


# the headline --------------------------------------------------------------------------


def _with_counters(results: dict) -> dict:
    """A partitioned collector's coordinator keeps the fleet's counts under ``counters``
    (no stream section): read them as the top-level counts of the run. A bulk-gateway
    run (``kind = "bulk-stream"``) keeps its run, size and stream under ``plan``."""
    counters = results.get("counters")
    if isinstance(counters, dict):
        results = {**counters, **results}
    plan = results.get("plan")
    if results.get("kind") == "bulk-stream" and isinstance(plan, dict):
        stream = {k: plan.get(k) for k in ("mechanism", "eps", "w", "steps")}
        results = {"run": plan.get("run"), "devices": plan.get("devices"), "stream": stream,
                   **results}  # fmt: skip
    return results


def _bulk_ledger(results: dict) -> dict | None:
    """The ledger figures of a bulk run's gateways (``fleet``: eps, worst window spend,
    refusals), in ledger.json's shape; None for any other run. The worst spend includes
    the accounts rebuilt from the store for a shard that left no ledgers
    (``fleet.reconstructed_accounts``, docs/scaling.md "A gateway shard that dies")."""
    fleet = results.get("fleet")
    if results.get("kind") != "bulk-stream" or not isinstance(fleet, dict):
        return None
    worst = fleet.get("max_window_spent")
    rebuilt = fleet.get("reconstructed_accounts")
    if isinstance(rebuilt, dict) and isinstance(rebuilt.get("max_window_spent"), int | float):
        worst = max(worst or 0.0, rebuilt["max_window_spent"])
    return {"eps": fleet.get("eps"), "w": (results.get("plan") or {}).get("w"),
            "max_window_spent": worst,
            "refusals": fleet.get("ledger_refusals", 0)}  # fmt: skip


def _what_ran(results: dict) -> str:
    scenario = results.get("scenario") or {}
    name = scenario.get("name") or results.get("run", "run")
    partitions = results.get("partitions")
    if isinstance(partitions, int) and not results.get("stream") and not _is_cadr(results):
        return (
            f"{name}: the coordinator of {_num(results['partitions'])} collector partitions "
            f"over {_num(results.get('devices'))} devices (each partition's results are in "
            "its own directory)"
        )
    if _is_cadr(results):
        return (
            f"{name}: CADR-LDP degree release ({results.get('method')}, ε = "
            f"{_num(results.get('eps'))}) over {_num(results.get('devices'))} devices and "
            f"{_num(results.get('edges'))} edges"
        )
    stream = results.get("stream") or {}
    mechanism = stream.get("mechanism", "?")
    parts = [f"{name}: {_num(results.get('devices'))} devices × {_num(stream.get('steps'))} steps"]
    if mechanism == "raw":
        gcdp = results.get("gcdp") or {}
        parts.append(
            f"readings in the clear to a GC-DP central release ({gcdp.get('method', 'gcdp')}, "
            f"ε_rel = {_num(gcdp.get('eps_rel'))} per {_num(gcdp.get('window'))}-step window)"
        )
    else:
        parts.append(
            f"{mechanism}, ε = {_num(stream.get('eps'))} over any {_num(stream.get('w'))} steps"
        )
    reconstruction = results.get("reconstruction")
    if reconstruction:
        parts.append(f"{reconstruction.get('method')} reconstruction")
    secure = results.get("secure_sum")
    if secure:
        parts.append(
            f"secure sum of {_num(secure.get('dim'))}-entry vectors ({secure.get('graph')})"
        )
    if results.get("faults"):
        parts.append("injected faults")
    gateways = results.get("gateways")
    if results.get("kind") == "bulk-stream" and isinstance(gateways, int):
        parts.append(f"{gateways:,} bulk gateway{'s' if gateways != 1 else ''}")
    return ", ".join(parts)


def _status(results: dict) -> tuple[str, str]:
    """(css class, text) of the run's outcome."""
    aborted = results.get("aborted")
    if aborted:
        detail = aborted.get("detail") if isinstance(aborted, dict) else aborted
        return "bad", f"aborted: {detail}"
    secure = results.get("secure_sum") or {}
    if secure.get("aborted"):
        return "bad", f"secure sum aborted: {secure['aborted']}"
    lost = results.get("reports_lost")
    if lost:
        return "bad", f"incomplete: {_num(lost)} reports lost"
    complete, devices = results.get("devices_complete"), results.get("devices")
    if complete is not None and devices is not None and complete != devices:
        return "warn", f"{_num(devices - complete)} devices did not finish"
    if results.get("trace_complete") is False and results.get("trace_incomplete_reason"):
        return "warn", f"the trace is incomplete: {results['trace_incomplete_reason']}"
    return "ok", "complete"


def _accuracy_figures(results: dict) -> list[str]:
    figures = []
    accuracy = private_device_accuracy(results)
    if accuracy is not None:
        figures.append(f"mean abs error of the device means {device_means_text(accuracy)}")
        average = fleet_average_text(accuracy.get("fleet_average"))
        if average:
            figures.append(f"fleet average (private) {average}")
    reconstruction = results.get("reconstruction") or {}
    if reconstruction.get("period_accuracy") is not None:
        figures.append(f"period accuracy {100 * reconstruction['period_accuracy']:.0f} %")
    if reconstruction.get("mean_cosine_distance") is not None:
        figures.append(cosine_distance_text(reconstruction))
    secure = results.get("secure_sum") or {}
    if secure and not secure.get("aborted"):
        if secure.get("exact") is None:  # a collector side: the vectors are the fleet's
            figures.append(
                f"secure sum over {_num(secure.get('survivors'))} survivors (exactness not "
                "known here: the devices' vectors are on the fleet side; see the merged run)"
            )
        else:
            figures.append(
                f"secure sum {'exact' if secure['exact'] else 'NOT exact'} over "
                f"{_num(secure.get('survivors'))} survivors"
            )
    gcdp = (results.get("gcdp") or {}).get("accuracy") or {}
    if gcdp.get("mae") is not None:
        figures.append(f"GC-DP window-mean {release_mae_text(gcdp)}")
    if _is_cadr(results):
        figures.append(
            f"degree MAE {_num(results.get('mae'), 3)}{_cadr_baseline_text(results)}, "
            f"MSE {_num(results.get('mse'), 3)}, "
            f"distribution L1 {_num(results.get('distribution_l1'), 3)}"
        )
    return figures


def _cadr_baseline_text(results: dict) -> str:
    """The baselines beside a CADR-LDP release's MAE in the headline (the user trial: the
    outcome line gave the MAE alone; on a 60-node graph it equalled the oracle's): the
    true median for every node (a non-private oracle) and 0 for every node, as results.json
    ``baselines`` scores them; "" when the run has none."""
    baselines = results.get("baselines")
    if not isinstance(baselines, dict):
        return ""
    parts = []
    oracle = (baselines.get("constant_median_oracle") or {}).get("mae")
    zeros = (baselines.get("all_zero") or {}).get("mae")
    if isinstance(oracle, int | float) and not isinstance(oracle, bool):
        parts.append(f"the true median for every node, a non-private oracle: {_num(oracle, 3)}")
    if isinstance(zeros, int | float) and not isinstance(zeros, bool):
        parts.append(f"0 for every node: {_num(zeros, 3)}")
    return f" ({'; '.join(parts)})" if parts else ""


class SideLedgers(NamedTuple):
    """A collector side's directory without a ledger and the fleet shards' directories of
    its run found beside it (maybe none): where its devices' ledgers are."""

    out: Path
    shards: list[Path]


def _side_ledger_text(results: dict, side: SideLedgers | None) -> str | None:
    """What a collector side has instead of a ledger (None: not a collector side): it
    said "no ledger", as if nothing had been accounted, while every device's ledger is in
    its fleet shard's directory."""
    if side is None:
        return None
    shards, run_dir = side.shards, shlex.quote(str(side.out))
    text = (
        "no ledger here: this is the collector side of a run of separate processes, and the "
        "privacy ledgers live with the devices (each fleet shard's --out holds its "
        "ledger.json); "
    )
    if shards:
        listed = " ".join(shlex.quote(str(d)) for d in shards)
        return text + (
            f"found {len(shards)} shard director{'y' if len(shards) == 1 else 'ies'} of run "
            f"{results.get('run')} beside it: `ldpfleet report {run_dir} {listed}` merges "
            "their ledgers into the report"
        )
    return text + f"`ldpfleet report {run_dir} FLEET_DIR...` merges them into the report"


def _privacy_text(results: dict, ledger: dict | None, side: SideLedgers | None = None) -> str:
    worst, _, eps, refusals = _spending(ledger)
    if eps is None and not worst:
        return _side_ledger_text(results, side) or "no ledger"
    top = (ledger or {}).get("max_window_spent", max(worst, default=None))
    if _is_cadr(results):
        budget = f"ε = {_num(eps)} per device (total)"
    elif (results.get("stream") or {}).get("mechanism") == "raw":
        gcdp = results.get("gcdp") or {}
        budget = (
            f"central: ε_rel = {_num(gcdp.get('eps_rel'))} per window, nothing spent on devices"
        )
        return f"{budget}; {_num(refusals)} refusals"
    else:
        budget = f"ε = {_num(eps)} per {_num((ledger or {}).get('w'))}-step window"
    if top is None:
        spend = "nothing spent"
    elif eps is not None and _at_budget(top, eps):
        spend = f"worst spend {_num(top)} (= the budget)"
    elif eps is not None and top > eps:
        spend = f"worst spend {_num(top)}: OVER the budget"
    else:
        spend = f"worst spend {_num(top)}"
    return f"{budget}; {spend}; {_num(refusals)} refusals"


def _time_text(results: dict) -> str:
    seconds = results.get("seconds")
    parts = [f"{_num(seconds, 3)} s wall" if isinstance(seconds, int | float) else "—"]
    stream = (results.get("stages") or {}).get("stream") or {}
    if isinstance(stream.get("seconds"), int | float):
        parts.append(f"stream stage {_num(stream['seconds'], 3)} s")
    return ", ".join(parts)


def _clipped_text(results: dict) -> str:
    """The share of raw readings the public bounds clipped (scenarios.clipping), and its
    warnings, marked bad."""
    text = html.escape(
        f"{100 * results['clipped_share']:.1f} % of the readings were outside the public "
        "bounds (simulator-only truth)"
    )
    warnings = [w for w in results.get("warnings", []) if "clipped" in w]
    if warnings:
        text += f': <span class="bad">{html.escape(" ".join(warnings))}</span>'
    return text


def _headline(results: dict, ledger: dict | None, side: SideLedgers | None = None) -> str:
    results = _with_counters(results)
    ledger = ledger if ledger is not None else _bulk_ledger(results)
    klass, status = _status(results)
    rows = [("outcome", f'<span class="{klass}">{html.escape(status)}</span>')]
    rows.append(("ran", html.escape(_what_ran(results))))
    rows.append(("broker", html.escape(_broker_text(results))))
    if results.get("devices_complete") is not None:
        rows.append((
            "devices complete",
            f"{_num(results['devices_complete'])} / {_num(results.get('devices'))}",
        ))  # fmt: skip
    if results.get("reports_expected") is not None:
        lost = results.get("reports_lost") or 0
        withdrawn = results.get("reports_withdrawn") or 0  # devices stopped by a rejection
        rows.append((
            "reports lost",
            f'<span class="{"bad" if lost else "ok"}">{_num(lost)}</span> of '
            f"{_num(results['reports_expected'])} ({_num(results.get('reports_rejected', 0))} "
            "rejected" + (f", {_num(withdrawn)} withdrawn" if withdrawn else "") + ")",
        ))  # fmt: skip
    figures = _accuracy_figures(results)
    if figures:
        rows.append(("accuracy", html.escape("; ".join(figures))))
    if results.get("clipped_share") is not None:
        rows.append(("clipped", _clipped_text(results)))
    rows.append(("privacy", html.escape(_privacy_text(results, ledger, side))))
    rows.append(("time", html.escape(_time_text(results))))
    items = "".join(f"<dt>{key}</dt><dd>{value}</dd>" for key, value in rows)
    return f'<dl class="headline" aria-label="result">{items}</dl>'


# sections -------------------------------------------------------------------------------


# [cadr] keys only a negotiating method reads (NDOE's parts, LPEA's round cap, the relay
# phases' deadline): method clip runs the θ search (fanout, spacing) and DSR, no relay phase
# (protocol/cadr_budget.py, "Method clip"; collector/cadr_fleet.py)
NEGOTIATION_ONLY_CADR_KEYS = ("ndoe_parts", "max_rounds", "peer_deadline_seconds")


def _idle_cadr_keys(results: dict, spec: dict) -> dict[str, str]:
    """The [cadr] keys the run's method does not read, each with the note its value gets
    in the scenario-keys table: the negotiation-only keys under a method that does not
    negotiate (clip). The method is results.json's (resolved), else the scenario's
    resolved by its pipeline (an interrupted run); none known: nothing is marked."""
    from ldpfleet.protocol.cadr_budget import negotiates, resolve_method
    from ldpfleet.protocol.errors import ParameterError

    cadr = spec.get("cadr")
    if not isinstance(cadr, dict):
        return {}
    method = results.get("method")
    if not isinstance(method, str):
        try:
            method = resolve_method(
                str(cadr.get("method", "auto")), str(cadr.get("pipeline", "dp"))
            )
        except ParameterError:
            return {}
    if negotiates(method):
        return {}
    return dict.fromkeys(NEGOTIATION_ONLY_CADR_KEYS, f"not used by method {method}")


def _cadr_method_text(method: object, results: dict) -> object:
    """The ``[cadr] method`` row: the scenario's method, and the one the run used where
    they differ (``auto (this run: clip)``: results.json's resolved ``method``), as the
    broker URL row says ``(this run: ..., from --broker)``. No resolved method (an
    interrupted run): the scenario's, nothing guessed."""
    resolved = results.get("method")
    if isinstance(resolved, str) and resolved != method:
        return f"{method} (this run: {resolved})"
    return method


def _scenario_section(results: dict) -> str:
    scenario = results.get("scenario", {})
    spec = scenario.get("spec", {})
    rows = [
        ("name", scenario.get("name")),
        ("description", spec.get("scenario", {}).get("description") or None),
        ("file", scenario.get("path")),
        ("seed", scenario.get("seed", spec.get("scenario", {}).get("seed"))),
        ("run", results.get("run")),
        ("broker used", _broker_text(results)),
    ]
    rows = [(key, value) for key, value in rows if value is not None]
    used = results.get("broker")
    used_kind = used.get("kind") if isinstance(used, dict) else used
    idle = _idle_cadr_keys(results, spec)
    spec_rows = []
    for name, section in spec.items():
        if not isinstance(section, dict):
            continue
        for key, value in section.items():
            if value is None:  # shown: the table is the scenario as run
                value = "none"
            elif name == "broker" and key == "url" and used_kind and value != used_kind:
                value = f"{value} (this run: {used_kind}, from --broker)"
            elif name == "cadr" and key == "method":
                value = _cadr_method_text(value, results)
            if name == "cadr" and key in idle:
                value = f"{_fmt(value)} ({idle[key]})"
            elif name == "cpr" and isinstance(spec.get("cadr"), dict):
                value = f"{_fmt(value)} (not used by a CADR run)"
            spec_rows.append((f"[{name}] {key}", value))
    keys = (
        f"<details><summary>Scenario keys ({len(spec_rows)}, defaults included)</summary>"
        + _table(spec_rows, ("key", "value"))
        + "</details>"
    )
    return "<h2>Scenario</h2>" + _table(rows, ("item", "value")) + keys


def _stage_seconds(stage: dict):
    for key in ("seconds", "calibration_seconds"):
        if isinstance(stage.get(key), int | float):
            return stage[key]
    return None


def _timing_section(results: dict) -> str:
    stages = results.get("stages") or {}
    rows = [
        (name, stage.get("status"), _stage_seconds(stage), stage.get("close_reason") or "")
        for name, stage in stages.items()
        if isinstance(stage, dict)
    ]
    # a CADR-LDP run reports its stages as name -> seconds
    rows += [
        (name, "ok", seconds, "")
        for name, seconds in (results.get("stage_seconds") or {}).items()
        if isinstance(seconds, int | float)
    ]
    if not rows:
        return ""
    return "<h2>Timing per stage</h2>" + _table(rows, ("stage", "status", "seconds", "note"))


def _trace_note(results: dict) -> str:
    """What the trace kept, when it is not every message."""
    spec = (results.get("scenario") or {}).get("spec") or {}
    mode = (
        ((spec.get("cadr") or {}).get("trace") if _is_cadr(results) else None)
        or (spec.get("collector") or {}).get("trace")
        or (results.get("trace") or {}).get("mode")  # a bulk run's
    )
    if mode == "control":
        total = ""
        if _is_cadr(results) and results.get("device_messages_up") is not None:
            total = (
                f" The devices exchanged {_num(results['device_messages_up'])} messages up and "
                f"{_num(results.get('device_messages_down'))} down; the trace holds the "
                "control messages among them."
            )
        return (
            "<p class='note'>The trace kept control messages only (<code>trace = "
            '"control"</code>): stages, rejections and releases, not the data messages '
            "(reports, acks, peer messages)."
            f"{html.escape(total)}</p>"
        )
    if mode == "none":
        return "<p class='note'>The trace was off for this run (<code>trace = \"none\"</code>).</p>"
    return ""


def _volume_section(trace: Path, results: dict) -> str:
    if not trace.exists():
        return ""
    from ldpfleet.broker.trace import open_readonly  # a partitioned run: every trace file

    db = open_readonly(trace.parent if trace.name == "trace.sqlite" else trace)
    with contextlib.closing(db):
        rows = db.execute(
            "SELECT kind, COUNT(*), SUM(bytes) FROM messages GROUP BY kind ORDER BY 2 DESC"
        ).fetchall()
        span_row = db.execute("SELECT MIN(time), MAX(time) FROM messages").fetchone()
        start, end = span_row if span_row and span_row[0] is not None else (0.0, 0.0)
        span = (end - start) or 1.0
        width = span / 40
        # per kind and 1/40th of the run: counted in SQLite (no row per message in Python)
        counts = db.execute(
            "SELECT kind, MIN(CAST((time - ?) / ? AS INTEGER), 39), COUNT(*) FROM messages "
            "GROUP BY 1, 2",
            (start, width),
        ).fetchall()
    note = _trace_note(results)
    if not rows:
        return "<h2>Messages</h2>" + note + "<p>The trace is empty.</p>"
    series: dict[str, list[int]] = {}
    for kind, index, count in counts:
        series.setdefault(kind, [0] * 40)[int(index)] += count
    shown = [kind for kind, _, _ in rows[:8]]

    def draw(fig, axes):
        ax = axes[0, 0]
        x = [width * (i + 0.5) for i in range(40)]
        for kind in shown:
            ax.plot(x, series.get(kind, [0] * 40), label=kind)
        ax.set_xlabel("seconds since the first message")
        ax.set_ylabel(f"messages per {_num(width, 3)} s")
        ax.set_ylim(bottom=0)
        fig.legend(loc="outside upper center", ncol=4, frameon=False)

    caption = (
        f"Messages recorded per {_num(width, 3)} s over the run, by kind "
        f"({'the 8 most frequent kinds' if len(rows) > 8 else 'every kind'})."
    )
    return (
        "<h2>Messages</h2>"
        + note
        + _table(rows, ("kind", "messages", "bytes"))
        + _figure(draw, (8, 3.0), "message volume over time, by kind", caption)
    )


def _central_rows(ledger: dict) -> list[tuple]:
    """The ledger rows of a run whose devices stream raw readings (``mechanism = "raw"``,
    a GC-DP central release): the devices spend nothing, the collector's release account
    is charged ε_rel per window (docs/gcdp-fleet.md "Accounting")."""
    collector = ledger.get("collector") or {}
    account = (collector.get("accounts") or {}).get("gcdp_release") or {}
    eps_rel = collector.get("eps_rel", account.get("eps"))
    refusals = account.get("refusals", 0) + sum(
        a.get("refusals", 0)
        for entry in _ledger_devices(ledger).values()
        for a in entry.get("accounts", {}).values()
    )
    return [
        ("device budget ε", "0 (raw readings: nothing privatised on the devices)"),
        ("devices' worst spend", max(_spending(ledger)[0], default=None)),
        ("central release ε_rel per window", eps_rel),
        ("release window (steps)", ledger.get("w")),
        ("calibration ε_cal", collector.get("eps_cal")),
        ("per-record loss (ε_cal + ε_rel)", collector.get("per_record_loss")),
        ("worst spent per window (collector)", account.get("max_window_spent")),
        ("windows released (charges)", account.get("charges")),
        ("within budget", ledger.get("within_budget")),
        ("refusals", refusals),
        ("devices", len(_ledger_devices(ledger))),
    ]


def _ledger_section(results: dict, ledger: dict | None, side: SideLedgers | None = None) -> str:
    """The privacy ledger: a collector side's note on where its ledgers are, a central
    release's rows, or the devices' budget and spending (a table, then the worst and the
    total spend per device drawn or, when every device spent the same, said)."""
    if not ledger:
        side = _side_ledger_text(results, side)
        if side is None:
            return ""
        return f"<h2>Privacy ledger</h2><p class='note'>{html.escape(side)}</p>"
    if (results.get("stream") or {}).get("mechanism") == "raw":
        note = (
            "<p class='note'>The devices streamed clipped readings in the clear to the trusted "
            "collector and spent nothing; the collector's GC-DP release was charged ε_rel per "
            "window. Windows are disjoint, so a reading's loss is ε_cal + ε_rel; the total "
            "charged sums disjoint windows and is not a per-reading loss.</p>"
        )
        return "<h2>Privacy ledger</h2>" + _table(_central_rows(ledger), ("item", "value")) + note
    worst, total, eps, refusals = _spending(ledger)
    cadr = _is_cadr(results)
    rows = _ledger_rows(ledger, cadr, worst, eps, refusals)
    out = "<h2>Privacy ledger</h2>" + _table(rows, ("item", "value"))
    if not worst:
        return out
    out += _worst_spend_part(worst, eps, cadr)
    if not cadr and total:
        out += _total_spend_part(total)
    return out


def _ledger_rows(
    ledger: dict, cadr: bool, worst: list[float], eps: float | None, refusals: int
) -> list[tuple]:
    """The ledger table of a run whose devices privatise: budget, window, the fleet's worst
    spend, whether it is within budget, refusals and devices."""
    devices = _ledger_devices(ledger)
    top = ledger.get("max_window_spent", max(worst, default=None))
    return [
        ("budget ε", eps),
        ("window w", ledger.get("w", "(total budget)" if cadr else None)),
        ("worst spent (fleet)", top),
        ("within budget", ledger.get("within_budget", None if top is None or eps is None
                                     else top <= eps or _at_budget(top, eps))),
        ("refusals", refusals),
        ("devices", len(devices)),
    ]  # fmt: skip


def _worst_spend_part(worst: list[float], eps: float | None, cadr: bool) -> str:
    """Each device's worst window (a CADR run: its account) against the budget: a sentence
    when every device spent the budget or the same amount, else a histogram."""
    label = "ε spent of the total budget" if cadr else "worst w-window ε spent"
    where = "account" if cadr else "window"
    if eps is not None and all(_at_budget(v, eps) for v in worst):
        return (
            f"<p class='note'>Every one of the {len(worst):,} devices spent exactly its "
            f"budget ε = {_num(eps)} in its worst {where} (up to float rounding).</p>"
        )
    if max(worst) - min(worst) <= 1e-9 * max(1.0, abs(max(worst))):
        return (
            f"<p class='note'>Every one of the {len(worst):,} devices spent ε = "
            f"{_num(max(worst))} in its worst {where} (budget ε = {_num(eps)}).</p>"
        )

    def draw(fig, axes):
        ax = axes[0, 0]
        edges, clipped = spend_bins(worst, eps)
        ax.hist(clipped, bins=edges, color="#228833")
        ax.set_xlabel(f"{label}, per device")
        ax.set_ylabel("devices")
        if eps is not None:
            ax.axvline(eps, color="#a11", linestyle="--", label=f"budget ε = {_num(eps)}")
            ax.legend()

    return _figure(
        draw,
        (6, 2.8),
        f"histogram of the {label} per device",
        f"{label.capitalize()} per device; the dashed line is the budget.",
    )


def _total_spend_part(total: list[float]) -> str:
    """The total ε charged per device over the stream: a sentence when every device was
    charged the same, else a histogram."""
    low, high = min(total), max(total)
    if high - low <= 1e-9 * max(1.0, abs(high)):
        return (
            f"<p class='note'>Every device was charged ε = {_num(high)} in total over the "
            "stream (the sum over all its reports; the guarantee is per window).</p>"
        )

    def draw_total(fig, axes):
        ax = axes[0, 0]
        ax.hist(total, bins=20, color="#66ccee")
        ax.set_xlabel("total ε charged over the stream, per device")
        ax.set_ylabel("devices")

    return _figure(
        draw_total,
        (6, 2.6),
        "histogram of the total epsilon charged per device",
        "Total ε charged over the stream per device (the guarantee is per window).",
    )


def spend_bins(spent: list[float], eps: float | None) -> tuple[list[float], list[float]]:
    """Histogram edges for the ε spent per device, and the values to draw: the last bin
    ends AT the budget, so a spend equal to ε up to float rounding (w charges of ε / w sum
    to 2.0000000000000284 for ε = 2) is drawn left of the budget line, never beyond it;
    a real overspend extends the axis past the line."""
    high = max(spent)
    right = eps if eps is not None and high <= eps * (1 + 1e-9) else high
    left = min(0.0, min(spent))
    edges = [left + (right - left) * i / 20 for i in range(21)]
    return edges, [min(v, right) for v in spent]


def _accuracy_section(results: dict) -> str:
    per_device = results.get("per_device") or {}
    pairs = [
        (d["true_mean"], d["mean_estimate"])
        for d in per_device.values()
        if isinstance(d, dict) and d.get("mean_estimate") is not None and "true_mean" in d
    ]
    if not pairs:
        return ""
    accuracy = results.get("accuracy") or {}
    units = "([0, 1] units)" if "[0, 1]" in str(accuracy.get("metric", "")) else "(source units)"

    def draw(fig, axes):
        ax = axes[0, 0]
        truth = [p[0] for p in pairs]
        estimate = [p[1] for p in pairs]
        ax.scatter(truth, estimate, s=10)
        low, high = min(*truth, *estimate), max(*truth, *estimate)
        ax.plot([low, high], [low, high], color="#888", linewidth=1, label="estimate = truth")
        ax.set_xlabel(f"true mean of the clipped stream {units}")
        ax.set_ylabel(f"estimated mean {units}")
        ax.legend()

    rows = [(k, v) for k, v in accuracy.items()]
    rows += [
        ("reports received / expected", f"{_num(results.get('reports_received'))} / "
         f"{_num(results.get('reports_expected'))}"),
        ("reports lost", results.get("reports_lost")),
        ("reports rejected", results.get("reports_rejected")),
        ("devices stopped by a rejection", results.get("devices_rejected")),
    ]  # fmt: skip
    return (
        "<h2>Stream accuracy</h2>"
        + _table(rows, ("item", "value"))
        + _figure(
            draw,
            (4.8, 4),
            "scatter of true against estimated device means",
            f"Each device's mean estimated from its privatised reports against its true "
            f"mean ({len(pairs):,} devices); the grey line is a perfect estimate.",
        )
    )


def _cpr_section(results: dict, out: Path) -> str:
    reconstruction = results.get("reconstruction")
    if not reconstruction:
        return ""
    rows = list(reconstruction.items())
    html_out = "<h2>CPR reconstruction</h2>" + _table(rows, ("item", "value"))
    per_device = results.get("per_device") or {}
    periods = [
        (d.get("period_true"), d.get("period_hat"))
        for d in per_device.values()
        if isinstance(d, dict) and d.get("period_hat") is not None
    ]
    periods = [(t, h) for t, h in periods if t is not None]
    if periods:

        def draw_periods(fig, axes):
            ax = axes[0, 0]
            truth, found = [p[0] for p in periods], [p[1] for p in periods]
            ax.scatter(truth, found, s=12, alpha=0.6)
            ax.plot([min(truth), max(truth)], [min(truth), max(truth)], color="#888")
            ax.set_xlabel("true period (steps)")
            ax.set_ylabel("detected period (steps)")

        html_out += _figure(
            draw_periods,
            (4.5, 3.8),
            "scatter of true against detected periods",
            f"Period confusion over {len(periods):,} devices: points on the grey line are "
            "periods found exactly.",
        )
    path = out / "reconstructions.npz"
    if path.exists():
        html_out += _cpr_series(path, out / "truth_sample.npz")
    return html_out


def _load_npz(path: Path):
    """An .npz output of the run; ``TraceError`` (one sentence) when it is not one (a run
    stopped while writing it, a stray file): numpy's ValueError or BadZipFile traceback
    before."""
    import zipfile

    import numpy as np
    from ldpfleet.broker.trace import TraceError

    try:  # from bytes: numpy leaves its file open when the zip cannot be read
        data = np.load(io.BytesIO(path.read_bytes()), allow_pickle=False)
        names = data.files
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as error:
        raise TraceError(
            f"{path} cannot be read as a NumPy .npz file ({type(error).__name__}); was the "
            "run stopped while writing it? run it again"
        ) from None
    if not isinstance(names, list):
        raise TraceError(f"{path} cannot be read as a NumPy .npz file")
    return data


def _cpr_series(path: Path, truth_path: Path) -> str:
    """Sample reconstructions against the truth: the first ``CPR_WINDOW`` steps drawn at a
    readable scale, and an overview of the whole stream (block means) with the window
    marked."""
    series = _cpr_sample_series(path, truth_path)
    if not series:
        return ""
    length = max(len(r) for r, _ in series.values())
    window = min(length, CPR_WINDOW)
    out = _cpr_window_figure(series, length, window)
    if length <= window:
        return out
    return out + _cpr_overview_figure(series, length, window)


def _cpr_sample_series(path: Path, truth_path: Path) -> dict:
    """Up to three sample devices' reconstructions and their truth (None when the run saved
    none for the device), as flat float arrays, in the npz file's order; preferring devices
    whose truth was saved."""
    import numpy as np

    data = _load_npz(path)
    truth = _load_npz(truth_path) if truth_path.exists() else None
    names = [n for n in data.files if "." not in n]
    if truth is not None:
        names = [n for n in names if n in truth.files] or names
    names = names[:3]
    return {
        n: (
            np.asarray(data[n], dtype=float).ravel(),
            np.asarray(truth[n], dtype=float).ravel()
            if truth is not None and n in truth.files
            else None,
        )
        for n in names
    }


def _cpr_window_figure(series: dict, length: int, window: int) -> str:
    """The first ``window`` steps of each sample reconstruction against its truth."""
    names = list(series)

    def draw_window(fig, axes):
        for ax, name in zip(axes[:, 0], names, strict=False):
            recon, real = series[name]
            if real is not None:
                ax.plot(real[:window], linewidth=1, color="#999", label="truth (simulator)")
            ax.plot(recon[:window], linewidth=1.2, label="reconstruction")
            ax.set_ylabel(f"{name}\nvalue")
        fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside upper center",
                   ncol=2, frameon=False)  # fmt: skip
        axes[-1, 0].set_xlabel("step")

    return _figure(
        draw_window,
        (8, 1.7 * len(names) + 0.4),
        "reconstructions against the truth for sample devices, first steps",
        f"Reconstruction (blue) against the truth (grey) for {len(names)} sample devices: the "
        f"first {window:,} of {length:,} steps.",
        nrows=len(names),
        sharex=True,
    )


def _cpr_overview_figure(series: dict, length: int, window: int) -> str:
    """The whole of each sample stream as means over blocks (about ``OVERVIEW_POINTS``
    points), the first ``window`` steps shaded."""
    import numpy as np

    names = list(series)
    block = max(1, math.ceil(length / OVERVIEW_POINTS))

    def blocks(values):
        usable = len(values) // block * block
        return values[:usable].reshape(-1, block).mean(axis=1)

    def draw_overview(fig, axes):
        for ax, name in zip(axes[:, 0], names, strict=False):
            recon, real = series[name]
            x = (np.arange(len(blocks(recon))) + 0.5) * block
            if real is not None:
                ax.plot((np.arange(len(blocks(real))) + 0.5) * block, blocks(real),
                        linewidth=1, color="#999", label="truth")  # fmt: skip
            ax.plot(x, blocks(recon), linewidth=1, label="reconstruction")
            ax.axvspan(0, window, color="#ffcc66", alpha=0.3, label="window above")
            ax.set_ylabel(f"{name}\nmean")
        fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside upper center",
                   ncol=3, frameon=False)  # fmt: skip
        axes[-1, 0].set_xlabel("step")

    return _figure(
        draw_overview,
        (8, 1.2 * len(names) + 0.5),
        "overview of the whole reconstructed streams",
        f"Overview of all {length:,} steps: means over blocks of {block} steps (the shaded "
        "part is the window drawn above).",
        nrows=len(names),
        sharex=True,
    )


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
    received = collector.get("messages_in") or {}
    aborted = collector.get("state") == "aborted"

    def taking_part(key: str, tag: str):
        """The devices of a round: the server's set, or, for the round whose close aborted
        the session (its set stays empty), the replies it had received (held-out QA,
        helper T: "MaskedInput 0" beside 5 masked inputs received)."""
        value = collector.get(key)
        return received.get(tag) or value if aborted and not value else value

    rounds = [
        (name, taking_part(key, tag), stages.get(stage))
        for name, key, tag, stage in (
            ("AdvertiseKeys", "advertised", "sa_advertise", "advertise"),
            ("ShareKeys", "shared", "sa_shares", "share"),
            ("MaskedInput", "masked", "sa_masked", "masked"),
            ("Unmask", "unmasked", "sa_unmask", "unmask"),
        )
    ]
    counts = [r[1] or 0 for r in rounds]

    def draw(fig, axes):
        ax = axes[0, 0]
        ax.bar([r[0] for r in rounds], counts, color="#aa3377")
        ax.set_xlabel("round")
        ax.set_ylabel("devices taking part")
        ax.set_ylim(0, max([*counts, 1]) * 1.15)

    return (
        "<h2>Secure aggregation</h2>"
        + _table(rows, ("item", "value"))
        + _table(rounds, ("round", "devices", "seconds"))
        + _figure(
            draw,
            (6, 2.8),
            "bar chart of devices taking part per secure aggregation round",
            "Devices taking part in each secure-aggregation round (dropouts leave between "
            "rounds; in the round whose close aborted the session, the replies received).",
        )
    )


def _cadr_section(results: dict) -> str:
    """CADR-LDP: the release's table and its baselines, true against released degrees,
    and the θ search's error model against θ with this run's raw DSR release marked."""
    figure = degree_figure_inputs(results)
    if figure is None:
        return ""
    rows = [
        (k, results.get(k))
        for k in ("method", "eps", "alpha", "theta", "theta_rule", "mae", "mse", "seconds")
        if k in results
    ]
    out = (
        "<h2>CADR-LDP degree release</h2>"
        + _table(rows, ("item", "value"))
        + release_vs_baselines(results)
        + _degree_histogram(figure)
    )
    if isinstance(figure.eps_dsr, int | float) and figure.eps_dsr > 0:
        out += _theta_model_figure(results, figure)
    return out


def _degree_histogram(figure) -> str:
    """Histograms of the true and the released degrees (up to the 99th percentile)."""
    import numpy as np

    degrees, released = figure.degrees, figure.released

    def draw(fig, axes):
        ax = axes[0, 0]
        top = float(np.percentile(np.concatenate([degrees, released]), 99)) + 1
        bins = np.linspace(min(0.0, released.min()), top, 40)
        ax.hist(degrees, bins=bins, alpha=0.6, label="true degree")
        ax.hist(released, bins=bins, alpha=0.6, label=figure.label)
        ax.set_xlabel("degree (edges per device)")
        ax.set_ylabel("devices")
        ax.legend()

    return _figure(
        draw,
        (7, 3),
        "histograms of true and released degrees",
        f"True against released degrees over {len(degrees):,} devices (up to the 99th percentile).",
    )


def _theta_model_figure(results: dict, figure) -> str:
    """The error model the θ search minimises, against θ, with the run's raw DSR release
    (its θ and MAE) marked; ``figure.eps_dsr`` is positive."""
    import numpy as np

    degrees = figure.degrees
    theta, eps_dsr, mae = results.get("theta"), figure.eps_dsr, figure.model_mae
    # the error model θ is chosen by (collector.theta_search.local_error): projection
    # loss max(d - θ, 0) plus the DSR noise scale θ / ε_dsr, averaged over the true
    # degrees, against the MAE of the run's raw DSR release at its θ
    thetas = np.arange(1, int(degrees.max()) + 2)
    model = [float(np.mean(np.maximum(degrees - t, 0) + t / eps_dsr)) for t in thetas]
    chosen_by = results.get("theta_chosen_by", "search")
    searched = chosen_by == "search"
    how_chosen = (
        "given in the configuration"
        if chosen_by == "configured"
        else "chosen by the public small-fleet rule"
    )
    model_label = (
        "expected error (model the θ search minimises)"
        if searched
        else f"expected error (the θ search's model; no search ran: θ {chosen_by})"
    )

    def draw_theta(fig, axes):
        ax = axes[0, 0]
        ax.plot(thetas, model, label=model_label)
        if isinstance(theta, int) and isinstance(mae, int | float):
            ax.scatter([theta], [mae], color="#a11", zorder=3,
                       label=f"this run: θ = {theta}, raw DSR MAE {mae:.2f}")  # fmt: skip
        ax.set_xlabel("θ (degree threshold, edges)")
        ax.set_ylabel("mean absolute error (edges)")
        ax.set_yscale("log")
        ax.legend()

    return _figure(
        draw_theta,
        (7, 2.8),
        "expected error against the threshold theta",
        (
            "The error model the θ search minimises, against θ; the red point is this run's "
            "raw DSR release."
        )
        if searched
        else (
            f"The error model a θ search would minimise, against θ (none ran: θ was "
            f"{how_chosen}); "
            "the red point is this run's raw DSR release."
        ),
    )


def _public_baseline_rows(baseline: object) -> list[tuple[str, object]]:
    """results.json ``gcdp.public_baseline`` as rows (per-node lists as their mean): the
    free baseline beside the release (the section skipped every dict, so report.html never
    showed it; helper N)."""
    if not isinstance(baseline, dict):
        return []
    return [
        (
            f"public baseline: {key}",
            f"mean {math.fsum(value) / len(value):.4g} over {len(value)} nodes"
            if isinstance(value, list) and value
            else value,
        )
        for key, value in baseline.items()
    ]


def _gcdp_section(results: dict) -> str:
    gcdp = results.get("gcdp")
    if not gcdp:
        return ""
    rows = [(k, v) for k, v in gcdp.items() if v is not None and not isinstance(v, dict)]
    rows = [(k, v) for k, v in rows if not (isinstance(v, list) and k in ("released",))]
    rows += [(f"accuracy: {k}", v) for k, v in (gcdp.get("accuracy") or {}).items()]
    rows += _public_baseline_rows(gcdp.get("public_baseline"))
    out = "<h2>GC-DP central release</h2>" + _table(rows, ("item", "value"))
    budgets, utility = gcdp.get("budgets"), gcdp.get("utility")
    if isinstance(budgets, list) and budgets:
        both = isinstance(utility, list) and len(utility) == len(budgets)

        def draw(fig, axes):
            axes[0, 0].bar(range(len(budgets)), budgets, color="#ee6677")
            axes[0, 0].set_xlabel("coordinate (device index)")
            axes[0, 0].set_ylabel("ε per window")
            axes[0, 0].set_title("budget per coordinate")
            if both:
                axes[0, 1].bar(range(len(utility)), utility, color="#4477aa")
                axes[0, 1].set_xlabel("coordinate (device index)")
                axes[0, 1].set_ylabel("utility weight")
                axes[0, 1].set_title("utility weight per coordinate")

        out += _figure(
            draw,
            (5 * (2 if both else 1), 2.8),
            "GC-DP budgets per coordinate",
            "How the release's ε_rel per window is allocated across the coordinates (one per "
            "device)" + (", and each coordinate's utility weight." if both else "."),
            ncols=2 if both else 1,
        )
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
        parts.append(_table(list(faults.get("injected", {}).items()), ("injected", "value")))
        parts.append(_table(list(faults.get("outcome", {}).items()), ("outcome", "value")))
    if results.get("missing_batches"):
        parts.append(
            _table(list(results["missing_batches"].items()), ("device", "missing batches"))
        )
    return "<h2>Delivery and faults</h2>" + "".join(parts) if parts else ""


def _audit_entries(path: Path) -> list[dict]:
    """The audits in ``OUT/audit.json``: what ``ldpfleet audit ... > OUT/audit.json``
    printed (one audit, ``audit all``'s list of them, or a document with ``audits``);
    ``TraceError`` (one sentence) for anything else. A list was refused as "not a run's
    results" and an ``audits`` that is not a list gave an empty table."""
    from ldpfleet.broker.trace import TraceError

    if not path.exists():
        return []
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise TraceError(f"{path} cannot be read as JSON ({error})") from None
    if isinstance(document, dict) and "audits" in document:
        document = document["audits"]
        if not isinstance(document, list):
            raise TraceError(f"{path}: 'audits' must be a list of audits, got {document!r:.40}")
    entries = [document] if isinstance(document, dict) else document
    if not isinstance(entries, list) or not all(isinstance(a, dict) for a in entries):
        raise TraceError(
            f"{path} must hold what `ldpfleet audit` printed: an audit or a list of audits "
            f"(JSON objects), got {json.dumps(document)[:40]}"
        )
    return entries


def _audit_section(out: Path) -> str:
    """``OUT/audit.json`` if present (``_audit_entries``): its audits as a table."""
    entries = _audit_entries(out / "audit.json")
    if not entries:
        return ""
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


# the report's sections in page order (after the headline); ``build_report`` reports each
# to its ``progress`` callback before drawing it
SECTIONS = (
    "scenario", "timing", "messages", "ledger", "accuracy", "cpr", "secure sum", "cadr",
    "gcdp", "delivery", "audit",
)  # fmt: skip


def collector_side_shards(out: Path, results: dict) -> SideLedgers | None:
    """None unless ``out`` is a collector side's directory without a ledger (then the
    fleet shards' directories of its run found beside it, maybe none)."""
    from ldpfleet.scenarios.merge import is_collector_side, shard_dirs_near

    if not is_collector_side(results) or _bulk_ledger(results) is not None:
        return None
    return SideLedgers(out, shard_dirs_near(out, results.get("run")))


def collector_side_note(out_dir: str | Path) -> str | None:
    """The page's sentence on where a collector side's ledgers are (None for a run with a
    ledger.json, or a whole run), for ``ldpfleet report`` to print too."""
    out = Path(out_dir)
    results = _read_json(out / "results.json")
    if results is None or (out / "ledger.json").exists():
        return None
    return _side_ledger_text(results, collector_side_shards(out, results))


def build_report(out_dir: str | Path, progress: Callable[[str], None] | None = None) -> str:
    """The report page of a run directory, as HTML text; ``progress(section)`` is called
    before each section is drawn."""
    out = Path(out_dir)
    results = _read_json(out / "results.json")
    if results is None:
        raise FileNotFoundError(f"no results.json in {out} (run `ldpfleet run` first)")
    results = _with_counters(_checked_results(results, out / "results.json"))
    ledger = _checked_ledger(_read_json(out / "ledger.json"), out / "ledger.json")
    side = collector_side_shards(out, results) if ledger is None else None
    name = (results.get("scenario") or {}).get("name") or "run"
    title = f"{name} — run {results.get('run', '')}"
    sections = [  # in SECTIONS order
        ("scenario", lambda: _scenario_section(results)),
        ("timing", lambda: _timing_section(results)),
        ("messages", lambda: _volume_section(out / "trace.sqlite", results)),
        ("ledger", lambda: _ledger_section(results, ledger, side)),
        ("accuracy", lambda: _accuracy_section(results)),
        ("cpr", lambda: _cpr_section(results, out)),
        ("secure sum", lambda: _secagg_section(results)),
        ("cadr", lambda: _cadr_section(results)),
        ("gcdp", lambda: _gcdp_section(results)),
        ("delivery", lambda: _reliability_section(results)),
        ("audit", lambda: _audit_section(out)),
    ]
    body = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p class='sub'>ldpfleet report of {html.escape(str(out))}</p>",
        _headline(results, ledger, side),
    ]
    assert tuple(label for label, _ in sections) == SECTIONS
    for label, make in sections:
        if progress is not None:
            progress(label)
        body.append(make())
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>{html.escape(title)}</title><style>{STYLE}</style></head><body>"
        + "".join(part for part in body if part)
        + "</body></html>"
    )


def write_report(out_dir: str | Path, progress: Callable[[str], None] | None = None) -> Path:
    """Write ``OUT/report.html``; returns its path."""
    from ldpfleet.broker.trace import TraceError

    path = Path(out_dir) / "report.html"
    page = build_report(out_dir, progress)
    # written beside and renamed: an interrupted write (Ctrl-C, a full disk) leaves the
    # previous page or none, never a truncated one that looks like the run's page
    partial = path.with_name(f".report.html.{os.getpid()}.partial")
    try:
        partial.write_text(page)
        os.replace(partial, path)
    except OSError as error:
        _remove_partial(partial)
        raise TraceError(f"cannot write {path} ({error.strerror or error})") from None
    except BaseException:
        _remove_partial(partial)
        raise
    return path


def _remove_partial(partial: Path) -> None:
    """Remove a half-written page; on a read-only folder or file system the unlink itself
    fails (EROFS even when the file was never made) and hid the refusal in a traceback."""
    with contextlib.suppress(OSError):
        partial.unlink(missing_ok=True)
