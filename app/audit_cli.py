"""``ldpfleet audit``: black-box epsilon lower bounds for ldpfleet's mechanisms.

``ldpfleet audit MECHANISM --eps E [--delta D] [--trials N] [--gamma G] [--seed S]`` runs one
battery entry (``collector.audit.battery``), or audits a user stream mechanism named
``package.module:Class`` (or by its ``ldpfleet.mechanisms`` entry point) through the
mechanism contract, and prints the result as JSON: eps_claimed,
eps_lb, verdict, witness, threshold, counts and bounds. ``ldpfleet audit all`` runs every
entry at each budget of ``--eps`` (a comma list, default 0.5,1,2; ``cadr-theta-count-dropout``
at the one nearest 2: ``audit_tasks``) and prints a JSON list, or
with ``--markdown`` the table of docs/audit.md; its gamma is family-wise (each of the m
audits at gamma / m). The exit status is 0 when no claim is
falsified, 1 when some audit finds a violation, 2 on bad parameters.

``audit all --only NAME`` (repeat) runs only those battery entries (gamma family-wise
over the audits that run). Every row carries ``eps_lb_max``, the largest bound its
evaluation runs could certify; when that is not above the claim the command says on stderr
that the trials cannot find a violation, and how many would.

``audit all --jobs N`` runs the audits in N worker processes (default: the CPUs, at most
2); the rows are identical to a sequential run (each audit seeds its own generators).

Progress: ``audit all`` and ``audit mutants`` print ``audit i of m: NAME (eps E)`` lines on
stderr when stderr is a terminal (``--progress`` forces them, ``--quiet`` silences them);
stdout stays the JSON (or the table). ``audit MECH`` of a user mechanism adds, on the same
condition, a line at most every 5 s within the audit (phase: input search, selection,
evaluation, replay; perturb calls done of the total; elapsed) and, when its first second
of calls shows the audit will take more than 30 s, the estimate (``about 5 min at 10 ms
per perturb call; --trials N to shorten``): ``app.progress.PhaseLines``.

``ldpfleet audit mutants [--no-tests] [--only NAME]... [--markdown]`` is the mutation run
(``collector.audit.mutants``): every planted bug, audited with the bug planted in-process
(gamma family-wise over the run's audits) and, unless ``--no-tests``, the relevant unit
test files run against it in a pytest subprocess; the JSON (or docs/audit.md's table) says
which the audit catches, which only the tests catch, which nothing catches, and why.
Exit status 0 (the table is the result, not a verdict), 2 on bad parameters.
"""

from __future__ import annotations

import contextlib
import copy
import json
import sys
import time
from collections.abc import Callable
from typing import Annotated

import typer

__all__ = ["BATTERY_NAMES", "audit_all", "audit_command", "audit_tasks", "markdown_table"]

GAU_DELTA = 1e-5
SEED_MAX = 2**63 - 1  # as --seed of ldpfleet run; the rule: collector.audit.stats.check_seed
# --jobs: worker processes, each forked up front by ProcessPoolExecutor (the fork start
# method launches max_workers at once): --jobs 100000 tried to fork 100,000 processes
JOBS_MAX = 64
# The entries of ``collector.audit.battery.BATTERY`` once ``app.audit_fleet`` has added
# ``fleet-stream``, in order, for the help of ``audit`` without importing the battery
# (scipy): tests/unit/test_cli_imports.py keeps them equal.
BATTERY_NAMES = (
    "rr", "laplace", "dsr", "sw", "sw01", "exponential", "ndoe", "stream", "gcdp",
    "gcdp-partitioned", "gau-dp", "devices", "duchi", "piecewise", "hybrid", "fleet-stream",
    "degree-star", "degree-star-edge", "degree-er", "degree-connected", "degree-star-group",
    "degree-clip",
    "secagg", "secagg-split", "secagg-dropout", "lpea-answer", "cadr-dsr", "stream-ledger",
    "stream-batch", "stream-batch-laplace", "cadr-theta-count", "cadr-theta-count-dropout",
)  # fmt: skip


def _battery():
    """The battery module, with the ``fleet-stream`` entry registered."""
    from ldpfleet.app import audit_fleet  # noqa: F401  (registers the fleet-stream entry)
    from ldpfleet.collector.audit import battery

    return battery


