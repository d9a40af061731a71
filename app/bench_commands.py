"""The ``ldpfleet bench`` commands whose benches need numpy or scipy: ``gcdp``,
``gcdp-timing``, ``gcdp-scaling``, ``cadr-sweep`` and ``mechanisms``.

Only their command lines live here: the typer signatures (options, defaults, help texts)
and the constants those need. Each body imports its bench when the command runs, so
listing the commands and printing their ``--help`` import typer and nothing heavy
(tests/unit/test_cli_imports.py). The benches are in ``app/bench_gcdp.py``,
``app/bench_gcdp_scaling.py``, ``app/cadr_sweep.py`` and ``app/bench_mechanisms.py``, which
import these constants from here and re-export their command.
"""

from __future__ import annotations

import contextlib
import json
import shlex
import sys
from collections.abc import Callable
from contextlib import redirect_stdout
from typing import Annotated, NoReturn, TypeVar

import typer

__all__ = [
    "CADR_SWEEP_DEFAULT_EPS_LIST",
    "CADR_SWEEP_DEFAULT_THETAS",
    "GCDP_DATASETS",
    "GCDP_DRAWS_MAX",
    "GCDP_EPS_MAX",
    "GCDP_EPS_MIN",
    "GCDP_METHODS",
    "GCDP_REPEATS_MAX",
    "GCDP_SEED_MAX",
    "MECHANISMS",
    "MECHANISM_DISTRIBUTIONS",
    "SCALING_DEFAULT_PLOT",
    "SCALING_DEFAULT_RECORDS",
    "bench_cadr_sweep",
    "bench_gcdp_command",
    "bench_gcdp_scaling_command",
    "bench_gcdp_timing_command",
    "bench_mechanisms_command",
]

# bench gcdp (app/bench_gcdp.py: METHODS, DATASETS)
GCDP_METHODS = ("NonPrivate", "Lap-DP", "Gau-DP", "Ada-DP", "Risk-DP", "GC-DP")
GCDP_DATASETS = ("occupancy", "intel", "wisdm")
# bench gcdp's limits (docs/gcdp.md "Evaluation"): a release budget in [0.001, 50], the
# range of bench cadr and of the wire (50; protocol.mechanism_contract.EPS_MAX). Below
# 0.001 a window mean's noise scale (1/30)/(0.001/5) = 167 is already over a hundred times
# the [0, 1] range, and the draws' generators key a budget to 6 decimals (1e-300 was
# accepted and keyed as 0); 1e300 ran with a cast overflow in the printed budgets.
GCDP_EPS_MIN = 1e-3
GCDP_EPS_MAX = 50.0
GCDP_DRAWS_MAX = 10_000  # draws (and gcdp-timing repeats below): 1e11 ran for ever
GCDP_REPEATS_MAX = 1_000
GCDP_SEED_MAX = 2**63 - 1  # as --seed of ldpfleet run ([scenario] seed)
# bench gcdp-scaling (app/bench_gcdp_scaling.py: DEFAULT_RECORDS, DEFAULT_PLOT)
SCALING_DEFAULT_RECORDS = 2000
# in the current folder (docs/img/ before 2026-12-06: it made docs/img/ in a user's folder)
SCALING_DEFAULT_PLOT = "gcdp-scaling.png"
# bench cadr-sweep (app/cadr_sweep.py: DEFAULT_THETAS, DEFAULT_EPS_LIST)
CADR_SWEEP_DEFAULT_THETAS = "1..100"
CADR_SWEEP_DEFAULT_EPS_LIST = "1,1.5,2,2.5,3"
# how the command line was started, for the cadr-sweep tables' provenance line
# (``python -m ldpfleet.app.cadr_sweep`` sets its own)
CADR_SWEEP_PROG = "ldpfleet"
# bench mechanisms (app/bench_mechanisms.py: MECHANISMS; DISTRIBUTIONS maps these names)
MECHANISMS = ("sw", "sw01", "laplace", "duchi", "piecewise", "hybrid")
MECHANISM_DISTRIBUTIONS = ("uniform", "skewed", "constant", "bimodal", "occupancy-light")


