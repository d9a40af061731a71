"""The ``ldpfleet`` command line: the typer ``app`` (the console script's ``main``), its
``trace`` and ``bench`` groups, and which command each name runs.

Every user error (bad scenario key, unreachable broker, port in use, missing data file,
bad trace path) prints one sentence saying what to fix and exits with status 2; never a
traceback unless ``--verbose`` is given.

The commands live in modules with one job each; this module registers them, in the order
``ldpfleet --help`` lists them:

- app/cli_run.py: ``scenarios``, ``run``, ``scenario-reference``
- app/cli_report.py: ``report``, ``merge``
- app/cli_broker.py: ``watch``, ``broker``, ``mosquitto-config``, ``certs``
- app/cli_sides.py: ``fleet``, ``collector`` (a run made of separate processes)
- app/cli_trace.py: ``trace stats/show/follow/export/verify``
- app/cli_bench.py: ``bench fleet/cpr/secagg``; app/cli_bench_cadr.py: ``bench cadr``
- app/bench_commands.py: ``bench cadr-sweep/gcdp/gcdp-timing/gcdp-scaling/mechanisms``
- app/audit_cli.py: ``audit``
- app/cli_docs.py: ``docs`` (the documentation pages shipped with the package)

and they share app/cli_common.py (the console, ``user_errors``, ``OptionError``,
``_fail``), app/cli_options.py (the options several commands take) and app/cli_summary.py
(what a finished run prints). None of them imports this module.

Names other code imports from here are re-exported (``__all__``). A name a test patches is
patched where the code looks it up: ``cli_run._run_any``, ``cli_summary.console``; this
module does not re-export those, so ``monkeypatch.setattr(cli, ...)`` on them fails
loudly instead of patching nothing (tests/unit/test_K4_cli_split.py).
"""

from __future__ import annotations

import inspect
import logging
import sys
from typing import Annotated

import typer
from ldpfleet.app.audit_cli import audit_command
from ldpfleet.app.bench_commands import (
    bench_cadr_sweep,
    bench_gcdp_command,
    bench_gcdp_scaling_command,
    bench_gcdp_timing_command,
    bench_mechanisms_command,
)
from ldpfleet.app.cli_bench import (
    _grid_shapes,
    _secagg_options,
    bench_cpr_command,
    bench_fleet_command,
    bench_secagg_command,
)
from ldpfleet.app.cli_bench_cadr import _bench_graph, bench_cadr_command
from ldpfleet.app.cli_broker import (
    broker_command,
    certs_command,
    mosquitto_config,
    watch_command,
)
from ldpfleet.app.cli_common import (
    USER_ERRORS,
    OptionError,
    _say_interrupted,
    _state,
    user_error_types,
    user_errors,
)
from ldpfleet.app.cli_docs import docs_command
from ldpfleet.app.cli_options import RUN_ID_LIMIT, SEED_MAX
from ldpfleet.app.cli_report import merge_command, report_command
from ldpfleet.app.cli_run import (
    _kept_row,
    _stage_deadline_failed,
    _theta_line,
    check_command,
    run,
    scenario_reference_command,
    scenarios_command,
)
from ldpfleet.app.cli_sides import _collector_summary, collector, fleet
from ldpfleet.app.cli_summary import _print_warnings, _rejection_sentence, _summary_table
from ldpfleet.app.cli_trace import (
    protocol_kinds,
    trace_export,
    trace_follow,
    trace_show,
    trace_stats,
    trace_verify,
)

# what other code imports from this module (tests, app/bench_commands.py,
# ldpfleet/outputs.py, scripts): the command line's own names and the moved helpers
__all__ = [
    "RUN_ID_LIMIT",
    "SEED_MAX",
    "USER_ERRORS",
    "OptionError",
    "_bench_graph",
    "_collector_summary",
    "_grid_shapes",
    "_kept_row",
    "_print_warnings",
    "_rejection_sentence",
    "_secagg_options",
    "_stage_deadline_failed",
    "_summary_table",
    "_theta_line",
    "app",
    "bench_app",
    "bench_cpr_command",
    "main",
    "protocol_kinds",
    "trace_app",
    "user_error_types",
    "user_errors",
]

