"""``ldpfleet audit MECH`` says what a slow user mechanism's audit is doing (helper P2).

Found (helper U3): the audit of a plugin taking 10 ms per ``perturb`` call (about 25,000
calls at the default 6,000 trials: 33 grid inputs, the evaluation pair, the replays) ran
4 min 58 s with nothing on stderr until the end. Now ``battery.CallMeter`` counts the calls
and names the phase, ``app.progress.PhaseLines`` prints a line at most every 5 s and, after
a first timed second, the estimate when the audit will take more than 30 s. Time is fake
everywhere here (an injected clock): nothing depends on the machine's speed. The audits run
at 400 trials (fixed seeds; only counts and identity are asserted, no statistics).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from ldpfleet.app import progress as progress_module
from ldpfleet.app.cli import app
from ldpfleet.app.progress import PhaseLines
from ldpfleet.collector.audit.battery import device_batch_calls, run_audit
from typer.testing import CliRunner

PHASES = ["input search", "selection", "evaluation", "replay"]


class Counted:
    """Laplace(1/eps) on [0, 1] (eps-LDP) counting its own perturb calls."""

    calls = 0

    def __init__(self, eps):
        self.eps = float(eps)
        self.b = 1.0 / self.eps
        self.output_low, self.output_high = -40 * self.b, 1 + 40 * self.b

    def perturb(self, x, rng):
        type(self).calls += 1
        x = np.asarray(x, dtype=float)
        return np.clip(x + rng.laplace(0.0, self.b, x.shape), self.output_low, self.output_high)

    def in_domain(self, y):
        y = np.asarray(y, dtype=float)
        return (y >= self.output_low) & (y <= self.output_high)

    def estimate_mean(self, y):
        return float(np.mean(y)) if len(y) else 0.5


class SharedNoise(Counted):
    """One draw per call (a leak): its audit's chosen pair includes input 0 at seed 3."""

    def perturb(self, x, rng):
        type(self).calls += 1
        x = np.asarray(x, dtype=float)
        noise = np.full(x.shape, rng.laplace(0.0, self.b))
        return np.clip(x + noise, self.output_low, self.output_high)


NAME = f"{__name__}:Counted"
SHARED = f"{__name__}:SharedNoise"


@pytest.mark.parametrize("mechanism", [NAME, SHARED])
def test_the_rows_are_the_same_with_and_without_a_progress_callback(mechanism):
    plain = run_audit(mechanism, 1.0, trials=400, seed=3).to_dict()
    clock = iter(range(10**6)).__next__  # fake time: one second per reading
    lines = PhaseLines("audit", clock=clock, write=lambda line: None)
    assert run_audit(mechanism, 1.0, trials=400, seed=3, progress=lines).to_dict() == plain
    seen = []
    called = run_audit(mechanism, 1.0, trials=400, seed=3, progress=lambda *a: seen.append(a))
    assert seen and called.to_dict() == plain


@pytest.mark.parametrize(("mechanism", "cls"), [(NAME, Counted), (SHARED, SharedNoise)])
def test_every_perturb_call_is_counted_and_the_total_is_exact(mechanism, cls):
    seen = []

    def progress(phase, done, total):
        seen.append((phase, done, total, cls.calls))

    result = run_audit(mechanism, 1.0, trials=400, seed=3, progress=progress)
    # the pair with input 0 (drawn twice at evaluation too) and one without
    assert (0.0 in result.canary_pair) == (cls is SharedNoise), result.canary_pair
    assert list(dict.fromkeys(phase for phase, *_ in seen)) == PHASES
    before = seen[0][3] - seen[0][1]  # the load-time check's calls, before the audit
    assert all(calls - done == before for _, done, _, calls in seen)
    ticks = [done for phase, done, *_ in seen if phase not in ("selection", "replay")]
    assert ticks == list(range(1, len(ticks) + 1))
    assert seen[-1][1] == seen[-1][2] == cls.calls - before