def bench_gcdp_command(
    dataset: Annotated[
        str, typer.Option(help="Data set: " + ", ".join(GCDP_DATASETS) + ".")
    ] = "occupancy",
    method: Annotated[
        str, typer.Option(help="'all' or a comma list of " + ", ".join(GCDP_METHODS) + ".")
    ] = "all",
    eps: Annotated[
        str, typer.Option(help="Comma list of distinct release budgets in [0.001, 50].")
    ] = "0.2,0.5,1,2,4",
    draws: Annotated[int, typer.Option(help="Noise draws per budget (1 .. 10,000).")] = 10,
    seed: Annotated[int, typer.Option(help="Seed of every draw (0 .. 2^63-1).")] = 0,
    train_file: Annotated[
        str, typer.Option(help="Occupancy only: calibration + training file ('' = shipped).")
    ] = "",
    test_file: Annotated[
        str, typer.Option(help="Occupancy only: protected release file ('' = datatest.txt).")
    ] = "",
    decimal: Annotated[
        str,
        typer.Option(
            help="Occupancy only: the decimal mark of --train-file and --test-file, '.' or "
            "',' (23,18 and 1.050,0 in fields separated by ';' or tabs; 1.234 is refused)."
        ),
    ] = ".",
    window: Annotated[
        int | None, typer.Option(help="Occupancy only: records per window (default 30).")
    ] = None,
    clip: Annotated[str, typer.Option(help="Reading: clipping interval, iqr or minmax.")] = "iqr",
    utility: Annotated[str, typer.Option(help="Reading: mu_k, mask or corr.")] = "mask",
    gau_l2: Annotated[
        str, typer.Option(help="Reading: Gau-DP l2 certificate, occurrence or sum.")
    ] = "occurrence",
    attacker: Annotated[
        str, typer.Option(help="Reading (occupancy): attacker inputs, others or all.")
    ] = "others",
    readings: Annotated[
        str,
        typer.Option(
            help="More readings, name=value comma list: split (refit|holdout|train), "
            "task_fit, attacker_fit (clean|private), weights (none|balanced), attribute "
            "(humidity_ratio|temperature|humidity|light|co2|occupancy), attack "
            "(temporal|clean|informed|informed_qda), task_l2 (1e-2|1|1e-4), task_model "
            "(window|temporal), gau_sigma "
            "(analytic_discrete|zcdp|classic|analytic), gau_delta (1e-5|1e-6|1e-7), "
            "risk_offset (one|eta), risk_scales (bounds|gcdp|direct), xi_mask "
            "(occurrence|node), xi_aggregate (mean|max), xi_mask_value (zero|mean), "
            "xi_neighbours (coordinate|own); docs/gcdp.md."
        ),
    ] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON only.")] = True,
) -> None:
    """Seed 000's evaluation on Occupancy, Intel Lab or WISDM: F1 and attack AUC per method
    and budget, the eps = 1 ablations, runtime, peak memory."""
    from ldpfleet.app import bench_gcdp
    from ldpfleet.app.gcdp_datasets import parse_readings
    from ldpfleet.app.progress import as_callback, job_progress

    with _gcdp_refusals():
        methods = GCDP_METHODS if method.strip() == "all" else tuple(
            m.strip() for m in method.split(",") if m.strip()
        )  # fmt: skip
        eps_list = _comma_numbers(eps, "eps_list", float, "numbers")
        chosen = parse_readings(readings, bench_gcdp.Readings(
            clip=clip, utility=utility, gau_l2=gau_l2, attacker=attacker))  # fmt: skip
        with job_progress(f"bench gcdp {dataset}", unit="cells") as advance:
            result = bench_gcdp.bench_gcdp(
                dataset, methods, eps_list, draws, seed, train_file=train_file or None,
                test_file=test_file or None, decimal=decimal, readings=chosen,
                window=window, progress=as_callback(advance),
            )  # fmt: skip
    print(json.dumps(result, indent=None if as_json else 2))


