"""etc/provision.sh: the remote-sample step on a machine where it already ran once.

docs/databases.rst has the server machine run ``sudo MEMCACHED_LISTEN=0.0.0.0
etc/provision.sh``; on a machine provisioned before, the benchmark's
memcached already listens on 127.0.0.1 only.  The script restarts it on
every address instead of failing.  The test uses a port of its own
(MEMCACHED_PORT), not the benchmark's 24004 that other tests use.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess

import pytest

from conftest import ROOT, SHARED_KINDS, shared_servers_refusal
from support.local import free_port

pytestmark = [pytest.mark.memcached, pytest.mark.slow]


def _listeners(port: int) -> list[tuple[str, int]]:
    """(address, pid) of whatever listens on TCP *port*."""
    shown = subprocess.run(
        ["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True, check=True
    ).stdout
    found = []
    for line in shown.splitlines():
        address = line.split()[3].rsplit(":", 1)[0]
        pid = re.search(r"pid=(\d+)", line)
        found.append((address, int(pid.group(1)) if pid else 0))
    return found


def _provision(port: int, listen: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMCACHED_PORT": str(port)}
    if listen:
        env["MEMCACHED_LISTEN"] = listen
    return subprocess.run(
        ["bash", str(ROOT / "etc" / "provision.sh")],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def test_listening_on_every_address_restarts_the_benchmarks_memcached():
    if os.geteuid() != 0 or not shutil.which("memcached") or not shutil.which("ss"):
        pytest.skip("needs root, memcached and ss (etc/provision.sh installs them)")
    # etc/provision.sh creates its databases and roles on the machine's servers.
    for kind in SHARED_KINDS:
        if refusal := shared_servers_refusal(kind):
            pytest.skip(refusal)
    port = free_port()
    try:
        first = _provision(port)
        assert first.returncode == 0, f"{first.stdout}\n{first.stderr}"
        assert [address for address, _pid in _listeners(port)] == ["127.0.0.1"]
        again = _provision(port, "0.0.0.0")
        assert again.returncode == 0, f"{again.stdout}\n{again.stderr}"
        assert f"stopped the one on 127.0.0.1:{port}, to listen on 0.0.0.0" in again.stdout
        assert [address for address, _pid in _listeners(port)] == ["0.0.0.0"]
    finally:
        for _address, pid in _listeners(port):
            if pid:
                os.kill(pid, signal.SIGTERM)