def audit_all(
    eps_list: tuple[float, ...],
    *,
    trials: int | None,
    gamma: float,
    seed: int,
    delta: float = 0.0,
    mechanisms: tuple[str, ...] | None = None,
    progress: Callable[[int, int, str], None] | None = None,
    jobs: int = 1,
) -> list[dict]:
    """Every battery entry at every budget (Gau-DP at delta = max(delta, 1e-5)), the
    dropout canary at one of them (``audit_tasks``).

    Family-wise control: each of the m audits runs at gamma / m (Bonferroni), so the chance
    that ANY correct mechanism is reported as a violation is <= gamma. (At gamma per audit,
    42 near-tight audits would raise one in about 22-65 % of runs, each alone alarming in
    0.3-2.5 % of seeds: docs/audit.md, "Calibration on fresh seeds".) ``mechanisms`` limits the
    run to those entries (default: the whole battery). ``progress(i, m, label)`` is called
    before audit i of m (with ``jobs > 1``: when audit i of m has finished).

    ``jobs > 1`` runs the audits in that many worker processes (the heavy whole-path
    entries submitted first). Every audit has its own seeded generators, so the rows are
    the same as with ``jobs = 1``, in the same order."""
    battery = _battery()
    # every argument by the library's one rule, before any audit runs (the family's gamma
    # before it is divided: 1.5 over 3 audits ran each at 0.5; delta before the Gau-DP
    # floor replaces it: -1 ran Gau-DP at 1e-5; every budget before the first audit)
    eps_list = tuple(eps_list)
    if not eps_list:
        from ldpfleet.protocol.errors import ParameterError

        raise ParameterError(
            "needs at least one budget", field="eps", limit="at least one budget", value=eps_list
        )
    for eps in eps_list:
        battery.check_audit_arguments(eps, delta=delta, trials=trials, gamma=gamma, seed=seed)
    for mechanism in mechanisms or ():
        battery.check_mechanism(mechanism)
    tasks = audit_tasks(eps_list, mechanisms)
    per_audit = gamma / len(tasks)
    args = [
        (m, e, max(delta, GAU_DELTA) if m == "gau-dp" else delta, trials, per_audit, seed)
        for m, e in tasks
    ]
    check_jobs(jobs)
    same = same_audit_as(args)
    jobs = min(jobs, len(set(same)))  # a worker per audit run at most
    if jobs == 1 or len(tasks) == 1:
        rows = []
        for index, task in enumerate(args, start=1):
            if progress is not None:
                progress(index, len(tasks), f"{task[0]} (eps {task[1]:g})")
            first = same[index - 1]
            rows.append(_one_audit(task) if first == index - 1 else _copied(rows[first]))
        return rows
    return _audit_in_pool(args, jobs, progress, same)


def same_audit_as(args: list[tuple]) -> list[int]:
    """For each audit task, the index of the first task whose audit is the same run: a
    battery entry whose claim and canary do not depend on the budget
    (``collector.audit.core.ZERO_CLAIM_ENTRIES``: ``secagg``, ``secagg-split`` and
    ``secagg-dropout`` claim eps = 0 whatever budget is passed, and their builders ignore
    it) audited at the same delta, trials, gamma and seed draws the same samples and
    gives the same row at every budget (tests/unit/test_A7_audit_all_reuse.py), so ``audit
    all`` runs it once and copies the row (``cpu_seconds`` 0.0 in the copies). Every other
    task is its own."""
    from ldpfleet.collector.audit.core import ZERO_CLAIM_ENTRIES

    first: dict[tuple, int] = {}
    out = []
    for index, (mechanism, _budget, *rest) in enumerate(args):
        key = (mechanism, *rest) if mechanism in ZERO_CLAIM_ENTRIES else (index,)
        out.append(first.setdefault(key, index))
    return out


def _copied(row: dict) -> dict:
    """A row reused for an audit that is the same run (``same_audit_as``): no CPU of its own."""
    return {**copy.deepcopy(row), "cpu_seconds": 0.0}


def audit_tasks(
    eps_list: tuple[float, ...], mechanisms: tuple[str, ...] | None
) -> list[tuple[str, float]]:
    """The (entry, budget) audits of ``audit all``, in battery order: every entry (or
    ``mechanisms``) at every budget of ``eps_list``, except the entries the battery audits
    at one budget (``collector.audit.battery.audit_all_budgets``: the dropout canary, at
    the listed budget nearest 2). The family-wise gamma is divided over these."""
    battery = _battery()
    names = mechanisms or tuple(battery.BATTERY)
    return [(m, e) for m in names for e in battery.audit_all_budgets(m, tuple(eps_list))]


