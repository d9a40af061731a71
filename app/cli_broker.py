"""The ``ldpfleet`` commands around a broker: ``broker`` (the embedded amqtt broker
standalone), ``mosquitto-config`` (a run's accounts, ACL and config for Mosquitto),
``certs`` (a test deployment's TLS certificates) and ``watch`` (a live summary of the
fleets on a broker).

The command functions are registered on the typer ``app`` in app/cli.py.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Annotated

import typer
from ldpfleet.app.cli_common import console, user_errors
from ldpfleet.app.cli_options import (
    CredentialsOption,
    _credentials,
    _out_dir_option,
    _run_id_option,
    _watch_seconds,
)


def watch_command(
    broker: Annotated[str, typer.Option("--broker", "-b", help="mqtt://host:port to watch.")],
    run_id: Annotated[
        str | None,
        typer.Option("--run", help="Only this run (default: every run).", callback=_run_id_option),
    ] = None,
    seconds: Annotated[
        float | None,
        typer.Option(
            help="Stop after this many seconds (> 0; default: Ctrl-C).", callback=_watch_seconds
        ),
    ] = None,
    until_closed: Annotated[
        bool, typer.Option("--until-closed", help="Stop when the watched run closes.")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
    credentials_path: CredentialsOption = None,
) -> None:
    """A live summary of the fleets on a broker: per run, stage, devices heard from,
    reports, acks, rejections, message rate (read-only; with --credentials it logs in as
    the run's recorder)."""
    import asyncio

    from ldpfleet.app.watch import FleetWatch, watch
    from ldpfleet.broker.mqtt import BrokerUrlError
    from ldpfleet.broker.select import open_broker
    from ldpfleet.scenarios.loop import run as run_loop
    from rich.live import Live

    with user_errors():
        if broker in ("memory", "embedded"):
            raise BrokerUrlError(
                f"watch reads a broker other processes use: give its mqtt://host:port, not "
                f"{broker!r} (a new, empty broker inside the watch itself)"
            )
        credentials = _credentials(credentials_path, run_id)
        run_id = run_id or (credentials.run if credentials else None)
        if until_closed and run_id is None:  # it stopped when any run on the broker closed
            raise BrokerUrlError(
                "--until-closed needs --run (or --credentials): which run's close to stop at"
            )
        board = FleetWatch()

        async def go() -> None:
            async with open_broker(broker, credentials=credentials) as (transport, _):
                task = asyncio.ensure_future(
                    watch(transport, board, run=run_id, seconds=seconds, until_closed=until_closed)
                )
                if as_json or not console.is_terminal:
                    await task
                    return
                with Live(board.render(), console=console, refresh_per_second=4) as live:
                    while not task.done():
                        await asyncio.wait({task}, timeout=0.5)
                        live.update(board.render())
                await task

        run_loop(go())
    if as_json:
        print(json.dumps(board.summary()))
    else:
        console.print(board.render())


TlsFileOption = Annotated[Path | None, typer.Option(help="PEM file (see ldpfleet certs).")]


def broker_command(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(min=0, max=65535, help="Port (not 1883; 0 picks a free one).")
    ] = 1884,
    credentials_path: CredentialsOption = None,
    tls_cert: Annotated[
        Path | None, typer.Option(help="Listen with TLS (mqtts://): the server certificate.")
    ] = None,
    tls_key: Annotated[Path | None, typer.Option(help="The server certificate's key.")] = None,
    tls_ca: Annotated[
        Path | None,
        typer.Option(help="Require client certificates signed by this CA (PEM)."),
    ] = None,
) -> None:
    """Run the embedded amqtt broker standalone until Ctrl-C (with --credentials: only
    that run's identities, under its ACL; with --tls-cert/--tls-key: a TLS listener,
    docs/brokers.md "TLS")."""
    import asyncio

    from ldpfleet.broker.embedded import EmbeddedBroker
    from ldpfleet.broker.tls import TlsError, TlsServerSettings
    from ldpfleet.scenarios.loop import run as run_loop

    async def serve() -> None:
        credentials = _credentials(credentials_path)
        tls = None
        if tls_cert or tls_key or tls_ca:
            if not (tls_cert and tls_key):
                raise TlsError("TLS: --tls-cert and --tls-key are needed together")
            tls = TlsServerSettings(str(tls_cert), str(tls_key), str(tls_ca) if tls_ca else None)
        async with EmbeddedBroker(host, port, credentials=credentials, tls=tls) as embedded:
            hint = " (clients add ?ca=PATH: the CA that signed --tls-cert)" if tls else ""
            console.print(
                f"embedded broker listening on {embedded.url}{hint} (Ctrl-C to stop)",
                highlight=False,
            )
            print(embedded.url, flush=True)
            await asyncio.Event().wait()

    with user_errors():
        _check_listener_options(host, None, None)
        run_loop(serve())


# a Unix account name ('user' line of mosquitto.conf)
_ACCOUNT = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}\$?")


