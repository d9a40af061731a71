"""What every ``ldpfleet`` command shares: the stderr ``console``, the expected failures
turned into one sentence and exit status 2 (``user_errors``), a command that ran but failed
(``_fail``, exit 1), the ``--verbose`` state, and ``OptionError``, the one way a command
line option is refused.

Imports typer and rich only: ``ldpfleet --help`` loads this module
(tests/unit/test_cli_imports.py).
"""

from __future__ import annotations

import contextlib
import sys
from typing import NoReturn

import typer
from rich.console import Console

console = Console(stderr=True)

# (module, exception): the expected failures, shown as one line. They are looked up among
# the modules already imported: an exception of a module never imported was never raised.
USER_ERRORS = (
    ("ldpfleet.scenarios.schema", "ScenarioError"),
    ("ldpfleet.broker.select", "BrokerUnavailable"),
    ("ldpfleet.broker.mqtt", "BrokerUrlError"),
    ("ldpfleet.broker.embedded", "EmbeddedBrokerError"),
    ("ldpfleet.broker.transport", "TransportError"),
    ("ldpfleet.devices.sources", "SourceError"),
    ("ldpfleet.protocol.errors", "ParameterError"),
    ("ldpfleet.broker.trace", "TraceError"),
    ("ldpfleet.broker.auth", "AuthError"),
    ("ldpfleet.broker.tls", "TlsError"),
    # the collector process refused the run (a refusal only the run can make): the line
    # the in-process runner prints for the same scenario, exit 2, no output folder
    ("ldpfleet.scenarios.split_run", "SplitRunRefused"),
)
_state = {"verbose": False}


def user_error_types() -> tuple[type[BaseException], ...]:
    """The exception classes of ``USER_ERRORS`` whose modules are imported."""
    loaded = ((sys.modules.get(module), name) for module, name in USER_ERRORS)
    return tuple(getattr(module, name) for module, name in loaded if module is not None)


@contextlib.contextmanager
def user_errors():
    """Turn expected failures into one clear line and exit status 2."""
    try:
        yield
    except user_error_types() as error:
        if _state["verbose"]:
            console.print_exception()
        # a scenario refused with several mistakes (ScenarioError.errors): one line each,
        # then "... and N more" past the ones it lists (scenarios/schema_collect.py)
        from ldpfleet.scenarios.schema_errors import ScenarioError

        several = isinstance(error, ScenarioError)  # the one user error that lists others
        errors = (error.errors or (error,)) if several else (error,)
        omitted = error.omitted if several else 0
        lines = [str(each) for each in errors] + ([f"... and {omitted} more"] if omitted else [])
        for line in lines[:-1]:
            _say_error(line)
        _refuse(lines[-1])
    except KeyboardInterrupt:
        _say_interrupted("interrupted")
        raise typer.Exit(130) from None
    except (ImportError, AttributeError) as error:
        shadow = stdlib_shadow()
        if shadow is None:
            raise
        _refuse(f"{shadow} ({type(error).__name__}: {error})")


def _refuse(sentence: str) -> NoReturn:
    """``error: sentence`` and exit status 2 (a user error)."""
    _say_error(sentence)
    raise typer.Exit(2) from None


def _say_error(sentence: str) -> None:
    """``error: sentence``. Escaped: a message naming a section ([stream]) is not rich
    markup; no emoji codes: a value such as 'data.csv:v:' or 'nope:smile:' printed as
    'data.csv✌', 'nope😄'."""
    from rich.markup import escape

    console.print(
        f"[bold red]error:[/] {escape(sentence)}", highlight=False, soft_wrap=True, emoji=False
    )


def stdlib_shadow() -> str | None:
    """One sentence naming a file of the user's, in a folder on ``PYTHONPATH`` (or the
    current folder when it is on the import path), that has the name of one of Python's
    own modules and was imported in its place, or None. Such a file (a plugin saved as
    ``secrets.py`` or ``statistics.py``) hides that module from numpy and ldpfleet, which
    then fail with an ``ImportError`` or ``AttributeError`` deep inside numpy (helper E's
    user trial, round 4: ``ImportError: cannot import name randbits``, a traceback and
    exit 1). One imported before any command runs (``random.py``, by rich) still fails
    with Python's traceback."""
    import os

    folders = [f for f in os.environ.get("PYTHONPATH", "").split(os.pathsep) if f]
    if "" in sys.path or "." in sys.path:
        folders.append(os.getcwd())
    for folder in dict.fromkeys(os.path.abspath(f) for f in folders):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in sorted(names):
            stem = name.removesuffix(".py")
            is_module = name.endswith(".py") or os.path.isfile(
                os.path.join(folder, name, "__init__.py")
            )
            loaded = getattr(sys.modules.get(stem), "__file__", None) or ""
            where = os.path.join(folder, name)
            # only the file Python did import in that module's place (a test.py nobody
            # imported is not blamed for another error)
            if is_module and stem in sys.stdlib_module_names and loaded.startswith(where):
                return (
                    f"{where} (on PYTHONPATH) has the name of Python's own module {stem!r}, "
                    "which it hides from numpy and ldpfleet: rename it (e.g. "
                    f"my_{stem}{'.py' if name.endswith('.py') else ''}) and the mechanism's "
                    f"module in the scenario with it (my_{stem}:Class)"
                )
    return None


def _say_interrupted(sentence: str) -> None:
    """The one line a Ctrl-C prints (``main`` prints "interrupted" for the commands that
    did not say it themselves)."""
    console.print(sentence, highlight=False, soft_wrap=True)
    _state["interrupted_said"] = True


class OptionError(typer.BadParameter):
    """A refused command-line option, as data: ``option`` (``"--steps"``), the ``limit`` it
    breaks (``"at least 1"``) and the ``value`` given, with an optional ``hint`` (what to do
    instead). The sentence is built from them: ``--steps must be at least 1, got 0``. A
    ``typer.BadParameter``: click prints it as a usage error and the command exits 2. Every
    option refusal of the command line (app/cli*.py) goes through it
    (tests/unit/test_F_option_error.py)."""

    def __init__(self, option: str, limit: str, value: object, *, hint: str = "") -> None:
        self.option = option
        self.limit = limit
        self.value = value
        self.hint = hint
        sentence = f"{option} must be {limit}, got {_shown(value)}"
        super().__init__(f"{sentence} ({hint})" if hint else sentence)


def _shown(value: object) -> str:
    """An option's value in a refusal: numbers as given, text quoted (an empty one shows)."""
    if isinstance(value, int | float):
        return str(value)
    return repr(str(value))


def _fail(sentence: str, label: str = "failed", style: str = "bold red") -> NoReturn:
    """``label: sentence`` (the label in ``style``, the sentence printed verbatim) and exit
    status 1: a command that ran but whose result is not what it should be (a bench that is
    not exact, a run that lost reports, was aborted or rejected) or that stopped on an
    error its one sentence explains."""
    from rich.markup import escape

    console.print(f"[{style}]{label}:[/] {escape(sentence)}", highlight=False, soft_wrap=True)
    raise typer.Exit(1) from None