def check_jobs(jobs: object) -> None:
    """``--jobs``: an integer in 1 .. ``JOBS_MAX``."""
    from ldpfleet.protocol.errors import ParameterError

    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= JOBS_MAX:
        raise ParameterError(
            f"must be an integer in 1 .. {JOBS_MAX}, got {jobs!r}",
            field="jobs",
            limit=f"an integer in 1 .. {JOBS_MAX}",
            value=jobs,
        )


def check_seed(seed: object) -> None:
    """``--seed``: an integer in 0 .. 2^63-1 (10^23 was accepted; ``ldpfleet run`` refuses
    it). The audit library's rule, ``collector.audit.stats.check_seed``."""
    from ldpfleet.collector.audit.stats import check_seed as audit_seed

    audit_seed(seed)


# whole paths (and the 40,000-run dropout canary): submitted first
HEAVY_ENTRIES = ("fleet-stream", "degree-", "secagg", "cadr-theta-count-dropout")
# Relative CPU of one audit of an entry (2026-12-05, helper B: cpu_seconds of the battery's
# rows at load ~8; e.g. degree-connected ~45 s; the one cadr-theta-count-dropout audit,
# at eps 2 since helper C's same-draws speed-ups, 49 s at load ~5 where main took 70 s, ~170
# in these units): ``--jobs`` submits the costliest first (longest processing time
# first), so the audits that start last are short and the workers finish close together.
# Heavy entries not listed weigh DEFAULT_HEAVY_COST, the others 1.
AUDIT_COST = {
    "cadr-theta-count-dropout": 170.0,
    "fleet-stream": 25.0,
    "degree-connected": 45.0,
    "degree-er": 40.0,
}
DEFAULT_HEAVY_COST = 10.0


def _one_audit(task: tuple) -> dict:
    """One audit's row, with the CPU seconds it took in its process (``cpu_seconds``)."""
    mechanism, eps, delta, trials, gamma, seed = task
    started = time.process_time()
    result = _battery().run_audit(
        mechanism, eps, delta=delta, trials=trials, gamma=gamma, seed=seed
    )
    return {**result.to_dict(), "cpu_seconds": round(time.process_time() - started, 2)}


def audit_cost(mechanism: str) -> float:
    """The relative CPU of one audit of ``mechanism`` (``AUDIT_COST``)."""
    if mechanism in AUDIT_COST:
        return AUDIT_COST[mechanism]
    return DEFAULT_HEAVY_COST if mechanism.startswith(HEAVY_ENTRIES) else 1.0


def submission_order(mechanisms: list[str]) -> list[int]:
    """Indices of the audits in the order ``--jobs`` submits them: costliest first
    (``audit_cost``), battery order among equals (a stable sort)."""
    return sorted(range(len(mechanisms)), key=lambda i: -audit_cost(mechanisms[i]))


def _audit_in_pool(
    args: list[tuple],
    jobs: int,
    progress: Callable[[int, int, str], None] | None,
    same: list[int] | None = None,
) -> list[dict]:
    """The rows of ``args`` from ``jobs`` worker processes, the costliest submitted first;
    a task that is the same run as an earlier one (``same``: ``same_audit_as``) is not
    submitted, its row copied when that one's is back."""
    from concurrent.futures import as_completed

    from ldpfleet.collector.pools import interruptible_pool

    same = list(range(len(args))) if same is None else same
    order = [i for i in submission_order([task[0] for task in args]) if same[i] == i]
    copies: dict[int, list[int]] = {}
    for i, first in enumerate(same):
        if first != i:
            copies.setdefault(first, []).append(i)
    rows: list[dict | None] = [None] * len(args)
    done = 0
    with interruptible_pool(max_workers=jobs) as pool:
        futures = {pool.submit(_one_audit, args[i]): i for i in order}
        for future in as_completed(futures):
            i = futures[future]
            rows[i] = future.result()
            for j in (i, *copies.get(i, ())):
                if j != i:
                    rows[j] = _copied(rows[i])
                done += 1
                if progress is not None:
                    progress(done, len(args), f"{args[j][0]} (eps {args[j][1]:g})")
    return [row for row in rows if row is not None]


