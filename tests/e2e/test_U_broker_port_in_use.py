"""`ldpfleet broker` on a port another program holds (helper U, a new user's session): one
line, exit 2, no amqtt traceback before it (EmbeddedBroker.start had raised amqtt's loggers
back to WARNING, undoing the CLI's CRITICAL); a host that is not this machine's is not
blamed on a port in use."""

import socket
import subprocess
import sys

import pytest

CLI = [sys.executable, "-m", "ldpfleet.app.cli"]


def _broker(*arguments):
    return subprocess.run([*CLI, "broker", *arguments], capture_output=True, text=True, timeout=120)


def test_a_port_in_use_is_one_line_without_traceback():
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        done = _broker("--port", str(port))
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), done.stderr
    assert f"127.0.0.1:{port}" in lines[0] and "port in use" in lines[0]


@pytest.mark.parametrize(
    ("host", "said"),
    [("192.0.2.1", "is not an address of this machine"), ("nosuch.invalid", "no such host")],
)
def test_a_host_not_ours_is_not_called_a_port_in_use(host, said):
    done = _broker("--host", host, "--port", "0")
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert said in done.stderr and "port in use" not in done.stderr, done.stderr
