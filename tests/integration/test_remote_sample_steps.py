"""The server steps etc/remote-sample.conf's header gives, tried on servers of the test's own.

PostgreSQL: the ``pg_hba.conf`` line from the header, alone beside the
superuser's, admits the sample's user to the sample's database with its
password and nobody else; ``listen_addresses = '*'`` is a setting the
server takes.  (The machine's shared server is never reconfigured.)
"""

from __future__ import annotations

import re
import subprocess

import pytest

from conftest import ROOT

pytestmark = [pytest.mark.postgresql, pytest.mark.slow]

SAMPLE = ROOT / "etc" / "remote-sample.conf"


def _header_line(prefix: str) -> tuple[str, str]:
    """The header comment's line holding *prefix*, and the line after it."""
    lines = [line.lstrip("#").strip() for line in SAMPLE.read_text().splitlines()]
    for index, line in enumerate(lines):
        if prefix in line:
            return line, lines[index + 1]
    raise AssertionError(f"{SAMPLE} no longer says {prefix!r}")


def test_the_pg_hba_line_admits_the_sample_user_and_no_one_else():
    import psycopg2

    from support import privatepg

    reason = privatepg.unavailable()
    if reason:
        pytest.skip(reason)
    said, hba = _header_line("in pg_hba.conf")
    assert "listen_addresses = '*'" in said
    assert re.fullmatch(r"host zodbshootout_pg zodbshootout \S+ scram-sha-256", hba), hba
    cluster = privatepg.PrivateCluster("zodbshootout", "zodbshootout").start()
    try:
        cluster._admin("CREATE DATABASE zodbshootout_pg OWNER zodbshootout")
        rules = cluster.directory / "data" / "pg_hba.conf"
        rules.write_text(f"host all postgres 127.0.0.1/32 scram-sha-256\n{hba}\n")
        cluster._admin("SELECT pg_reload_conf()")
        login = {"host": "127.0.0.1", "port": cluster.port, "connect_timeout": 3}
        psycopg2.connect(
            dbname="zodbshootout_pg", user="zodbshootout", password="zodbshootout", **login
        ).close()
        with pytest.raises(psycopg2.OperationalError, match=r"no pg_hba\.conf entry"):
            psycopg2.connect(
                dbname="zodbshootout", user="zodbshootout", password="zodbshootout", **login
            )
        with pytest.raises(psycopg2.OperationalError, match="password authentication failed"):
            psycopg2.connect(
                dbname="zodbshootout_pg", user="zodbshootout", password="wrong", **login
            )
        # The server takes the listen_addresses setting the header gives.
        shown = subprocess.run(
            cluster._as_postgres(
                [str(privatepg.binaries() / "postgres"), "-D", str(cluster.directory / "data"),
                 "-c", "listen_addresses=*", "-C", "listen_addresses"]
            ),
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert shown.stdout.strip() == "*", shown.stderr
    finally:
        cluster.stop()