def markdown_table(rows: list[dict]) -> str:
    """The docs table: mechanism, canary, eps, delta, trials per world, eps_LB, verdict."""
    lines = [
        "| mechanism | canary | ε | δ | γ | runs per world (sel + eval) | witness | ε_LB "
        "| verdict |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lb = "−∞" if r["eps_lb"] is None else f"{r['eps_lb']:.3f}"
        lines.append(
            f"| {r['mechanism']} | {r['canary']} | {r['eps_claimed']:g} | {r['delta']:g} | "
            f"{r['gamma']:.2g} | "
            f"{_runs(r)} | {r['witness']} | {lb} | {r['verdict']} |"
        )
    return "\n".join(lines)


def _runs(row: dict) -> str:
    """Runs per world: a pair search selects on every grid input, evaluates the pair."""
    searched = row.get("inputs_searched")
    at_each = f" at each of {searched} inputs" if searched else ""
    return f"{row['n_sel']}{at_each} + {row['n_eval']}"


def stderr_progress(index: int, total: int, label: str) -> None:
    """One ``audit i of m: label`` line on stderr."""
    print(f"audit {index} of {total}: {label}", file=sys.stderr, flush=True)


def _phase_lines(mechanism: str, eps: float):
    """``audit MECH``'s progress within one audit (a user mechanism's perturb calls:
    ``battery.CallMeter``): ``app.progress.PhaseLines`` lines on stderr, at most one every
    5 s, and the estimate when the audit will take more than 30 s."""
    from ldpfleet.app.progress import PhaseLines

    return PhaseLines(f"audit {mechanism} (eps {eps:g})")


def audit_mutants(
    names: tuple[str, ...] | None = None,
    *,
    tests: bool = True,
    gamma: float = 0.05,
    seed: int = 0,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[dict]:
    """The mutation run (``collector.audit.mutants``): one row per mutant. gamma is
    family-wise over every audit of the run (Bonferroni)."""
    _battery()
    from ldpfleet.collector.audit.mutants import MUTANTS, mutant_named, run_mutant
    from ldpfleet.collector.audit.stats import check_gamma, check_seed

    check_gamma(gamma)
    check_seed(seed)  # before the first mutant is planted (its audit checked it only then)
    chosen = [mutant_named(n) for n in names] if names else list(MUTANTS)
    per_audit = gamma / max(1, sum(len(m.audits) for m in chosen))
    rows = []
    for index, mutant in enumerate(chosen, start=1):
        if progress is not None:
            progress(index, len(chosen), mutant.name)
        rows.append(run_mutant(mutant, gamma=per_audit, seed=seed, tests=tests))
    return rows


def mutants_markdown(rows: list[dict]) -> str:
    """The mutation table of docs/audit.md."""
    lines = [
        "| mutant | audited entry: ε_LB at claim ε (verdict) | unit tests | caught by | why "
        "the audit misses it |",
        "|---|---|---|---|---|",
    ]
    for r in rows:
        audits = "; ".join(
            f"{a['entry']}: "
            + ("−∞" if a["eps_lb"] == float("-inf") else f"{a['eps_lb']:.2f}")
            + f" at {a['eps']:g} ({a['verdict']})"
            for a in r["audits"]
        )
        t = r["tests"]
        if t is None:
            tests = "not run"
        elif t["status"] == "failed":
            tests = f"fail: `{t['failed']}`"
        else:
            tests = f"{t['status']} ({', '.join(f.rsplit('/', 1)[-1] for f in t['files'])})"
        why = "" if r["caught_by"] == "audit" else r["missed"]
        lines.append(f"| {r['mutant']} | {audits or '—'} | {tests} | {r['caught_by']} | {why} |")
    return "\n".join(lines)


def _check_budgets(eps_list, mechanism: str, entries) -> None:
    """Every budget of ``--eps`` by the one rule of a claimed eps
    (``collector.audit.core.check_claimed_eps``), before anything is built: 0 only when
    every audit to run claims nothing leaks (``core.ZERO_CLAIM_ENTRIES``). NaN said "a finite
    number >= 0", 0 and 51 "in (0, 50]", 1e-20 "must be >= 1e-12" and abc "not a comma
    list of numbers": one sentence for them all."""
    from ldpfleet.collector.audit.core import ZERO_CLAIM_ENTRIES, check_claimed_eps

    names = (entries or _battery().BATTERY) if mechanism == "all" else (mechanism,)
    zero = all(name in ZERO_CLAIM_ENTRIES for name in names)
    for budget in eps_list:
        check_claimed_eps(budget, zero=zero)


def _parse_eps(text: str) -> tuple[float, ...]:
    """``--eps``: a comma list of budgets. An empty entry (``1,,2``) or a budget listed
    twice is refused: a duplicate ran the same audits again, each at a smaller share of
    the family-wise gamma."""
    from ldpfleet.protocol.errors import ParameterError

    entries = [e.strip() for e in text.split(",")]
    if entries == [""]:
        raise ParameterError(
            "needs at least one budget", field="eps", limit="at least one budget", value=text
        )
    if "" in entries:
        raise ParameterError(
            f"an empty entry in {text!r}", field="eps", limit="no empty entry", value=text
        )
    from ldpfleet.collector.audit.core import check_claimed_eps

    values = []
    for entry in entries:
        # float() reads "0_5" as 5: a typo for 0.5 must not audit ten times the budget
        if "_" in entry:  # the one sentence of a bad budget (core.EPS_CLAIM_RULE)
            check_claimed_eps(entry)
        try:
            values.append(float(entry))
        except ValueError:
            check_claimed_eps(entry)
    values = tuple(values)
    for index, value in enumerate(values):
        if value in values[:index]:
            raise ParameterError(
                f"{entries[index]!r} is listed twice in {text!r} (each budget is audited once)",
                field="eps",
                limit="each budget listed once",
                value=entries[index],
            )
    return values


def audit_command(
    mechanism: Annotated[
        str,
        typer.Argument(
            help="'all', 'mutants', one of: "
            + ", ".join(BATTERY_NAMES)
            + "; or a stream mechanism 'package.module:Class' (importable) or entry-point name"
        ),
    ],
    eps: Annotated[
        str | None,
        typer.Option(help="Claimed eps (default 1); 'all': a comma list (default 0.5,1,2)."),
    ] = None,
    delta: Annotated[float | None, typer.Option(help="Claimed delta (default 0).")] = None,
    trials: Annotated[
        int | None,
        typer.Option(
            help="Runs per world, half selection, half evaluation (default: the mechanism's "
            "own, e.g. 4,000 for rr, 7,600 for laplace, 6,000 for a plugin; docs/audit.md's "
            "table lists them)."
        ),
    ] = None,
    gamma: Annotated[
        float,
        typer.Option(
            help="1 - confidence of the bound, in (0, 1): a correct mechanism is reported as "
            "a violation with probability <= gamma; 'all' and 'mutants': family-wise "
            "(gamma / m per audit)."
        ),
    ] = 0.05,
    seed: Annotated[int, typer.Option(help="Seed of the four sample sets (0 .. 2^63-1).")] = 0,
    markdown: Annotated[bool, typer.Option("--markdown", help="'all': print the table.")] = False,
    progress: Annotated[
        bool | None,
        typer.Option(
            "--progress/--quiet",
            help="Progress lines on stderr: one per audit, and within a user mechanism's "
            "audit one every 5 s (default: when it is a terminal).",
        ),
    ] = None,
    tests: Annotated[
        bool | None,
        typer.Option(
            "--tests/--no-tests", help="'mutants': run the unit tests too (default: yes)."
        ),
    ] = None,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--only", help="'mutants': only this mutant; 'all': only this entry (repeat)."
        ),
    ] = None,
    jobs: Annotated[
        int | None,
        typer.Option(
            help="'all': worker processes, 1 .. 64 (default: the CPUs, at most 2); one "
            "mechanism's audit runs in one process."
        ),
    ] = None,
) -> None:
    """Black-box audit: an eps lower bound for MECHANISM (seed 001); exit 1 on a violation."""
    from ldpfleet.protocol.errors import ParameterError

    show = sys.stderr.isatty() if progress is None else progress
    report = stderr_progress if show else None
    try:
        check_seed(seed)
        if jobs is not None:
            check_jobs(jobs)
        if mechanism == "mutants":
            _refuse_for_mutants(eps=eps, delta=delta, trials=trials, jobs=jobs)
            _print_mutants(only, tests, gamma, seed, report, markdown)
            return
        rows = _checked_audit_rows(
            mechanism, eps, delta, trials, gamma, seed, jobs, report, tests, only
        )
    except ParameterError as error:
        print(f"error: {option_error(error, mechanism, only, tests)}", file=sys.stderr)
        raise typer.Exit(2) from None
    _print_audit_rows(rows, mechanism, markdown)


