"""TLS for broker connections: client settings, contexts, and one sentence per failure.

``mqtts://host:port`` broker URLs (``broker.mqtt.parse_broker_url``) carry a
``TlsSettings``: the CA file that signed the broker's certificate (default: the system's
trust store), and an optional client certificate and key. Both MQTT clients (our own,
``broker.mqtt_client``, and aiomqtt) connect with ``client_context``: the server's
certificate chain and its host name (or IP address) are always verified (Python's
``ssl.create_default_context``: TLS 1.2 or later, ``CERT_REQUIRED``, ``check_hostname``).

A failed handshake is deterministic (another attempt would fail the same way), so
connections do not retry it; ``tls_failure`` turns the ``ssl`` error into one sentence a
user can act on (an expired certificate, one signed by a CA we were not given, a host name
the certificate does not name, a client certificate the broker refused). Server side: the
embedded broker's TLS listener (``TlsServerSettings``, ``broker.embedded``) and the
generated Mosquitto TLS listener (``broker.auth.mosquitto_conf_text``). Certificates for a
test deployment: ``ldpfleet certs`` (``app/certs.py``).
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass
from pathlib import Path

# environment defaults for an mqtts:// URL that does not name the files itself (so that a
# deployment sets them once for every process it starts)
ENV_CA, ENV_CERT, ENV_KEY = "LDPFLEET_TLS_CA", "LDPFLEET_TLS_CERT", "LDPFLEET_TLS_KEY"

# OpenSSL X509_V_ERR_* codes a verification failure carries (``verify_code``)
_EXPIRED, _NOT_YET_VALID = 10, 9
_SELF_SIGNED, _SELF_SIGNED_IN_CHAIN = 18, 19
_UNKNOWN_ISSUER, _UNKNOWN_ISSUER_LEAF = 20, 21
_HOSTNAME_MISMATCH, _IP_MISMATCH = 62, 64


class TlsError(ValueError):
    """TLS settings that cannot be used (a missing or unreadable file, a certificate
    without its key); the message names the setting and the file."""


@dataclass(frozen=True)
class TlsSettings:
    """How a client speaks TLS to a broker: ``ca`` (PEM file of the CA(s) that signed the
    broker's certificate; None: the system's trust store), ``cert`` and ``key`` (PEM
    files of a client certificate and its private key, for brokers that require one)."""

    ca: str | None = None
    cert: str | None = None
    key: str | None = None

    def query(self) -> str:
        """The URL query that gives these settings (``?ca=...&cert=...&key=...``), or ""."""
        pairs = [(name, value) for name, value in self.files() if value]
        return "?" + "&".join(f"{name}={value}" for name, value in pairs) if pairs else ""

    def files(self) -> list[tuple[str, str | None]]:
        """(setting, path) pairs."""
        return [("ca", self.ca), ("cert", self.cert), ("key", self.key)]


def tls_settings(ca: str | None, cert: str | None, key: str | None) -> TlsSettings:
    """``TlsSettings`` from a URL's query values, each defaulting to its environment
    variable (``LDPFLEET_TLS_CA``, ``_CERT``, ``_KEY``); paths are made absolute (processes
    started elsewhere read the same files). ``TlsError`` for a missing file or a
    certificate without a key (or the reverse)."""
    ca = ca or os.environ.get(ENV_CA) or None
    cert = cert or os.environ.get(ENV_CERT) or None
    key = key or os.environ.get(ENV_KEY) or None
    if (cert is None) != (key is None):
        given, missing = ("cert", "key") if cert else ("key", "cert")
        raise TlsError(
            f"TLS: a client {given} file needs its {missing} file too (?{missing}=PATH or "
            f"{ENV_KEY if missing == 'key' else ENV_CERT})"
        )
    resolved = {}
    for name, value in (("ca", ca), ("cert", cert), ("key", key)):
        if value is None:
            resolved[name] = None
            continue
        path = Path(value).expanduser().resolve()
        if not path.is_file():
            raise TlsError(f"TLS: the {name} file {value} does not exist")
        resolved[name] = str(path)
    return TlsSettings(**resolved)


class _ClosingSSLSocket(ssl.SSLSocket):
    """A blocking TLS socket (paho's, under aiomqtt) that closes itself when its
    handshake fails: paho leaves it open, one leaked socket per refused attempt."""

    def do_handshake(self, *args, **kwargs):
        try:
            return super().do_handshake(*args, **kwargs)
        except BaseException:
            self.close()
            raise


def client_context(settings: TlsSettings) -> ssl.SSLContext:
    """An ``ssl.SSLContext`` that verifies the broker's certificate against ``settings.ca``
    (or the system's trust store) and its host name, presenting the client certificate if
    one is given. ``TlsError`` if a file is not a PEM certificate or key."""
    try:
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=settings.ca)
    except (ssl.SSLError, OSError) as error:
        raise TlsError(f"TLS: cannot read the CA file {settings.ca}: {_reason(error)}") from None
    context.sslsocket_class = _ClosingSSLSocket
    if settings.cert is not None:
        try:
            context.load_cert_chain(settings.cert, settings.key)
        except (ssl.SSLError, OSError) as error:
            raise TlsError(
                f"TLS: cannot load the client certificate {settings.cert} with the key "
                f"{settings.key}: {_reason(error)}"
            ) from None
    return context


@dataclass(frozen=True)
class TlsServerSettings:
    """A broker's TLS listener: its certificate chain and private key (PEM files), and
    optionally ``ca``: the CA whose signature client certificates must carry (with it,
    every client must present one)."""

    cert: str
    key: str
    ca: str | None = None

    def checked(self) -> TlsServerSettings:
        """The same settings with absolute paths; ``TlsError`` naming a missing file."""
        resolved = {}
        for name, value in (("cert", self.cert), ("key", self.key), ("ca", self.ca)):
            if value is None:
                resolved[name] = None
                continue
            path = Path(value).expanduser().resolve()
            if not path.is_file():
                raise TlsError(f"TLS: the server {name} file {value} does not exist")
            resolved[name] = str(path)
        return TlsServerSettings(**resolved)


@dataclass(frozen=True)
class TlsListener:
    """A TLS listener of a generated Mosquitto configuration: ``port`` on ``host``, the
    server certificate and key, the CA file (Mosquitto needs one for a TLS listener;
    with ``require_certificate`` it is the CA client certificates must be signed by)."""

    port: int
    cert: str
    key: str
    ca: str
    host: str = "127.0.0.1"
    require_certificate: bool = False

    def conf_lines(self) -> list[str]:
        """The ``mosquitto.conf`` lines of this listener (after the plain one's global
        settings: ``per_listener_settings false`` keeps one password file and ACL)."""
        for name, value in (("cert", self.cert), ("key", self.key), ("ca", self.ca)):
            if not Path(value).is_file():
                raise TlsError(f"TLS: the {name} file {value} does not exist")
        return [
            f"# TLS listener: mqtts://{self.host}:{self.port}?ca=<the CA that signed certfile>",
            f"listener {self.port} {self.host}",
            f"cafile {Path(self.ca).resolve()}",
            f"certfile {Path(self.cert).resolve()}",
            f"keyfile {Path(self.key).resolve()}",
            f"require_certificate {'true' if self.require_certificate else 'false'}",
        ]


def tls_failure(error: BaseException, where: str, settings: TlsSettings) -> str | None:
    """One sentence for a failed TLS handshake with the broker at ``where`` (host:port),
    or None if ``error`` is not a TLS failure."""
    if isinstance(error, ssl.SSLCertVerificationError):
        code = error.verify_code
        trusted = f"the CA in {settings.ca}" if settings.ca else "the system's trusted CAs"
        if code in (_EXPIRED, _NOT_YET_VALID):
            state = "has expired" if code == _EXPIRED else "is not valid yet"
            return (
                f"the TLS certificate of the broker at {where} {state}: renew it (ldpfleet "
                "certs writes a new one)"
            )
        if code in (_HOSTNAME_MISMATCH, _IP_MISMATCH):
            return (
                f"the TLS certificate of the broker at {where} is not valid for that host "
                f"name: {error.verify_message}; connect with a name the certificate lists "
                "or make one for it (ldpfleet certs --host NAME)"
            )
        if code in (_SELF_SIGNED, _SELF_SIGNED_IN_CHAIN, _UNKNOWN_ISSUER, _UNKNOWN_ISSUER_LEAF):
            kind = "is self-signed and" if code == _SELF_SIGNED else "is"
            return (
                f"the TLS certificate of the broker at {where} {kind} not signed by {trusted}: "
                "pass the CA that signed it (mqtts://HOST:PORT?ca=PATH or "
                f"{ENV_CA})"
            )
        return (
            f"the TLS certificate of the broker at {where} failed verification: "
            f"{error.verify_message}"
        )
    if isinstance(error, ssl.SSLError):
        reason = _reason(error)
        if "WRONG_VERSION_NUMBER" in reason.upper() or "wrong version" in reason:
            return (
                f"the broker at {where} does not speak TLS on that port: use mqtt:// for a "
                "plain listener, or the port of its TLS listener"
            )
        if "CERTIFICATE_REQUIRED" in reason.upper() or "certificate required" in reason:
            return (
                f"the broker at {where} requires a client certificate: give one "
                f"(?cert=PATH&key=PATH or {ENV_CERT}/{ENV_KEY})"
            )
        if "UNKNOWN_CA" in reason.upper() or "BAD_CERTIFICATE" in reason.upper():
            return (
                f"the broker at {where} refused our client certificate {settings.cert}: it is "
                "not signed by a CA the broker trusts"
            )
        return f"the TLS handshake with the broker at {where} failed: {reason}"
    return None


def _reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    return str(reason or getattr(error, "strerror", None) or error)