# the bench gcdp* options by the field their ParameterError names (the error printed
# "eps_list: ..." for --eps, "methods: ..." for --method)
_GCDP_OPTIONS = {
    "dataset": "--dataset", "methods": "--method", "eps_list": "--eps", "draws": "--draws",
    "seed": "--seed", "window": "--window", "train_file": "--train-file",
    "test_file": "--test-file", "decimal": "--decimal", "repeats": "--repeats", "ms": "--ms",
    "records": "--records", "plot": "--plot", "readings": "--readings",
}  # fmt: skip
_READING_FLAGS = ("clip", "utility", "gau_l2", "attacker")  # readings with a flag of their own


def gcdp_option(field: str | None) -> str | None:
    """The command-line option of a bench gcdp* ``ParameterError`` field (None: no option,
    e.g. a data column ``train[:, 2]``)."""
    if field in _GCDP_OPTIONS:
        return _GCDP_OPTIONS[field]
    if field and field.startswith("readings."):
        name = field.split(".", 1)[1]
        return "--" + name.replace("_", "-") if name in _READING_FLAGS else f"--readings {name}"
    return None


def _refuse(error) -> NoReturn:
    """Print a bench gcdp* ``ParameterError`` naming the option (exit status 2)."""
    option = gcdp_option(error.field)
    print(f"error: {f'{option}: {error.reason}' if option else error}", file=sys.stderr)
    raise typer.Exit(2) from None


Number = TypeVar("Number", int, float)


@contextlib.contextmanager
def _gcdp_refusals():
    """A bench gcdp* ``ParameterError`` raised inside (an option's parser or the bench's own
    check) is printed naming the option, exit status 2 (``_refuse``)."""
    from ldpfleet.protocol.errors import ParameterError

    try:
        yield
    except ParameterError as error:
        _refuse(error)


def _comma_numbers(
    text: str, field: str, convert: Callable[[str], Number], noun: str
) -> tuple[Number, ...]:
    """The non-empty entries of a comma list, each ``convert``-ed (``int`` or ``float``);
    ``ParameterError`` ``not a comma list of <noun>`` naming ``field`` if one does not."""
    from ldpfleet.protocol.errors import ParameterError

    try:
        return tuple(convert(v) for v in text.split(",") if v.strip())
    except ValueError:
        raise ParameterError(
            f"not a comma list of {noun}: {text!r}",
            field=field,
            limit=f"a comma list of {noun}",
            value=text,
        ) from None


def bench_gcdp_timing_command(
    repeats: Annotated[
        int, typer.Option(help="Timed passes per method (median; 1 .. 1,000).")
    ] = 20,
    seed: Annotated[int, typer.Option(help="Seed of every draw (0 .. 2^63-1).")] = 0,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON only.")] = True,
) -> None:
    """Occupancy: median wall time of one calibration-and-release pass per method
    (Lap-DP, Ada-DP, Risk-DP, GC-DP, GC-DP-Cache) against the seed's Table 12."""
    from ldpfleet.app import bench_gcdp_scaling
    from ldpfleet.app.progress import as_callback, job_progress

    with _gcdp_refusals(), job_progress("bench gcdp-timing", unit="passes") as advance:
        result = bench_gcdp_scaling.bench_gcdp_timing(repeats, seed, progress=as_callback(advance))
    print(json.dumps(result, indent=None if as_json else 2))


def bench_gcdp_scaling_command(
    ms: Annotated[
        str, typer.Option(help="Comma list of distinct node counts M (2 .. 3,000).")
    ] = "10,30,100,300,1000",
    records: Annotated[
        int, typer.Option(help="Synthetic records N (>= 40; N x largest M <= 2e7).")
    ] = SCALING_DEFAULT_RECORDS,
    repeats: Annotated[int, typer.Option(help="Timed runs per M (median; 1 .. 1,000).")] = 3,
    seed: Annotated[int, typer.Option(help="Seed of the synthetic data (0 .. 2^63-1).")] = 0,
    plot: Annotated[str, typer.Option(help="A .png path ('' = no plot).")] = SCALING_DEFAULT_PLOT,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON only.")] = True,
) -> None:
    """Calibration time per step against the number of nodes M (synthetic correlated
    data), as JSON and a log-log PNG plot."""
    from ldpfleet.app import bench_gcdp_scaling
    from ldpfleet.app.progress import as_callback, job_progress

    with _gcdp_refusals():
        ms_list = _comma_numbers(ms, "ms", int, "integers")
        with job_progress("bench gcdp-scaling", unit="passes") as advance:
            result = bench_gcdp_scaling.bench_gcdp_scaling(
                ms_list, records, repeats, seed, plot=plot or None, progress=as_callback(advance)
            )
    print(json.dumps(result, indent=None if as_json else 2))