# Start-up stays cheap (``ldpfleet --help`` and every command's ``--help`` import typer and
# rich, nothing heavy): every command imports what it runs inside its function. The
# commands whose benches need numpy or scipy have their command lines in light modules
# (app/audit_cli.py, app/bench_commands.py); tests/unit/test_cli_imports.py checks this.

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Fleets of IoT devices running local differential privacy over MQTT.",
)
trace_app = typer.Typer(no_args_is_help=True, help="Inspect a recorded trace (OUT/trace.sqlite).")
bench_app = typer.Typer(no_args_is_help=True, help="Benchmarks that print JSON.")
app.add_typer(trace_app, name="trace")
app.add_typer(bench_app, name="bench")


def _print_version(value: bool) -> None:
    if value:
        print(f"ldpfleet {package_version()}")
        raise typer.Exit()


def package_version() -> str:
    """The installed distribution's version (``ldpfleet.__version__`` in a source tree)."""
    from importlib import metadata

    try:
        return metadata.version("ldpfleet")
    except metadata.PackageNotFoundError:
        import ldpfleet

        return ldpfleet.__version__


@app.callback()
def _global(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Show details and tracebacks.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    _state["verbose"] = verbose
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    # amqtt logs its own tracebacks (e.g. a port in use) before we print one clear line
    # for them: only with --verbose
    for noisy in ("amqtt", "transitions"):
        logging.getLogger(noisy).setLevel(logging.WARNING if verbose else logging.CRITICAL)


# in the order of the listings (``ldpfleet --help``, ``ldpfleet trace --help`` ...)
app.command("scenarios")(scenarios_command)
app.command()(run)
app.command("check")(check_command)
app.command("watch")(watch_command)
app.command("scenario-reference")(scenario_reference_command)
app.command("report")(report_command)
app.command("merge")(merge_command)
app.command("broker")(broker_command)
app.command()(fleet)
app.command()(collector)
app.command("mosquitto-config")(mosquitto_config)
app.command("certs")(certs_command)
app.command("docs")(docs_command)
trace_app.command("stats")(trace_stats)
trace_app.command("show")(trace_show)
trace_app.command("follow")(trace_follow)
trace_app.command("export")(trace_export)
trace_app.command("verify")(trace_verify)
bench_app.command("fleet")(bench_fleet_command)
bench_app.command("cpr")(bench_cpr_command)
bench_app.command("secagg")(bench_secagg_command)
bench_app.command("cadr")(bench_cadr_command)


def _one_line_command(group: typer.Typer, name: str, function) -> None:
    """Register ``function`` as ``name`` in ``group``; its line in the listing is its
    docstring's first paragraph joined into one line (not broken where the docstring is)."""
    line = " ".join(inspect.cleandoc(function.__doc__).split("\n\n")[0].split())
    group.command(name, short_help=line)(function)


# the command lines of app/audit_cli.py and app/bench_commands.py: their benches import
# numpy or scipy when they run
_one_line_command(bench_app, "cadr-sweep", bench_cadr_sweep)  # counts its own cells
_one_line_command(bench_app, "gcdp", bench_gcdp_command)
_one_line_command(app, "audit", audit_command)
_one_line_command(bench_app, "gcdp-timing", bench_gcdp_timing_command)
_one_line_command(bench_app, "mechanisms", bench_mechanisms_command)
_one_line_command(bench_app, "gcdp-scaling", bench_gcdp_scaling_command)


def _one_line_listings() -> None:
    """Every command's line in its group's listing is its docstring's first paragraph
    joined into one line (as ``_one_line_command`` does): a docstring's hard line breaks
    put "the name `ldpfleet run NAME` takes and" and "the scenario's description." on two
    lines of ``ldpfleet --help`` at any terminal width."""
    for group in (app, trace_app, bench_app):
        for info in group.registered_commands:
            doc = info.help or (info.callback.__doc__ if info.callback else None)
            if info.short_help is None and doc:
                info.short_help = " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())


_one_line_listings()


def main() -> None:
    """Console-script entry point. Typer ends a command that Ctrl-C stopped with exit status
    130 and no word; "interrupted" says it stopped (once: ``user_errors`` says it itself)."""
    _state["interrupted_said"] = False  # per invocation (tests call main() repeatedly)
    try:
        app()
    except SystemExit as stopped:
        if stopped.code == 130 and not _state.get("interrupted_said"):
            _say_interrupted("interrupted")
        raise


if __name__ == "__main__":
    sys.exit(main())
