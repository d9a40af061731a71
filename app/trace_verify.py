"""``ldpfleet trace verify DIR``: check every privatized value of a trace against the ledgers.

Reads ``DIR/trace.sqlite`` (every message the recorder saw) and ``DIR/ledger.json`` (what
each device's and the collector's ``PrivacyLedger`` charged) and recomputes, from the trace
alone, what was spent:

- stream (``sw_report``): each device's reports agree with its ``hello`` (mechanism, w,
  ``eps0 = eps / w``; ``raw``: ``eps0 = 0``) and with its ledger entry (a ``w-event``
  account of that ε and w; ``raw``: a ``raw`` account that spent nothing); no step is
  reported twice with different values; every window of w consecutive reported steps spends
  at most ε (``window_overspent``), and the ledger charged at least what the trace shows
  in every window (``ledger_undercharged``: a value released without its charge);
- CADR-LDP (``dsr_report``, and the ``degree_release`` on ``rel/degrees`` that lists every
  device's value — the only DSR values a default, control-plane trace holds): one release
  per device, at the plan's DSR share ``(1 - alpha) eps``, with the device's ``node``
  account charged for it and within its ε; the published value is the device's report;
- GC-DP (``gcdp_release`` on ``rel/gcdp``): each window released once, at the collector
  ledger's ``eps_rel``, and charged exactly once (the account's spend for that window).

Messages whose payload does not decode, or whose ``sender`` is not the topic's device, are
counted (``undecodable``, ``unattributable``) and skipped: the collector refused them and
they carry no value anyone used. Everything else is checked, including messages the
collector rejected: a trace in which a device's topic carries a value under the wrong ε is
a mismatch whoever published it. A ``budget_refused`` message is checked against the ledger
too (the refused step must not have been released).

Exit status (``verify_command``): 0 clean, 1 any mismatch, 2 unreadable input.
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ldpfleet.broker.trace import TraceError, open_readonly, rows
from ldpfleet.protocol import codec, topics
from ldpfleet.protocol.cadr_messages import CadrPlan, DegreeRelease, DsrReport
from ldpfleet.protocol.errors import RemoteProtocolError
from ldpfleet.protocol.messages import BudgetRefused, GcdpRelease, Hello, Message, SwReport

__all__ = ["Mismatch", "VerifyReport", "verify_run"]

REL_TOL = 1e-9
STREAM_ACCOUNT = "stream"
CADR_ACCOUNT = "node"


@dataclass(frozen=True)
class Mismatch:
    """One disagreement between the trace and the ledgers."""

    device: str
    step: int | None
    reason: str
    detail: str

    def to_dict(self) -> dict:
        return {
            "device": self.device,
            "step": self.step,
            "reason": self.reason,
            "detail": self.detail,
        }


@dataclass
class VerifyReport:
    """What was checked and what disagreed."""

    checked: Counter[str] = field(default_factory=Counter)
    mismatches: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    def fail(self, device: str, step: int | None, reason: str, detail: str) -> None:
        self.mismatches.append(Mismatch(device, step, reason, detail))

    def to_dict(self) -> dict:
        return {
            "ok": self.ok,
            "checked": dict(sorted(self.checked.items())),
            "mismatches": [m.to_dict() for m in self.mismatches],
        }


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=REL_TOL, abs_tol=1e-15)


def _load(directory: Path) -> tuple[list[tuple[topics.Topic, Message]], dict, Counter[str]]:
    """The decodable, attributable messages of the trace in order, the ledger document, and
    counts of what was skipped. ``TraceError`` if either file is missing or unreadable."""
    ledger_path = directory / "ledger.json"
    if not ledger_path.is_file():
        raise TraceError(f"no ledger at {ledger_path} (a run writes OUT/ledger.json)")
    try:
        ledger = json.loads(ledger_path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise TraceError(f"{ledger_path} is not a ledger document ({error})") from None
    if not isinstance(ledger, dict):
        raise TraceError(f"{ledger_path} is not a ledger document (not a JSON object)")
    db = open_readonly(directory)
    skipped: Counter[str] = Counter()
    messages: list[tuple[topics.Topic, Message]] = []
    wanted = {"hello", "sw_report", "dsr_report", "cadr_plan", "gcdp_release", "budget_refused",
              "degree_release"}  # fmt: skip
    try:
        for row in rows(db):
            if row.kind not in wanted and row.kind != "invalid":
                continue
            try:
                topic = topics.parse(row.topic)
                message = codec.decode(row.payload)
            except RemoteProtocolError:
                skipped["undecodable"] += 1
                continue
            if message.type_name() not in wanted:
                continue
            if topic.family == "up" and topic.sender != message.sender:
                skipped["unattributable"] += 1
                continue
            messages.append((topic, message))
    except Exception as error:  # a damaged database: unreadable, not a mismatch
        raise TraceError(f"{directory / 'trace.sqlite'} cannot be read ({error})") from None
    finally:
        db.close()
    return messages, ledger, skipped


def _device_ledgers(ledger: dict) -> dict[str, dict]:
    """Device ledgers of a stream run (``devices``) or of a CADR run (top level)."""
    devices = ledger.get("devices")
    if isinstance(devices, dict):
        return devices
    return {k: v for k, v in ledger.items() if isinstance(v, dict) and "accounts" in v}


def _account(ledgers: dict[str, dict], device: str, name: str) -> dict | None:
    entry = ledgers.get(device)
    if not isinstance(entry, dict):
        return None
    account = entry.get("accounts", {}).get(name)
    return account if isinstance(account, dict) else None


def _verify_streams(messages, ledgers: dict[str, dict], report: VerifyReport) -> None:
    hellos: dict[str, Hello] = {}
    steps: dict[str, dict[int, float]] = defaultdict(dict)
    eps0_of: dict[str, float] = {}
    refusals: dict[str, BudgetRefused] = {}
    for _, message in messages:
        device = message.sender
        if isinstance(message, Hello):
            first = hellos.setdefault(device, message)
            if (first.mechanism, first.eps, first.w, first.eps0) != (
                message.mechanism,
                message.eps,
                message.w,
                message.eps0,
            ):
                report.fail(device, None, "hello_changed", "two hellos declare different streams")
        elif isinstance(message, BudgetRefused) and message.account == STREAM_ACCOUNT:
            refusals[device] = message
    for _, message in messages:
        if not isinstance(message, SwReport):
            continue
        device = message.sender
        report.checked["sw_reports"] += 1
        hello = hellos.get(device)
        if hello is None:
            report.fail(device, message.t0, "no_hello", "reports without a hello")
            continue
        if message.mechanism != hello.mechanism or message.w != hello.w:
            report.fail(
                device,
                message.t0,
                "mechanism",
                f"report says {message.mechanism}/w={message.w}, hello "
                f"{hello.mechanism}/w={hello.w}",
            )
            continue
        want = 0.0 if hello.mechanism == "raw" else hello.eps / hello.w
        if not _close(message.eps0, want) or not _close(message.eps0, hello.eps0):
            report.fail(
                device,
                message.t0,
                "eps0",
                f"report spends eps0={message.eps0!r}, hello says "
                f"eps/w = {want!r} (eps0 {hello.eps0!r})",
            )
            continue
        eps0_of[device] = message.eps0
        reported = steps[device]
        for offset, value in enumerate(message.values):
            t = message.t0 + offset
            report.checked["values"] += 1
            previous = reported.setdefault(t, value)
            if previous != value:
                report.fail(
                    device,
                    t,
                    "conflicting_values",
                    f"step {t} reported as {previous!r} and {value!r}",
                )
    for device in sorted(steps):
        hello = hellos[device]
        report.checked["stream_devices"] += 1
        account = _account(ledgers, device, STREAM_ACCOUNT)
        if account is None:
            report.fail(device, None, "no_ledger", "no stream account in ledger.json")
            continue
        if hello.mechanism == "raw":
            if account.get("kind") != "raw" or account.get("charges", 0) != 0:
                report.fail(
                    device,
                    None,
                    "ledger_kind",
                    f"raw reports need a raw account that spent nothing, ledger has "
                    f"{account.get('kind')!r} with {account.get('charges')} charges",
                )
            continue
        if account.get("kind") != "w-event":
            report.fail(
                device,
                None,
                "ledger_kind",
                f"{hello.mechanism} reports need a w-event account, ledger has "
                f"{account.get('kind')!r}",
            )
            continue
        if not _close(float(account.get("eps", -1)), hello.eps) or account.get("w") != hello.w:
            report.fail(
                device,
                None,
                "ledger_params",
                f"ledger eps={account.get('eps')!r} w={account.get('w')!r}, hello "
                f"eps={hello.eps!r} w={hello.w!r}",
            )
            continue
        _check_windows(device, steps[device], eps0_of[device], hello, account, report)
        refusal = refusals.get(device)
        if refusal is not None and any(t >= refusal.round for t in steps[device]):
            first = min(t for t in steps[device] if t >= refusal.round)
            report.fail(
                device,
                first,
                "released_after_refusal",
                f"step {first} reported after refusing from step {refusal.round}",
            )


def _check_windows(device, reported, eps0, hello, account, report: VerifyReport) -> None:
    """Every w-window of reported steps within ε; the ledger charged at least as much."""
    w, eps = hello.w, hello.eps
    last = max(reported)
    spend = [0.0] * (last + 1)
    for t in reported:
        spend[t] = eps0
    prefix = [0.0]
    for x in spend:
        prefix.append(prefix[-1] + x)
    ledger_windows = account.get("window_spent") or []
    charges = account.get("charges", 0)
    if len(reported) > charges:
        report.fail(
            device,
            None,
            "ledger_undercharged",
            f"{len(reported)} steps reported, the ledger charged {charges}",
        )
    n = last + 1
    starts = range(max(1, n - w + 1)) if n >= w else [0]
    for s in starts:
        window = prefix[min(s + w, n)] - prefix[s]
        report.checked["windows"] += 1
        if window > eps * (1 + REL_TOL):
            report.fail(
                device,
                s,
                "window_overspent",
                f"steps [{s}, {s + w - 1}] spend {window:.6g} > eps = {eps:g}",
            )
            return
        charged = ledger_windows[s] if s < len(ledger_windows) else None
        if charged is None or window > float(charged) * (1 + REL_TOL) + 1e-12:
            report.fail(
                device,
                s,
                "ledger_undercharged",
                f"steps [{s}, {s + w - 1}] spend {window:.6g} in the trace, the ledger "
                f"charged {charged!r}",
            )
            return


def _verify_cadr(messages, ledgers: dict[str, dict], report: VerifyReport) -> None:
    plans = [m for _, m in messages if isinstance(m, CadrPlan)]
    plan = plans[0] if plans else None
    released: dict[str, DsrReport] = {}
    for _, message in messages:
        if not isinstance(message, DsrReport):
            continue
        device = message.sender
        report.checked["dsr_reports"] += 1
        first = released.setdefault(device, message)
        if first.value != message.value or first.eps != message.eps:
            report.fail(
                device,
                None,
                "conflicting_values",
                f"two DSR releases: {first.value!r} and {message.value!r}",
            )
            continue
        if first is not message:
            continue  # a retransmission of the same release
        if plan is not None and not _close(message.eps, (1 - plan.alpha) * plan.eps):
            report.fail(
                device,
                None,
                "eps",
                f"DSR at eps={message.eps!r}, the plan's share is {(1 - plan.alpha) * plan.eps!r}",
            )
        account = _account(ledgers, device, CADR_ACCOUNT)
        if account is None:
            report.fail(device, None, "no_ledger", "no node account in ledger.json")
            continue
        spent, eps = float(account.get("spent", 0.0)), float(account.get("eps", 0.0))
        if spent < message.eps * (1 - REL_TOL):
            report.fail(
                device,
                None,
                "ledger_undercharged",
                f"DSR at eps={message.eps!r}, the node account spent {spent!r}",
            )
        if spent > eps * (1 + REL_TOL) or (plan is not None and eps > plan.eps * (1 + REL_TOL)):
            report.fail(
                device, None, "ledger_overspent", f"the node account spent {spent!r} of eps {eps!r}"
            )
    for topic, message in messages:
        if not isinstance(message, DegreeRelease) or topic.family != "rel":
            continue
        share = None if plan is None else (1 - plan.alpha) * plan.eps
        for device, value in zip(message.devices, message.values, strict=False):
            report.checked["degree_release_values"] += 1
            own = released.get(device)
            if own is not None and own.value != value:
                report.fail(
                    device,
                    None,
                    "conflicting_values",
                    f"released {value!r}, the device reported {own.value!r}",
                )
                continue
            account = _account(ledgers, device, CADR_ACCOUNT)
            if account is None:
                report.fail(device, None, "no_ledger", "no node account in ledger.json")
                continue
            spent = float(account.get("spent", 0.0))
            if share is not None and spent < share * (1 - REL_TOL):
                report.fail(
                    device,
                    None,
                    "ledger_undercharged",
                    f"released in degree_release, the node account spent {spent!r} "
                    f"< the DSR share {share!r}",
                )


def _verify_gcdp(messages, ledger: dict, report: VerifyReport) -> None:
    releases = [m for t, m in messages if isinstance(m, GcdpRelease) and t.family == "rel"]
    if not releases:
        return
    central = ledger.get("collector")
    accounts = central.get("accounts", {}) if isinstance(central, dict) else {}
    windows: dict[int, GcdpRelease] = {}
    for message in releases:
        report.checked["gcdp_releases"] += 1
        first = windows.setdefault(message.window, message)
        if first is not message and first.values != message.values:
            report.fail(
                "collector",
                message.window,
                "double_release",
                f"window {message.window} released twice with different values",
            )
    if len(accounts) != 1:
        report.fail("collector", None, "no_ledger", "no collector release account in ledger.json")
        return
    ((name, account),) = accounts.items()
    spent = account.get("window_spent") or []
    eps_rel = float(account.get("eps", 0.0))
    for k, message in sorted(windows.items()):
        if not _close(message.eps_rel, eps_rel):
            report.fail(
                "collector",
                k,
                "eps_rel",
                f"window {k} released at eps_rel={message.eps_rel!r}, account {name!r} "
                f"has eps {eps_rel!r}",
            )
        charged = float(spent[k]) if k < len(spent) else 0.0
        if not _close(charged, message.eps_rel):
            report.fail(
                "collector",
                k,
                "ledger_charges",
                f"window {k} charged {charged!r}, released at {message.eps_rel!r} "
                "(must be charged exactly once)",
            )
    if account.get("charges") != len(windows):
        report.fail(
            "collector",
            None,
            "ledger_charges",
            f"{account.get('charges')} charges for {len(windows)} released windows",
        )


def verify_run(directory: str | Path) -> VerifyReport:
    """Check a run's output directory (module docstring); ``TraceError`` if unreadable."""
    directory = Path(directory)
    if directory.is_file():
        directory = directory.parent
    messages, ledger, skipped = _load(directory)
    report = VerifyReport()
    report.checked.update(skipped)
    ledgers = _device_ledgers(ledger)
    _verify_streams(messages, ledgers, report)
    _verify_cadr(messages, ledgers, report)
    _verify_gcdp(messages, ledger, report)
    return report