def bench_cadr_sweep(
    graph: Annotated[
        str, typer.Option(help="facebook, wiki-vote, kind:n=N,... or a SNAP edge-list path.")
    ] = "facebook",
    methods: Annotated[
        str,
        typer.Option(
            help="Comma-separated: ll, lh, ra, er (the projections, at an equal DSR budget) "
            "and clip (the default method, its own rows: DSR at ε − ε_θ)."
        ),
    ] = "ll,lh,ra,er,clip",
    thetas: Annotated[
        str, typer.Option(help="θ grid: 1..100, 5..100:5, 1,2,4 or a mix ('' skips).")
    ] = CADR_SWEEP_DEFAULT_THETAS,
    eps: Annotated[float, typer.Option(help="Budget of the θ sweep.")] = 3.0,
    eps_list: Annotated[
        str, typer.Option(help="Budgets of the ε sweep, comma-separated ('' skips).")
    ] = CADR_SWEEP_DEFAULT_EPS_LIST,
    alpha: Annotated[float, typer.Option(help="Share of eps for NDOE + LPEA.")] = 0.1,
    runs: Annotated[int, typer.Option(help="Runs per cell (seeds seed..seed+runs-1).")] = 5,
    seed: Annotated[int, typer.Option(help="First seed.")] = 0,
    workers: Annotated[int, typer.Option(help="Worker processes.")] = 2,
    pipelines: Annotated[
        bool, typer.Option(help="Also paper vs dp (post-processed) over the ε list.")
    ] = False,
    as_json: Annotated[
        bool, typer.Option("--json/--markdown", help="JSON (default) or the docs tables.")
    ] = True,
) -> None:
    """CADR-LDP private tables: MAE/MSE vs θ and vs ε, chosen θ vs the MAE-minimising θ."""
    from ldpfleet.app import cadr_sweep
    from ldpfleet.app.audit_cli import check_seed
    from ldpfleet.app.cli_bench_cadr import _bench_graph
    from ldpfleet.app.cli_common import user_errors
    from ldpfleet.app.progress import as_callback, job_progress
    from ldpfleet.scenarios.cadr_run import scenario_graph_source
    from ldpfleet.scenarios.schema import ScenarioError

    with user_errors():
        g = _bench_graph(scenario_graph_source(graph, None))  # as ``bench cadr``: --graph: ...
        with _sweep_options():
            check_seed(seed)  # --seed -1 ended in a numpy ValueError traceback
            if workers < 1:  # --workers 0 / -3 ran one worker without a word (helper F)
                raise ScenarioError(f"--workers must be an integer >= 1, got {workers}")
            parsed = {
                "--methods": lambda: cadr_sweep.parse_methods(methods),
                "--thetas": lambda: cadr_sweep.parse_thetas(thetas) if thetas.strip() else None,
                "--eps-list": lambda: cadr_sweep.parse_eps(eps_list),
            }
            values = {}
            for option, parse in parsed.items():
                with _sweep_options(option):
                    values[option] = parse()
            if values["--thetas"] is None and not values["--eps-list"]:
                # both sweeps skipped: it ran nothing and printed empty tables (helper G)
                raise ScenarioError(
                    "--thetas and --eps-list are both empty: nothing to sweep (give a θ grid, "
                    "e.g. --thetas 1..100, or budgets, e.g. --eps-list 0.5,1,2)"
                )
            with job_progress("bench cadr-sweep", unit="cells") as advance:
                result = cadr_sweep.cadr_sweep(
                    g,
                    methods=values["--methods"],
                    thetas=values["--thetas"],
                    eps=eps,
                    eps_list=values["--eps-list"],
                    alpha=alpha,
                    runs=runs,
                    seed=seed,
                    workers=max(1, workers),
                    pipelines=pipelines,
                    progress=as_callback(advance),
                )
    if as_json:
        print(json.dumps(result))
    else:
        # quoted: --thetas '' was shown as "--thetas  --eps-list", a command that does not
        # run as printed (helper G's user trial, 2026-12-06)
        shown = " ".join([CADR_SWEEP_PROG, *map(shlex.quote, sys.argv[1:])])
        print(cadr_sweep.markdown(result, shown))