def test_device_batch_calls_counts_small_long_and_single_calls():
    # 400 runs: 200 long (1 call of 512 pairs), 50 single, 150 small (38 calls of 4 pairs)
    assert device_batch_calls(400) == 1 + 50 + 38
    assert device_batch_calls(3000) == 3 + 375 + 282


class FakeJob:
    """A job of ``total`` calls, ``pace`` seconds each, on a fake clock."""

    def __init__(self, pace: float, total: int):
        self.t, self.pace, self.total, self.lines = 0.0, pace, total, []

    def run(self, **options) -> list[tuple[float, str]]:
        lines = PhaseLines(
            "audit x",
            clock=lambda: self.t,
            write=lambda line: self.lines.append((self.t, line)),
            **options,
        )
        for done in range(1, self.total + 1):
            self.t += self.pace
            lines("input search" if done < self.total // 2 else "evaluation", done, self.total)
        return self.lines


def test_a_slow_audit_prints_the_estimate_then_a_line_every_5_s():
    lines = FakeJob(pace=0.01, total=30_000).run()
    first_t, first = lines[0]
    assert first == (
        "audit x: 30,000 perturb calls, about 5 min at 10 ms per perturb call; "
        "--trials N to shorten"
    )
    assert 1.0 <= first_t < 1.1  # after the first timed second
    times = [t for t, _ in lines]
    gaps = np.diff(times)
    assert gaps.min() >= 5.0 - 1e-9 and gaps.max() < 5.0 + 0.011  # ~one line per 5 s
    assert len(lines) == 1 + 59  # 300 s of calls: lines at 6.01 + 5 k s
    line = lines[1][1]
    # 5 s after the estimate (float sums of 10 ms: a call or two either side of 601)
    assert re.fullmatch(r"audit x: input search, 60\d of 30,000 perturb calls, 6 s elapsed", line)
    last = r"audit x: evaluation, 29,6\d\d of 30,000 perturb calls, 4 min 56 s elapsed"
    assert re.fullmatch(last, lines[-1][1]), lines[-1]


def test_a_fast_audit_prints_nothing_and_a_short_one_no_estimate():
    assert FakeJob(pace=1e-4, total=30_000).run() == []  # 3 s: no line at all
    lines = FakeJob(pace=1e-3, total=25_000).run()  # 25 s: lines, no estimate
    assert lines and not any("about" in line for _, line in lines)
    assert all("elapsed" in line for _, line in lines)


def test_the_estimate_waits_for_a_second_of_calls_after_the_first():
    # a slow start (the first call at 20 s: loading) does not enter the pace
    clock = {"t": 0.0}
    out = []
    lines = PhaseLines("a", clock=lambda: clock["t"], write=out.append, every=1e9)
    clock["t"] = 20.0
    lines("input search", 1, 10_000)
    clock["t"] = 20.5
    lines("input search", 50, 10_000)
    assert out == []
    clock["t"] = 21.0
    lines("input search", 101, 10_000)  # 100 calls in 1 s
    assert out == ["a: 10,000 perturb calls, about 100 s at 10 ms per perturb call; --trials N "
                   "to shorten"]  # fmt: skip


def _cli(monkeypatch, *flags):
    fake = iter(range(10**7)).__next__  # fake time: each reading one second later
    monkeypatch.setattr(progress_module, "now", fake)
    return CliRunner().invoke(app, ["audit", NAME, "--trials", "400", "--seed", "3", *flags])


def test_the_cli_prints_the_lines_with_progress_and_nothing_with_quiet(monkeypatch):
    loud, quiet = _cli(monkeypatch, "--progress"), _cli(monkeypatch, "--quiet")
    assert loud.exit_code == quiet.exit_code == 0, (loud.output, quiet.output)
    assert loud.stdout == quiet.stdout  # the JSON, byte for byte
    lines = [line for line in loud.stderr.splitlines() if "perturb call" in line]
    assert any(f"audit {NAME} (eps 1): evaluation, " in line for line in lines), lines
    assert "about " in lines[0] and lines[0].endswith("--trials N to shorten"), lines
    assert "perturb call" not in quiet.stderr
