"""etc/sample.conf, the classic four columns, against the local servers.

Needs what etc/provision.sh sets up (the zodbshootout role and databases,
memcached) and a ZEO server started as the sample says: ``runzeo -C
etc/zeo.conf`` in a directory with ``var/``.  Skips with the reason when the
provisioned servers aren't there; CI provisions them.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from conftest import ETC, run_cli

pytestmark = [pytest.mark.postgresql, pytest.mark.mysql, pytest.mark.memcached, pytest.mark.zeo]


@pytest.fixture
def zeo_server(tmp_path):
    """runzeo -C etc/zeo.conf, from a directory of its own (the config's var/)."""
    (tmp_path / "var").mkdir()
    try:  # someone else's server there would take this test's data
        socket.create_connection(("127.0.0.1", 24003), timeout=1).close()
        pytest.skip("port 24003 is taken: etc/zeo.conf's server would not be this test's")
    except OSError:
        pass
    server = subprocess.Popen(
        [sys.executable, "-m", "ZEO.runzeo", "-C", str(ETC / "zeo.conf")],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", 24003), timeout=1).close()
                if server.poll() is not None:  # it could not bind: another answered
                    pytest.skip("port 24003 was taken while runzeo -C etc/zeo.conf started")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.skip("runzeo -C etc/zeo.conf did not start (port 24003 taken?)")
                time.sleep(0.2)
        yield server
    finally:
        server.terminate()
        server.wait(30)


def test_sample_conf_prints_the_classic_four_columns(provisioned_databases, zeo_server, tmp_path):
    done = run_cli(str(ETC / "sample.conf"), "-n", "40", "-r", "1", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert [c.strip() for c in lines[0].split(",")] == [
        '"Transaction"',
        "postgresql",
        "mysql",
        "mysql_mc",
        "zeo_fs",
    ]
    rows = lines[1:8]
    assert len(rows) == 7
    for row in rows:
        cells = [c.strip() for c in row.split(",")[1:]]
        assert len(cells) == 4, row
        assert all(c.isdigit() and int(c) > 0 for c in cells), row
    assert "Note: RelStorage MySQL adapter adjusted for MariaDB" in done.stdout