def _check_listener_options(host: str, tls_host: str | None, run_as: str | None) -> None:
    """``mosquitto-config --host/--tls-host/--run-as``: an empty value or one with spaces
    was written into mosquitto.conf (which Mosquitto then refuses) and into the printed
    broker URL (``mqtt://a b:1884``): now one sentence (``AuthError``)."""
    from ldpfleet.app.certs import broker_host
    from ldpfleet.broker.auth import AuthError
    from ldpfleet.protocol.errors import ParameterError

    for name, value in (("--host", host), ("--tls-host", tls_host)):
        if value is None:
            continue
        try:
            broker_host(value)
            ok = not value.startswith("*")
        except ParameterError:
            ok = False
        if not ok:
            raise AuthError(f"{name} must be an IP address or a host name, got {value!r}")
    if run_as is not None and not _ACCOUNT.fullmatch(run_as):
        raise AuthError(
            f"--run-as must be a Unix account name (a letter or _, then letters, digits, "
            f"_ . -; at most 32), got {run_as!r}"
        )


def mosquitto_config(
    scenario: Annotated[Path, typer.Argument(help="Scenario file (its devices get accounts).")],
    out: Annotated[
        Path,
        _out_dir_option("Directory to write into."),
    ],
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port Mosquitto listens on.")] = 1884,
    host: Annotated[str, typer.Option(help="Address Mosquitto listens on.")] = "127.0.0.1",
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run", help="Run id (default: name + random suffix).", callback=_run_id_option
        ),
    ] = None,
    run_as: Annotated[
        str | None,
        typer.Option(
            "--run-as", help="Account Mosquitto drops to when started by root ('user' line)."
        ),
    ] = None,
    tls_port: Annotated[
        int | None,
        typer.Option(
            min=1, max=65535, help="Add a TLS listener on this port (needs --tls-cert ...)."
        ),
    ] = None,
    tls_host: Annotated[
        str | None, typer.Option(help="Address of the TLS listener (default: --host).")
    ] = None,
    tls_cert: TlsFileOption = None,
    tls_key: TlsFileOption = None,
    tls_ca: TlsFileOption = None,
    require_certificate: Annotated[
        bool, typer.Option(help="TLS clients must present a certificate signed by --tls-ca.")
    ] = False,
    tls_only: Annotated[bool, typer.Option(help="No plain listener: only the TLS one.")] = False,
    bulk_gateways: Annotated[
        int,
        typer.Option(
            min=0,
            help="Accounts gateway-g0 .. g{N-1} for bulk gateways (docs/scaling.md "
            '"Bulk gateways"): each may publish only on its own gw/g{g}/up topics.',
        ),
    ] = 0,
) -> None:
    """Write a Mosquitto password file, ACL and config for one run, with per-device
    credentials (no anonymous access), and print how to start it (docs/reliability.md);
    with --tls-port a TLS listener too (docs/brokers.md "TLS"); with --bulk-gateways N
    the bulk gateways' own accounts and ACL blocks."""
    from ldpfleet.broker.auth import write_mosquitto_files
    from ldpfleet.scenarios.runner import new_run_id
    from ldpfleet.scenarios.schema import load_scenario

    with user_errors():
        _check_listener_options(host, tls_host, run_as)
        loaded = load_scenario(scenario)
        run = run_id or new_run_id(loaded)
        devices = _device_accounts(loaded)
        credentials = _run_credentials(run, devices, loaded, bulk_gateways)
        tls = _tls_listener(
            port, host, tls_port, tls_host, tls_cert, tls_key, tls_ca, require_certificate,
            tls_only,
        )  # fmt: skip
        paths = write_mosquitto_files(
            out, credentials, port=port, host=host, user=run_as, tls=tls, plain=not tls_only
        )
    _print_mosquitto_files(run, len(devices), bulk_gateways, paths, run_as)
    _print_how_to_start(scenario, paths, host, port, tls, tls_ca, require_certificate)


def _device_accounts(loaded) -> list[str]:
    """The device ids a run's accounts are for: a CADR-LDP scenario's, one per node of its
    graph (``n0000``, ...), else the fleet's devices."""
    if loaded.spec.cadr is not None:
        from ldpfleet.scenarios.cadr_run import device_names, load_scenario_graph

        return device_names(load_scenario_graph(loaded)[0])
    return loaded.device_ids()


def _run_credentials(run: str, devices: list[str], loaded, bulk_gateways: int):
    """``Credentials.generate`` for the run; its refusal as one sentence (``AuthError``)."""
    from ldpfleet.broker.auth import AuthError, Credentials

    try:
        return Credentials.generate(
            run, devices, partitions=loaded.spec.collector.partitions, gateways=bulk_gateways
        )
    except ValueError as error:
        raise AuthError(str(error)) from None


