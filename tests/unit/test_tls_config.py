"""TLS settings without a broker: ``mqtts://`` URLs, the test certificates, the generated
Mosquitto TLS listener (broker/tls.py, broker/mqtt.py, app/certs.py, broker/auth.py)."""

from __future__ import annotations

import ipaddress
import ssl
import stat

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from ldpfleet.app.certs import write_test_certificates
from ldpfleet.broker.auth import mosquitto_conf_text
from ldpfleet.broker.mqtt import BrokerUrlError, parse_broker_url, ssl_context
from ldpfleet.broker.tls import ENV_CA, ENV_CERT, ENV_KEY, TlsError, TlsListener


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    return write_test_certificates(tmp_path_factory.mktemp("pki"), ["127.0.0.1", "broker.test"])


@pytest.fixture(autouse=True)
def no_tls_environment(monkeypatch):
    for name in (ENV_CA, ENV_CERT, ENV_KEY):
        monkeypatch.delenv(name, raising=False)


def test_mqtts_url_carries_the_tls_files_and_defaults_to_port_8883(pki):
    address = parse_broker_url(f"mqtts://u:p@127.0.0.1?ca={pki['ca']}")
    assert (address.host, address.port, address.username) == ("127.0.0.1", 8883, "u")
    assert address.tls is not None and address.tls.ca == str(pki["ca"])
    assert address.tls.cert is None and address.tls.key is None
    # the URL a child process gets: no password, the same files
    assert address.url == f"mqtts://u@127.0.0.1:8883?ca={pki['ca']}"
    again = parse_broker_url(address.url)
    assert again.tls == address.tls and again.port == 8883
    plain = parse_broker_url("mqtt://127.0.0.1")
    assert plain.tls is None and plain.port == 1883 and plain.url == "mqtt://127.0.0.1:1883"


def test_client_certificate_and_relative_paths_are_made_absolute(pki, monkeypatch):
    monkeypatch.chdir(pki["ca"].parent)
    address = parse_broker_url("mqtts://h:9?ca=ca.pem&cert=client.pem&key=client.key")
    assert address.tls is not None
    assert (address.tls.ca, address.tls.cert, address.tls.key) == (
        str(pki["ca"]),
        str(pki["client"]),
        str(pki["client_key"]),
    )
    context = ssl_context(address)
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname


def test_environment_variables_give_the_files_a_url_does_not_name(pki, monkeypatch):
    monkeypatch.setenv(ENV_CA, str(pki["ca"]))
    monkeypatch.setenv(ENV_CERT, str(pki["client"]))
    monkeypatch.setenv(ENV_KEY, str(pki["client_key"]))
    address = parse_broker_url("mqtts://127.0.0.1:8884")
    assert address.tls is not None and address.tls.ca == str(pki["ca"])
    assert address.tls.cert == str(pki["client"])
    # the URL's own value wins over the environment
    other = parse_broker_url(f"mqtts://127.0.0.1:8884?ca={pki['server']}")
    assert other.tls is not None and other.tls.ca == str(pki["server"])
    # and a plain URL ignores them
    assert parse_broker_url("mqtt://127.0.0.1:1883").tls is None


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("mqtts://h:1?ca=/nonexistent/ca.pem", "the ca file /nonexistent/ca.pem does not exist"),
        ("mqtts://h:1?cert={client}", "a client cert file needs its key file too"),
        ("mqtts://h:1?key={client_key}", "a client key file needs its cert file too"),
        ("mqtts://h:1?cafile=x", "unknown parameter 'cafile' (allowed: ca, cert, key)"),
        ("mqtt://h:1?ca={ca}", "ca, cert and key are TLS settings; use mqtts://"),
        ("mqttx://h:1", "must start with mqtt:// (e.g. mqtt://127.0.0.1:1883) or mqtts://"),
    ],
)
def test_bad_tls_urls_name_what_is_wrong(url, says, pki):
    with pytest.raises(BrokerUrlError) as raised:
        parse_broker_url(url.format(**{k: str(v) for k, v in pki.items()}))
    assert says in str(raised.value)


def test_a_file_that_is_not_a_certificate_is_one_sentence(pki, tmp_path):
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate\n")
    address = parse_broker_url(f"mqtts://h:1?ca={junk}")
    with pytest.raises(BrokerUrlError, match=f"cannot read the CA file {junk}"):
        ssl_context(address)
    swapped = parse_broker_url(f"mqtts://h:1?cert={pki['client']}&key={pki['server_key']}")
    with pytest.raises(BrokerUrlError, match="cannot load the client certificate"):
        ssl_context(swapped)


def test_the_test_certificates(pki):
    for name in ("ca_key", "server_key", "client_key"):
        assert stat.S_IMODE(pki[name].stat().st_mode) == 0o600, name
    ca = x509.load_pem_x509_certificate(pki["ca"].read_bytes())
    server = x509.load_pem_x509_certificate(pki["server"].read_bytes())
    client = x509.load_pem_x509_certificate(pki["client"].read_bytes())
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    for leaf in (server, client):
        assert leaf.issuer == ca.subject
        leaf.verify_directly_issued_by(ca)  # raises if the signature does not verify
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.IPAddress) == [ipaddress.ip_address("127.0.0.1")]
    assert names.get_values_for_type(x509.DNSName) == ["broker.test"]
    usage = client.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert list(usage) == [ExtendedKeyUsageOID.CLIENT_AUTH]


def test_mosquitto_tls_listener_lines(pki, tmp_path):
    tls = TlsListener(8883, str(pki["server"]), str(pki["server_key"]), str(pki["ca"]), "0.0.0.0")
    text = mosquitto_conf_text(tmp_path, port=1884, tls=tls, plugin=None, run="r")
    lines = text.splitlines()
    assert "listener 1884 127.0.0.1" in lines
    at = lines.index("listener 8883 0.0.0.0")
    assert lines[at + 1 : at + 5] == [
        f"cafile {pki['ca']}",
        f"certfile {pki['server']}",
        f"keyfile {pki['server_key']}",
        "require_certificate false",
    ]
    assert "per_listener_settings false" in lines and "allow_anonymous false" in lines
    only = mosquitto_conf_text(
        tmp_path, port=1884, tls=TlsListener(8883, *tls_files(pki), require_certificate=True),
        plain=False,
    )  # fmt: skip
    assert "listener 1884 127.0.0.1" not in only and "require_certificate true" in only
    with pytest.raises(ValueError, match="needs a TLS listener"):
        mosquitto_conf_text(tmp_path, port=1884, plain=False)
    with pytest.raises(TlsError, match=r"the key file /nonexistent\.key does not exist"):
        TlsListener(1, str(pki["server"]), "/nonexistent.key", str(pki["ca"])).conf_lines()


def tls_files(pki) -> tuple[str, str, str]:
    return str(pki["server"]), str(pki["server_key"]), str(pki["ca"])