def _print_mutants(
    only, tests: bool | None, gamma: float, seed: int, report, markdown: bool
) -> None:
    """``audit mutants``: the mutation run (``--only`` mutants; the unit tests too unless
    ``--no-tests``), printed as JSON or docs/audit.md's table."""
    rows = audit_mutants(
        tuple(only or ()), tests=tests is not False, gamma=gamma, seed=seed, progress=report
    )
    print(mutants_markdown(rows) if markdown else json.dumps(rows))


def _checked_audit_rows(
    mechanism, eps, delta, trials, gamma, seed, jobs, report, tests, only
) -> list[dict]:
    """``audit MECHANISM`` (or ``all``) after the refusals of options it does not take:
    its rows. A user mechanism's ``print()`` goes to stderr: stdout carries only the JSON."""
    _refuse_outside_their_command(mechanism, tests=tests, jobs=jobs)
    _battery().refuse_a_plugin_named_like_an_entry(mechanism)
    with contextlib.redirect_stdout(sys.stderr):
        entries = _only_entries(mechanism, only)
        return _audit_rows(mechanism, eps, trials, gamma, seed, delta or 0.0, jobs, report, entries)


def _print_audit_rows(rows: list[dict], mechanism: str, markdown: bool) -> None:
    """The rows (stdout: one JSON object, ``all``'s JSON list, or the table), the
    underpowered warning (stderr); exit 1 when some audit found a violation."""
    _warn_underpowered(rows)
    contradicted = _warn_stated_density(rows)
    if markdown:
        print(markdown_table(rows))
    else:
        print(json.dumps(rows if mechanism == "all" or len(rows) > 1 else rows[0]))
    if contradicted or any(r["verdict"] == "violation" for r in rows):
        raise typer.Exit(1)