def _tls_listener(
    port: int,
    host: str,
    tls_port: int | None,
    tls_host: str | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    tls_ca: Path | None,
    require_certificate: bool,
    tls_only: bool,
):
    """``mosquitto-config``'s TLS listener (None without ``--tls-port``). Refused
    (``TlsError``): ``--tls-port`` without its three files, on the plain listener's port
    and host, and a TLS option without ``--tls-port`` (it was ignored)."""
    from ldpfleet.broker.tls import TlsError, TlsListener

    if tls_port is None:
        given = [name for name, value in (
            ("--tls-only", tls_only), ("--require-certificate", require_certificate),
            ("--tls-host", tls_host), ("--tls-cert", tls_cert), ("--tls-key", tls_key),
            ("--tls-ca", tls_ca),
        ) if value]  # fmt: skip
        if given:  # were ignored: a config without the TLS listener asked for
            raise TlsError(f"TLS: {', '.join(given)} need --tls-port (the TLS listener)")
        return None
    if not (tls_cert and tls_key and tls_ca):
        raise TlsError("TLS: --tls-port needs --tls-cert, --tls-key and --tls-ca")
    if tls_port == port and (tls_host or host) == host and not tls_only:
        raise TlsError(
            f"TLS: --tls-port {tls_port} is the plain listener's --port on the same "
            "host: Mosquitto cannot open both on the same port (pick another, or "
            "--tls-only)"
        )
    return TlsListener(
        tls_port, str(tls_cert), str(tls_key), str(tls_ca), tls_host or host,
        require_certificate,
    )  # fmt: skip


def _print_mosquitto_files(
    run: str, devices: int, bulk_gateways: int, paths: dict, run_as: str | None
) -> None:
    """What ``mosquitto-config`` wrote (stderr), and the warning that a root-started
    Mosquitto cannot read the 0600 password file without ``--run-as``."""
    console.print(
        f"run {run}: {devices} device accounts + collector, recorder, relay, gateway, "
        f"admin" + (f", {bulk_gateways} bulk gateway accounts" if bulk_gateways else "") + "\n"
        f"  {paths['passwords']} (0600), {paths['acl']}, {paths['conf']}, "
        f"{paths['credentials']} (0600: what ldpfleet logs in with), "
        f"{paths['plugin']} (client-id binding plugin)"
    )
    if run_as is None and hasattr(os, "geteuid") and os.geteuid() == 0:
        console.print(
            "[yellow]warning:[/] started by root, Mosquitto drops to the 'mosquitto' account, "
            f'which cannot read the 0600 {paths["passwords"]} ("Unable to open pwfile"): '
            "write the files again with --run-as root, or start it as the files' owner",
            highlight=False,
            soft_wrap=True,
        )


def _print_how_to_start(
    scenario: Path, paths: dict, host: str, port: int, tls, tls_ca, require_certificate: bool
) -> None:
    """The two commands (stdout): start Mosquitto on the config, run the scenario on it
    (on the TLS listener's URL when there is one)."""
    print(f"mosquitto -c {paths['conf'].resolve()}")
    url = f"mqtt://{host}:{port}"
    if tls is not None:  # the client's own certificate: CLIENT_CERT / CLIENT_KEY
        client = "&cert=CLIENT_CERT&key=CLIENT_KEY" if require_certificate else ""
        url = f"mqtts://{tls.host}:{tls.port}?ca={Path(tls_ca).resolve()}{client}"
    print(f"ldpfleet run {scenario} --broker '{url}' --credentials {paths['credentials']}")


def certs_command(
    out: Annotated[
        Path,
        _out_dir_option("Directory to write into."),
    ],
    host: Annotated[
        list[str] | None,
        typer.Option(
            "--host",
            help="A name or IP address the broker is reached at (repeat; default "
            "127.0.0.1 and localhost).",
        ),
    ] = None,
    days: Annotated[int, typer.Option(help="Validity in days (1 .. 36,500).")] = 365,
) -> None:
    """Write a test deployment's TLS certificates (a CA, a broker certificate for every
    --host, a client certificate; keys 0600) and print how to use them (docs/brokers.md
    "TLS"). For tests and private deployments: a production broker's comes from its
    operator's CA."""
    from ldpfleet.app.certs import DEFAULT_HOSTS, write_test_certificates
    from ldpfleet.broker.tls import TlsError

    with user_errors():
        try:
            paths = write_test_certificates(out, host or DEFAULT_HOSTS, days)
        except ValueError as error:
            raise TlsError(str(error)) from None
    names = ", ".join(host or DEFAULT_HOSTS)
    console.print(
        f"CA {paths['ca']}, broker certificate {paths['server']} (for {names}), client "
        f"certificate {paths['client']}; keys 0600, valid {days} days",
        highlight=False,
    )
    server, key = paths["server"], paths["server_key"]
    print(f"ldpfleet broker --port 8884 --tls-cert {server} --tls-key {key}")
    print(f"--broker 'mqtts://{(host or DEFAULT_HOSTS)[0]}:8884?ca={paths['ca']}'")
