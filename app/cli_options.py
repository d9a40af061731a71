"""The command-line options several ``ldpfleet`` commands share: their typer declarations
(``BrokerOption``, ``SeedOption``, ``CredentialsOption`` ...) and the parsers and callbacks
that refuse a bad value with an ``OptionError`` (``--out``, ``--run``, durations, counts),
and ``_credentials``, which loads ``--credentials``.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Annotated

import typer
from ldpfleet.app.cli_common import OptionError


def _broker_option(value: str | None) -> str | None:
    """``run --broker``: an empty value (``--broker "$URL"`` with ``URL`` unset) was read as
    no option, and the run went to the scenario's broker (the embedded one by default)
    instead of the one meant; ``collector``, ``fleet``, ``watch`` and ``bench`` refuse it."""
    if value is not None and not value.strip():
        raise OptionError(
            "--broker",
            "embedded, memory, mqtt://host:port or mqtts://host:port?ca=PATH",
            value,
            hint="an empty value is not 'the default': an unset shell variable? give the "
            "broker, or leave --broker out for the scenario's [broker] url",
        )
    return value


BrokerOption = Annotated[
    str | None,
    typer.Option(
        "--broker",
        "-b",
        help="embedded (default: in-process amqtt), memory (no broker), "
        "mqtt://\\[user:pass@]host:port or mqtts://host:port?ca=PATH (TLS, docs/brokers.md)",
        callback=_broker_option,
    ),
]


ShardBrokerOption = Annotated[
    list[str] | None,
    typer.Option(
        "--shard-broker",
        help="A broker node for the device shards (repeat: shard i uses the i-th mod n, "
        "e.g. the nodes of a cluster); the collector uses --broker.",
    ),
]


SEED_MAX = 2**63 - 1  # [scenario] seed's limit (scenarios/schema.py), kept by --seed too
SeedOption = Annotated[
    int | None,
    typer.Option(
        min=0,
        max=SEED_MAX,
        help="Override the scenario's seed (0 .. 2^63-1, as \\[scenario] seed).",
    ),
]


# devices.noise_entropy.DEVICE_NOISE, spelled here so --help imports no numpy (a test
# keeps them equal)
DEVICE_NOISE_CHOICES = ("seeded", "os")


def _device_noise_option(value: str | None) -> str | None:
    """``--device-noise``: one of ``DEVICE_NOISE_CHOICES`` (None: the scenario's)."""
    if value is not None and value not in DEVICE_NOISE_CHOICES:
        raise OptionError("--device-noise", 'one of "seeded", "os"', value)
    return value


DeviceNoiseOption = Annotated[
    str | None,
    typer.Option(
        "--device-noise",
        help="Where each device's privacy noise comes from: seeded (from the run's seed, "
        "reproducible; whoever holds the seed can replay it) or os (the device's own OS "
        "entropy, never written). Overrides \\[privacy] device_noise.",
        callback=_device_noise_option,
    ),
]


def _out_path(option: str):
    """The parser of an ``--out`` / ``--output`` option: an empty path was read as the
    current directory (``Path("")`` is ``Path(".")``) and the outputs landed there."""

    def parse(value: str | Path) -> Path:
        if isinstance(value, str) and not value:
            raise OptionError(
                option,
                "a non-empty path",
                value,
                hint="an empty path was read as the current directory: give a path, "
                "or . for the current directory",
            )
        return Path(value)

    return parse


def _out_dir(path: Path | None) -> Path | None:
    """``--out``: refused when it, or a folder on the way to it, is an existing file
    (the run used to end in a FileExistsError / NotADirectoryError traceback)."""
    if path is None:
        return None
    from ldpfleet.scenarios.out_paths import out_path_problem

    problem = out_path_problem(path.expanduser())
    if problem is not None:  # a dangling link, a loop, a name too long: a mkdir traceback
        raise OptionError(
            "--out", "an output directory (an existing folder or a new path)", path, hint=problem
        )
    for folder in (path.expanduser(), *path.expanduser().parents):  # "~/runs", quoted
        if folder.exists():
            if not folder.is_dir():
                raise OptionError(
                    "--out",
                    "an output directory (an existing folder or a new path)",
                    path,
                    hint=f"{folder} is a file, not a directory",
                )
            # a read-only folder or file system: the run ended in an OSError traceback
            # (os.access answers EROFS too, and for root only a read-only file system)
            if not os.access(folder, os.W_OK | os.X_OK):
                raise OptionError(
                    "--out",
                    "a folder this user can write (an existing folder or a new path)",
                    path,
                    hint=f"{folder} is not writable: a read-only folder or file system",
                )
            break
    return path


def _out_dir_option(help_text: str):
    """The ``--out/-o`` option of a command that writes a directory: refused when empty
    (``_out_path``) or an existing file (``_out_dir``); one declaration for every command."""
    return typer.Option(
        "--out",
        "-o",
        help=help_text,
        parser=_out_path("--out"),
        metavar="PATH",
        callback=_out_dir,
    )


def _run_id_option(value: str | None) -> str | None:
    """``--run``: an empty id was taken for "none given" (a random one was made); an id no
    run can have (``a/b``, ``#``: a topic level) made ``watch`` watch nothing."""
    from ldpfleet.protocol.errors import ParameterError
    from ldpfleet.protocol.topics import check_ident

    if value is not None and not value:
        raise OptionError("--run", RUN_ID_LIMIT, value, hint="leave it out for a random id")
    if value is not None:
        try:
            check_ident(value, "run")
        except ParameterError:
            raise OptionError("--run", RUN_ID_LIMIT, value) from None
    return value


RUN_ID_LIMIT = "1-64 characters of A-Z a-z 0-9 _ . -"


def _at_least_one(name: str):
    """A callback refusing an integer option below 1 (0 was read as "not given")."""

    def check(value: int | None) -> int | None:
        if value is not None and value < 1:
            raise OptionError(f"--{name}", "at least 1", value)
        return value

    return check


def _watch_seconds(value: float | None) -> float | None:
    """``watch --seconds``: NaN was a ValueError traceback, 0 or less stopped at once."""
    if value is not None and not (math.isfinite(value) and value > 0):
        raise OptionError(
            "--seconds",
            "a number of seconds > 0",
            value,
            hint="leave it out to stop with Ctrl-C",
        )
    return value


def _positive_seconds(value: float, option: str) -> float:
    """A duration option: a finite number of seconds > 0."""
    if not (value > 0 and math.isfinite(value)):
        raise OptionError(option, "a finite number of seconds > 0", value)
    return value


CredentialsOption = Annotated[
    Path | None,
    typer.Option(
        "--credentials",
        help="A run's credentials.json (ldpfleet mosquitto-config): log in with them; "
        "the run id is theirs (docs/reliability.md)",
    ),
]


def _credentials(path: Path | None, run_id: str | None = None, loaded=None):
    """Load ``--credentials``; refuse a run id other than theirs, and (given the scenario
    ``loaded``) a partition count other than its ``[collector] partitions``."""
    if path is None:
        return None
    from ldpfleet.broker.auth import AuthError, Credentials

    credentials = Credentials.load(path)
    if run_id is not None and run_id != credentials.run:
        raise AuthError(f"{path} is for run {credentials.run!r}, not {run_id!r}")
    wanted = loaded.spec.collector.partitions if loaded is not None else None
    if wanted is not None and credentials.partitions != wanted:
        raise AuthError(
            f"{path} is for {credentials.partitions} collector partition(s), but the scenario "
            f"has [collector] partitions = {wanted}: its devices' topics would be denied"
        )
    return credentials