def _warn_stated_density(rows: list[dict]) -> bool:
    """One stderr line per audit whose mechanism's own ``density`` contradicts its claim
    (``stated_density.exceeds_claim``: a log-ratio above eps at some report, e.g. a Gaussian
    claimed as pure eps, whose excess lies in tails no sample of the audit reaches); True
    if any. Such a plugin is not eps-LDP, or its density is wrong: exit status 1."""
    found = False
    for row in rows:
        check = row.get("stated_density") or {}
        if not check.get("exceeds_claim"):
            continue
        found = True
        a, b = check["inputs"]
        top = check["max_log_ratio"]
        ratio = "infinite" if top == "inf" else f"{top:.4g}"
        print(
            f"warning: {row['mechanism']} (eps {row['eps_claimed']:g}): its own density "
            f"gives log(density(y, {a:g}) / density(y, {b:g})) = {ratio} at report y = "
            f"{check['report']:.6g}, above the claim: by its own density it is not eps-LDP "
            "(or the density is wrong)",
            file=sys.stderr,
        )
    return found


# audit's options by the field their ParameterError names (the error printed "eps: ..."
# where every other command prints the option, "--eps: ..."); ``mutant`` is the field of an
# unknown ``audit mutants --only`` name
_AUDIT_OPTIONS = {
    "eps": "--eps", "delta": "--delta", "trials": "--trials", "gamma": "--gamma",
    "seed": "--seed", "jobs": "--jobs", "only": "--only", "mutant": "--only",
}  # fmt: skip


def audit_option(field: str | None, tests: bool | None = None) -> str | None:
    """The command-line option of an audit ``ParameterError`` field (None: no option, e.g.
    the ``mechanism`` argument or a field a user mechanism names). ``tests``: the
    ``--tests/--no-tests`` value given, which names that flag."""
    if field == "tests":
        return "--no-tests" if tests is False else "--tests"
    return _AUDIT_OPTIONS.get(field or "")


def option_error(error, mechanism: str, only: list[str] | None, tests: bool | None = None) -> str:
    """The one line of a refused option, naming it as typed (``--eps: reason``, the form
    tests/unit/test_audit.py pins; a field without an option keeps ``field: reason``), and
    for a misspelt name the nearest known one (``audit laplce`` listed 28 names and left
    the user to spot ``laplace``)."""
    option = audit_option(error.field, tests)
    line = f"{option}: {error.reason}" if option else str(error)
    if error.field == "mechanism":
        known = ("all", "mutants", *BATTERY_NAMES, *_registered_plugins())
        return line + _near_miss(mechanism, known)
    if error.field in ("only", "mutant"):
        return line + (
            _plugin_in_only(only or (), mechanism)
            or _near_misses(only or (), _known_only(mechanism))
        )
    return line