@contextlib.contextmanager
def _sweep_options(option: str | None = None):
    """A ``bench cadr-sweep`` ``ParameterError`` as a one-line ``ScenarioError`` naming the
    option as typed (``--methods: ...``; it said ``methods: ...``, the parameter's field):
    ``option`` when the caller knows it, else the field's option."""
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.scenarios.schema import ScenarioError

    try:
        yield
    except ParameterError as error:
        name = option or ("--" + error.field.replace("_", "-") if error.field else None)
        raise ScenarioError(f"{name}: {error.reason}" if name else str(error)) from None


MAX_BENCH_SIZE = 10_000_000  # one population as float64: 80 MB (1e12 was a MemoryError)
SEED_LIMIT = 2**63 - 1


def _comma_list(text: str, field: str) -> tuple[str, ...]:
    """The entries of a comma-list option: ``ParameterError`` (naming ``field``) for no
    entry (an empty bench, exit 0), an empty entry (``1,,2``) or an entry listed twice
    (duplicate rows)."""
    from ldpfleet.protocol.errors import ParameterError

    entries = tuple(v.strip() for v in text.split(","))
    if entries == ("",):
        raise ParameterError(
            "needs at least one value", field=field, limit="at least one value", value=text
        )
    if "" in entries:
        raise ParameterError(
            f"an empty entry in {text!r}", field=field, limit="no empty entry", value=text
        )
    for index, entry in enumerate(entries):
        if entry in entries[:index]:
            raise ParameterError(
                f"{entry!r} is listed twice in {text!r}",
                field=field,
                limit="each value listed once",
                value=entry,
            )
    return entries


def _sizes(text: str) -> tuple[int, ...]:
    """``--sizes``: whole numbers 1 .. ``MAX_BENCH_SIZE`` (0 was a ZeroDivisionError, 1.5
    was measured at n = 1, -3 an unnamed "expected non-negative integer")."""
    from ldpfleet.protocol.errors import ParameterError

    sizes = []
    for entry in _comma_list(text, "sizes"):
        try:
            value = int(entry)
        except ValueError:
            value = 0
        if not 1 <= value <= MAX_BENCH_SIZE:
            raise ParameterError(
                f"must be whole numbers 1 .. {MAX_BENCH_SIZE:,}, got {entry!r}",
                field="sizes",
                limit=f"whole numbers 1 .. {MAX_BENCH_SIZE:,}",
                value=entry,
            )
        sizes.append(value)
    return tuple(sizes)


def _eps_list(text: str) -> tuple[float, ...]:
    """``--eps``: numbers (the range is the mechanisms' check); "x" said only "could not
    convert string to float"."""
    from ldpfleet.protocol.errors import ParameterError

    values = []
    for entry in _comma_list(text, "eps"):
        try:
            values.append(float(entry))
        except ValueError:
            raise ParameterError(
                f"not a number: {entry!r}", field="eps", limit="a number", value=entry
            ) from None
    return tuple(values)


# bench mechanisms --trials: at most this many (--trials 1e11 was a MemoryError traceback
# for its 745 GiB error array), and trials x largest n privatisations per cell at most
# MAX_PRIVATISATIONS (1e9: about 500 times the default cell's 200 x 10,000)
MAX_TRIALS = 1_000_000
MAX_PRIVATISATIONS = 1_000_000_000


