"""etc/remote-sample.conf against a second host: servers in one network namespace,
the benchmark in another, a veth pair (with a small netem delay) between them.

The only change to the sample is its ``%define host`` line, as a user would
make it.  Skips with the reason where namespaces can't be created (not root,
no iproute2) or a server program isn't installed; in CI it runs.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import ETC
from support import netns, servers

pytestmark = [
    pytest.mark.netns,
    pytest.mark.slow,
    pytest.mark.postgresql,
    pytest.mark.mysql,
    pytest.mark.memcached,
    pytest.mark.zeo,
]

DELAY_MS = 1.0
USER = PASSWORD = "zodbshootout"


def _missing_prerequisite() -> str | None:
    reason = netns.can_create_namespaces()
    if reason:
        return reason
    if servers.postgresql_binaries() is None:
        return "PostgreSQL server binaries are not installed"
    for program in ("mariadb-install-db", "memcached", "setpriv"):
        if shutil.which(program) is None and not os.path.exists(f"/usr/sbin/{program}"):
            return f"{program} is not installed"
    drivers = (("MySQLdb", "mysql"), ("pylibmc", "memcache"), ("psycopg2", "postgresql"))
    for module, extra in drivers:
        try:
            __import__(module)
        except ImportError:
            return f"{module} is not installed (pip install '.[{extra}]')"
    return None


@pytest.fixture
def server_directory():
    # Not below pytest's tmp_path: the postgres user must be able to reach it.
    directory = Path(tempfile.mkdtemp(prefix="zodbshootout-remote-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def test_remote_sample_measures_every_database_on_the_other_host(server_directory, tmp_path):
    reason = _missing_prerequisite()
    if reason:
        pytest.skip(reason)
    sample = (ETC / "remote-sample.conf").read_text()
    with netns.TwoHosts(delay_ms=DELAY_MS) as hosts:
        remote = hosts.server
        servers.start_postgresql(remote, server_directory / "pg", "zodbshootout_pg", USER, PASSWORD)
        servers.start_mariadb(
            remote,
            server_directory,
            ["zodbshootout_mysql", "zodbshootout_mysql_mc"],
            USER,
            PASSWORD,
        )
        servers.start_memcached(remote)
        servers.start_zeo(remote, server_directory, 24003)

        config = tmp_path / "remote.conf"
        config.write_text(
            re.sub(r"(?m)^%define host .*$", f"%define host {remote.address}", sample, count=1)
        )
        done = hosts.client.run(
            [
                sys.executable,
                "-m",
                "zodbshootout",
                str(config),
                "-n",
                "30",
                "-c",
                "2",
                "-r",
                "1",
                "-q",
                "-v",
            ],
            timeout=600,
            cwd=str(tmp_path),
        )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [c.strip() for c in lines[0].split(",")] == [
        '"Transaction"',
        "postgresql",
        "mysql",
        "mysql_mc",
        "zeo_fs",
    ]
    for line in lines[1:8]:
        cells = [c.strip() for c in line.split(",")[1:]]
        assert len(cells) == 4, line
        assert all(c.isdigit() and int(c) > 0 for c in cells), line
    # The servers listen only on the other namespace's address, so every
    # database was reached across the veth link; with netem's delay (where the
    # kernel has it) the measured round trip must also exceed that delay.
    for name in ("postgresql", "mysql", "mysql_mc", "zeo_fs"):
        latency = re.search(rf"^{name}: .*latency (\d+) µs", done.stderr, re.M)
        assert latency, done.stderr
        assert int(latency.group(1)) >= hosts.delay_ms * 1000, latency.group(0)