def _registered_plugins() -> tuple[str, ...]:
    """The names installed packages register in ``ldpfleet.mechanisms`` (a misspelt plugin
    name is matched against them too), or () when the metadata cannot be read."""
    from ldpfleet.protocol import mechanisms

    try:
        return tuple(
            sorted({e.name for e in mechanisms.entry_points(group=mechanisms.ENTRY_POINT_GROUP)})
        )
    except Exception:  # a broken installed distribution: no suggestion rather than a crash
        return ()


def _plugin_in_only(names, mechanism: str) -> str:
    """``; 'c-pm' is a mechanism, not a battery entry: ...`` for the first ``--only`` name
    of ``audit all`` that is a plugin (an import path or a registered entry point), else
    ''. ``--only`` picks battery entries; a plugin is audited by its own name."""
    if mechanism != "all":
        return ""
    plugins = _registered_plugins()
    for name in names:
        if name not in BATTERY_NAMES and (":" in name or name in plugins):
            return (
                f"; {name!r} is a mechanism, not a battery entry: audit it with ldpfleet "
                f"audit {name} --eps E"
            )
    return ""


def _known_only(mechanism: str) -> tuple[str, ...]:
    """The names ``--only`` takes with ``mechanism``: mutants, else battery entries."""
    if mechanism != "mutants":
        return BATTERY_NAMES
    from ldpfleet.collector.audit.mutants import MUTANTS

    return tuple(m.name for m in MUTANTS)


def _near_misses(names, known: tuple[str, ...]) -> str:
    """``_near_miss`` of the first unknown name."""
    unknown = [name for name in names if name not in known]
    return _near_miss(unknown[0], known) if unknown else ""


def _near_miss(name: str, known: tuple[str, ...]) -> str:
    """`` (did you mean 'laplace'?)`` for a name close to a known one, else ''."""
    import difflib

    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close and close[0] != name else ""


def _refuse_for_mutants(**given) -> None:
    """``audit mutants`` runs each mutant's audits at their own budgets and sizes: an
    ``--eps``, ``--delta``, ``--trials`` or ``--jobs`` given with it was silently ignored."""
    from ldpfleet.protocol.errors import ParameterError

    for name, value in given.items():
        if value is not None:
            raise ParameterError(
                f"'audit mutants' runs each mutant at its own budgets and trials; --{name} "
                f"applies to a mechanism or 'all', got {value!r}",
                field=name,
                limit="a mechanism or 'all' only",
                value=value,
            )


def _refuse_outside_their_command(mechanism: str, *, tests: bool | None, jobs) -> None:
    """``--tests/--no-tests`` outside ``audit mutants`` and ``--jobs`` with one mechanism
    were silently ignored: refused, naming the option and what it applies to."""
    from ldpfleet.protocol.errors import ParameterError

    if tests is not None:
        flag = "--tests" if tests else "--no-tests"
        raise ParameterError(
            f"{flag} applies to 'audit mutants' only (its unit tests), got it with {mechanism!r}",
            field="tests",
            limit="'audit mutants' only",
            value=tests,
        )
    if jobs is not None and mechanism != "all":
        raise ParameterError(
            f"applies to 'all' only (one mechanism's audit runs in one process), got "
            f"--jobs {jobs!r} with {mechanism!r}",
            field="jobs",
            limit="'all' only",
            value=jobs,
        )


def _only_entries(mechanism: str, only: list[str] | None) -> tuple[str, ...] | None:
    """``--only`` of ``audit all``: the battery entries to run (None: all of them)."""
    from ldpfleet.protocol.errors import ParameterError

    if not only:
        return None
    if mechanism != "all":
        raise ParameterError(
            f"applies to 'all' and 'mutants' only, got --only with {mechanism!r}",
            field="only",
            limit="'all' and 'mutants' only",
            value=only,
        )
    known = tuple(_battery().BATTERY)
    unknown = [name for name in only if name not in known]
    if unknown:
        raise ParameterError(
            f"must be battery entries ({', '.join(known)}), got {unknown[0]!r}",
            field="only",
            limit=f"battery entries ({', '.join(known)})",
            value=unknown[0],
        )
    return tuple(dict.fromkeys(only))


