"""``ldpfleet certs`` on inputs nobody tried (held-out QA, helper C): an empty or malformed
--host was written into the broker certificate as a DNS name no client can match, an
internationalised name was a cryptography message naming no option, a huge --days an
OverflowError traceback, an output folder that cannot be created a FileNotFoundError
traceback."""

from __future__ import annotations

import ipaddress

import pytest
from cryptography import x509
from ldpfleet.app.certs import MAX_DAYS, write_test_certificates
from ldpfleet.protocol.errors import ParameterError


@pytest.mark.parametrize(
    "host",
    ["", " ", "a b", "-bad", "bad-", "x..y", ".x", "http://x", "host:8883", "999.1.1.1",
     "a" * 64 + ".test", ("a" * 60 + ".") * 5 + "test", "a_b.test", "x.*.test"],
)  # fmt: skip
def test_a_host_that_is_no_name_or_address_is_refused(tmp_path, host):
    with pytest.raises(ParameterError) as caught:
        write_test_certificates(tmp_path / "pki", [host])
    assert caught.value.field == "host" and repr(host) in str(caught.value), caught.value
    assert not (tmp_path / "pki").exists()  # nothing written


@pytest.mark.parametrize("days", [0, -1, MAX_DAYS + 1, 10**7])
def test_days_out_of_range_are_refused(tmp_path, days):
    with pytest.raises(ParameterError, match=f"days: .*{MAX_DAYS:,}.*got {days}"):
        write_test_certificates(tmp_path / "pki", days=days)


def test_names_addresses_wildcards_and_idn_are_kept(tmp_path):
    hosts = ["broker.test", "*.fleet.test", "::1", "10.0.0.7", "ünï.de", "localhost", "a" * 63]
    paths = write_test_certificates(tmp_path / "pki", hosts, days=MAX_DAYS)
    server = x509.load_pem_x509_certificate(paths["server"].read_bytes())
    names = server.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [
        "broker.test", "*.fleet.test", "xn--n-nga1b.de", "localhost", "a" * 63
    ]  # fmt: skip
    assert names.get_values_for_type(x509.IPAddress) == [
        ipaddress.ip_address("::1"), ipaddress.ip_address("10.0.0.7")
    ]  # fmt: skip


def test_an_output_folder_that_cannot_be_made_is_one_sentence(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ParameterError, match=r"out: cannot create .*file/pki"):
        write_test_certificates(blocker / "pki")