def _check_mechanism_bench(trials: int, seed: int, sizes: tuple[int, ...] = (1,)) -> None:
    from ldpfleet.protocol.errors import ParameterError

    if trials < 2:  # one trial has no spread: NaN rows (0) or a numpy message (-1)
        raise ParameterError(
            f"must be at least 2 (the bias test needs a spread), got {trials}",
            field="trials",
            limit="at least 2",
            value=trials,
        )
    if trials > MAX_TRIALS:
        raise ParameterError(
            f"must be at most {MAX_TRIALS:,}, got {trials}",
            field="trials",
            limit=f"at most {MAX_TRIALS:,}",
            value=trials,
        )
    if trials * max(sizes) > MAX_PRIVATISATIONS:
        raise ParameterError(
            f"trials x largest size = {trials:,} x {max(sizes):,} privatisations per cell is "
            f"over {MAX_PRIVATISATIONS:,}: lower --trials or --sizes, got {trials}",
            field="trials",
            limit=f"trials x largest size <= {MAX_PRIVATISATIONS:,}",
            value=trials,
        )
    if not 0 <= seed <= SEED_LIMIT:
        raise ParameterError(
            f"must be 0 .. 2^63-1, got {seed}", field="seed", limit="0 .. 2^63-1", value=seed
        )


# a ``bench mechanisms`` ParameterError's field -> the option it names ("mechanism": one
# entry of --mechanisms that does not load)
_MECHANISM_OPTIONS = {
    "mechanisms": "--mechanisms",
    "mechanism": "--mechanisms",
    "eps": "--eps",
    "sizes": "--sizes",
    "distributions": "--distributions",
    "trials": "--trials",
    "seed": "--seed",
}


def bench_mechanisms_command(
    mechanisms: Annotated[
        str, typer.Option(help="Comma list: built-ins or package.module:Class.")
    ] = ",".join(MECHANISMS),
    eps: Annotated[str, typer.Option(help="Comma list of budgets per report.")] = "0.5,1,2,4",
    sizes: Annotated[
        str, typer.Option(help="Comma list of population sizes n.")
    ] = "100,1000,10000",
    distributions: Annotated[
        str, typer.Option(help="Comma list: " + ", ".join(MECHANISM_DISTRIBUTIONS) + ".")
    ] = ",".join(MECHANISM_DISTRIBUTIONS),
    trials: Annotated[
        int,
        typer.Option(
            help="Privatisations of each population (2 .. 1,000,000; x largest n <= 1e9)."
        ),
    ] = 200,
    seed: Annotated[int, typer.Option(help="Seed of the populations and the noise.")] = 0,
    markdown_out: Annotated[
        bool, typer.Option("--markdown", help="Print the tables of docs/mechanisms.md.")
    ] = False,
) -> None:
    """Mean-estimation MSE of the stream mechanisms (empirical and analytic) by budget,
    input distribution and population size."""
    from ldpfleet.app import bench_mechanisms
    from ldpfleet.app.progress import as_callback, job_progress
    from ldpfleet.protocol.errors import ParameterError

    try:
        mechanism_names = _comma_list(mechanisms, "mechanisms")
        eps_list = _eps_list(eps)
        size_list = _sizes(sizes)
        _check_mechanism_bench(trials, seed, size_list)
        distribution_names = _comma_list(distributions, "distributions")
        unknown = [d for d in distribution_names if d not in MECHANISM_DISTRIBUTIONS]
        if unknown:
            raise ParameterError(
                f"must be among {', '.join(MECHANISM_DISTRIBUTIONS)}, got {unknown[0]!r}",
                field="distributions",
                limit=f"among {', '.join(MECHANISM_DISTRIBUTIONS)}",
                value=unknown[0],
            )
        # a user mechanism's print() goes to stderr: stdout carries only the result
        with job_progress("bench mechanisms", unit="cells") as advance, redirect_stdout(sys.stderr):
            result = bench_mechanisms.bench_mechanisms(
                mechanisms=mechanism_names,
                eps_list=eps_list,
                sizes=size_list,
                distributions=distribution_names,
                trials=trials,
                seed=seed,
                progress=as_callback(advance),
            )
    except (ParameterError, ValueError) as error:
        option = _MECHANISM_OPTIONS.get(getattr(error, "field", None) or "")
        reason = getattr(error, "reason", None)
        print(f"error: {f'{option}: {reason}' if option and reason else error}", file=sys.stderr)
        raise typer.Exit(2) from None
    for line in bench_mechanisms.bias_warnings(result):  # stderr: stdout stays the result
        print(line, file=sys.stderr)
    print(bench_mechanisms.markdown(result) if markdown_out else json.dumps(result))