def _load_plugin_in_time(mechanism: str, eps: float) -> None:
    """A user mechanism's load-time check under ``scenarios.plugin_load``'s time limit
    (a ``perturb`` that never returned hung the audit forever); the audit's own build then
    finds it done. A battery entry, an unknown name or a budget the audit refuses are left
    to ``run_audit``, which names them."""
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.protocol.mechanism_contract import check_budget
    from ldpfleet.protocol.mechanisms import is_entry_point
    from ldpfleet.scenarios.plugin_load import mechanism_in_time

    if mechanism in _battery().BATTERY or not (":" in mechanism or is_entry_point(mechanism)):
        return
    try:
        check_budget(eps)
    except ParameterError:
        return
    mechanism_in_time(mechanism, eps)


def _warn_underpowered(rows: list[dict]) -> None:
    """One stderr line when some audit's evaluation runs could not certify its claim at all
    (``eps_lb_max`` <= ``eps_claimed``): its "inconclusive" says nothing about the
    mechanism. Names the runs per world that would be enough."""
    from ldpfleet.collector.audit.stats import runs_to_certify

    weak = [r for r in rows if _underpowered(r)]
    if not weak:
        return
    needed = []
    for r in weak:
        n = runs_to_certify(r["eps_claimed"], gamma=r["gamma"], delta=r["delta"])
        needed.append(None if n is None else 2 * n)
    first, most = weak[0], max((n for n in needed if n is not None), default=None)
    bound = "−∞" if first["eps_lb_max"] is None else f"{first['eps_lb_max']:.3g}"
    which = (
        f"{first['mechanism']} (eps {first['eps_claimed']:g})"
        if len(rows) == 1
        else f"{len(weak)} of {len(rows)} audits, e.g. {first['mechanism']} "
        f"(eps {first['eps_claimed']:g})"
    )
    advice = f" (use --trials >= {most})" if most is not None else ""
    print(
        f"warning: --trials: {which} cannot find a violation: {first['n_eval']} evaluation "
        f"runs per world certify at most eps_LB = {bound} at gamma {first['gamma']:.2g}, "
        f"not above the claim{advice}",
        file=sys.stderr,
    )


def _underpowered(row: dict) -> bool:
    top = row.get("eps_lb_max", "inf")
    return top is None or (not isinstance(top, str) and top <= row["eps_claimed"])


def _audit_rows(
    mechanism, eps, trials, gamma, seed, delta, jobs, report, entries=None
) -> list[dict]:
    """The rows of ``ldpfleet audit MECHANISM`` (``all``: every battery entry, or
    ``entries``)."""
    from ldpfleet.protocol.errors import ParameterError

    if eps is None:  # an explicit --eps 1 for 'all' is one budget, not the default three
        eps = "0.5,1,2" if mechanism == "all" else "1"
    eps_list = _parse_eps(eps)
    _check_budgets(eps_list, mechanism, entries)
    if mechanism == "all":
        import os

        workers = min(2, os.cpu_count() or 1) if jobs is None else jobs
        rows = audit_all(
            eps_list,
            trials=trials,
            gamma=gamma,
            seed=seed,
            delta=delta,
            mechanisms=entries,
            progress=report,
            jobs=workers,
        )
    else:
        if len(eps_list) != 1 and mechanism in _battery().BATTERY:
            rule = "one budget per mechanism of the battery (a list for 'all' or a user mechanism)"
            raise ParameterError(rule, field="eps", limit=rule, value=eps_list)
        battery = _battery()
        for budget in eps_list:  # every budget checked before the first audit runs
            battery.check_audit_arguments(
                budget, delta=delta, trials=trials, gamma=gamma, seed=seed
            )
        rows = []
        for index, budget in enumerate(eps_list, start=1):
            if report is not None:
                report(index, len(eps_list), f"{mechanism} (eps {budget:g})")
            _load_plugin_in_time(mechanism, budget)
            # a list of budgets is one family: gamma / m per audit (Bonferroni)
            result = battery.run_audit(
                mechanism,
                budget,
                delta=delta,
                trials=trials,
                gamma=gamma / len(eps_list),
                seed=seed,
                progress=None if report is None else _phase_lines(mechanism, budget),
            )
            rows.append(result.to_dict())
    return rows
