"""Certificates for a test deployment: ``ldpfleet certs --out DIR [--host H ...]``.

Writes, with the ``cryptography`` package, a private certificate authority and two
certificates it signs (ECDSA P-256 keys, SHA-256 signatures):

- ``ca.pem`` (the CA certificate: what clients pass as ``?ca=`` and brokers as their
  client CA) and ``ca.key``;
- ``server.pem`` / ``server.key``: the broker's, for every ``--host`` as a subject
  alternative name (IP addresses as IP entries, names as DNS entries; default
  ``127.0.0.1`` and ``localhost``), extended key usage serverAuth;
- ``client.pem`` / ``client.key``: a client certificate (clientAuth) for brokers that
  require one (``require_certificate``).

Keys are written 0600. This is for test deployments: a production broker's certificate
comes from the operator's own CA. ``make_ca`` and ``make_certificate`` also serve the
tests (expired certificates, a foreign CA, a self-signed server).
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
import re
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from ldpfleet.protocol.errors import ParameterError

DEFAULT_HOSTS = ("127.0.0.1", "localhost")
DEFAULT_DAYS = 365
MAX_DAYS = 36_500  # 100 years; far beyond it the dates overflowed (OverflowError)
# an LDH label (RFC 1123): letters, digits, hyphens inside, 1-63 characters
_LABEL = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?")


@dataclass(frozen=True)
class Issued:
    """A certificate and its private key."""

    certificate: x509.Certificate
    key: ec.EllipticCurvePrivateKey


def _name(common_name: str) -> x509.Name:
    return x509.Name(
        [
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "ldpfleet test deployment"),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name),
        ]
    )


def _validity(days: int, start: dt.datetime | None) -> tuple[dt.datetime, dt.datetime]:
    begin = start or (dt.datetime.now(dt.UTC) - dt.timedelta(minutes=5))
    return begin, begin + dt.timedelta(days=days)


def make_ca(
    common_name: str = "ldpfleet test CA", *, days: int = DEFAULT_DAYS, start=None
) -> Issued:
    """A self-signed CA certificate valid ``days`` from ``start`` (default: now)."""
    key = ec.generate_private_key(ec.SECP256R1())
    begin, end = _validity(days, start)
    name = _name(common_name)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(begin)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                key_cert_sign=True,
                crl_sign=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return Issued(certificate, key)


def _refuse_host(host: str, why: str) -> ParameterError:
    return ParameterError(
        f"{why}; give a DNS name (letters, digits, inner hyphens, dot-separated labels of "
        f"1-63 characters, at most 253 in all, optionally '*.' first) or an IP address, "
        f"got {host!r}",
        field="host",
        limit="a DNS name or an IP address",
        value=host,
    )


def broker_host(host: str) -> x509.GeneralName:
    """The subject alternative name for one ``--host``: an IP entry for an address, a DNS
    entry for a name (an internationalised name as its A-label, ``xn--``). ``ParameterError``
    (field ``host``) for anything else: an empty string, spaces, a URL, a port, an
    all-numeric name that is no IP address — a certificate for it matches no client."""
    try:
        return x509.IPAddress(ipaddress.ip_address(host))
    except ValueError:
        pass
    try:
        name = host.encode("idna").decode("ascii") if not host.isascii() else host
    except UnicodeError:
        raise _refuse_host(host, "not a valid internationalised name") from None
    labels = name.removesuffix(".").split(".")
    if labels[0] == "*" and len(labels) > 2:
        labels = labels[1:]  # a wildcard, leftmost only, over at least two labels
    if not host.strip() or len(name) > 253:
        raise _refuse_host(host, "not a host name")
    if not all(_LABEL.fullmatch(label) for label in labels):
        raise _refuse_host(host, "not a host name")
    if labels[-1].isdigit():
        raise _refuse_host(host, "an all-numeric name that is no IP address")
    return x509.DNSName(name)


def _alt_names(hosts: tuple[str, ...] | list[str]) -> list[x509.GeneralName]:
    return [broker_host(host) for host in hosts]


def make_certificate(
    issuer: Issued | None,
    common_name: str,
    *,
    hosts: tuple[str, ...] | list[str] = (),
    client: bool = False,
    days: int = DEFAULT_DAYS,
    start=None,
) -> Issued:
    """A leaf certificate signed by ``issuer`` (None: self-signed) for ``hosts`` (subject
    alternative names), for a server, or with ``client`` for a client."""
    key = ec.generate_private_key(ec.SECP256R1())
    begin, end = _validity(days, start)
    subject = _name(common_name)
    signer = issuer.key if issuer is not None else key
    usage = ExtendedKeyUsageOID.CLIENT_AUTH if client else ExtendedKeyUsageOID.SERVER_AUTH
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer.certificate.subject if issuer is not None else subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(begin)
        .not_valid_after(end)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if hosts:
        builder = builder.add_extension(x509.SubjectAlternativeName(_alt_names(hosts)), False)
    if issuer is not None:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer.key.public_key()), False
        )
    return Issued(builder.sign(signer, hashes.SHA256()), key)


def write_pem(issued: Issued, certificate_path: Path, key_path: Path) -> None:
    """Write the certificate (0644) and its unencrypted private key (0600: created with
    that mode, never readable by others in between)."""
    certificate_path.write_bytes(issued.certificate.public_bytes(serialization.Encoding.PEM))
    data = issued.key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    key_path.unlink(missing_ok=True)  # an old key file may have looser permissions
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


def write_test_certificates(
    out: str | Path, hosts: list[str] | tuple[str, ...] = DEFAULT_HOSTS, days: int = DEFAULT_DAYS
) -> dict[str, Path]:
    """Write ca, server and client certificates and keys into ``out`` (module
    docstring); returns their paths by name (``ca``, ``ca_key``, ``server``,
    ``server_key``, ``client``, ``client_key``)."""
    if not hosts:
        raise ParameterError(
            "at least one is needed (the broker's address)",
            field="host",
            limit="at least one host",
            value=hosts,
        )
    _alt_names(hosts)  # a bad host is refused before anything is written
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= MAX_DAYS:
        raise ParameterError(
            f"must be 1 .. {MAX_DAYS:,} (100 years), got {days!r}",
            field="days",
            limit=f"1 .. {MAX_DAYS:,}",
            value=days,
        )
    directory = Path(out).resolve()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise ParameterError(
            f"cannot create {directory} ({error.strerror or error})",
            field="out",
            limit="a folder that can be created",
            value=out,
        ) from None
    ca = make_ca(days=days)
    server = make_certificate(ca, "ldpfleet broker", hosts=list(hosts), days=days)
    client = make_certificate(ca, "ldpfleet client", client=True, days=days)
    paths = {
        "ca": directory / "ca.pem",
        "ca_key": directory / "ca.key",
        "server": directory / "server.pem",
        "server_key": directory / "server.key",
        "client": directory / "client.pem",
        "client_key": directory / "client.key",
    }
    write_pem(ca, paths["ca"], paths["ca_key"])
    write_pem(server, paths["server"], paths["server_key"])
    write_pem(client, paths["client"], paths["client_key"])
    return paths
