"""The test suite leaves the machine's PostgreSQL and MariaDB alone unless asked.

An operator who runs the README's test command on a machine with servers
of their own must not find databases created on them.  Two private servers
stand in for the operator's (the tests are pointed at them as at the usual
ones); their own records say what the tests did there: PostgreSQL's
statement log (``log_statement=ddl``) and MariaDB's ``Com_create_db``
counter.  Without ``ZODBSHOOTOUT_TEST_SERVERS=1`` nothing is created and
the tests say why they skipped; with it, the same tests create their
databases (so the check can fail).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from conftest import ROOT, SHARED_SERVERS_VARIABLE
from support import privatemariadb, privatepg

pytestmark = [pytest.mark.postgresql, pytest.mark.mysql, pytest.mark.slow]

PASSWORD = "Operator-Pw-4Rt"

# Every way a test reaches a shared server: the conftest fixtures.
USES_THE_FIXTURES = """\
from conftest import mysql_database, postgresql_dsn, provisioned_databases  # noqa: F401


def test_postgresql(postgresql_dsn):
    assert postgresql_dsn


def test_mysql(mysql_database):
    assert mysql_database


def test_provisioned(provisioned_databases):
    pass
"""


@pytest.fixture(scope="module")
def operator_servers():
    """A PostgreSQL and a MariaDB as an operator's: superusers reachable over TCP."""
    for reason in (privatepg.unavailable(), privatemariadb.unavailable()):
        if reason:
            pytest.skip(reason)
    pg = privatepg.PrivateCluster("operator", PASSWORD, {"log_statement": "ddl"}).start()
    try:
        maria = privatemariadb.PrivateMariaDB("operator", PASSWORD).start()
        try:
            # Like the machine's: root with an empty password from 127.0.0.1.
            maria._admin(["CREATE USER 'root'@'%'", "GRANT ALL ON *.* TO 'root'@'%'"])
            yield pg, maria
        finally:
            maria.stop()
    finally:
        pg.stop()


def _databases_created(maria: privatemariadb.PrivateMariaDB) -> int:
    status = ["SHOW GLOBAL STATUS LIKE 'Com_create_db'"]
    command = privatemariadb.admin_command(maria.socket, status)
    done = subprocess.run([*command, "-N"], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[-1])


def _run_tests(tmp_path, pg, maria, opted_in: bool, *files: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop(SHARED_SERVERS_VARIABLE, None)
    if opted_in:
        env[SHARED_SERVERS_VARIABLE] = "1"
    env.update(
        ZODBSHOOTOUT_PG_PORT=str(pg.port),
        PGPASSWORD=PASSWORD,  # the tests log in as postgres without one, as on the shared server
        ZODBSHOOTOUT_MYSQL_PORT=str(maria.port),
        PYTHONPATH=str(ROOT / "tests"),
    )
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-n", "0", "-rs", *files],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_without_the_opt_in_no_database_is_created(operator_servers, tmp_path):
    pg, maria = operator_servers
    fixtures = tmp_path / "test_uses_the_fixtures.py"
    fixtures.write_text(USES_THE_FIXTURES)
    log_before = pg.log.read_text()
    created_before = _databases_created(maria)

    done = _run_tests(
        tmp_path,
        pg,
        maria,
        False,
        str(fixtures),
        "tests/integration/test_mariadb_compat.py",
        "tests/integration/test_provision.py",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "left the postgresql server" in done.stdout
    assert "left the mysql server" in done.stdout
    assert "CREATE DATABASE" not in pg.log.read_text()[len(log_before) :]
    assert _databases_created(maria) == created_before

    # Asked to, the same fixtures do create their databases: the records above can tell.
    done = _run_tests(tmp_path, pg, maria, True, str(fixtures))
    assert "2 passed" in done.stdout, done.stdout + done.stderr
    assert "CREATE DATABASE zodbshootout_t" in pg.log.read_text()[len(log_before) :]
    assert _databases_created(maria) > created_before


def test_ci_opts_in():
    script = (ROOT / ".ci" / "run").read_text()
    assert f"export {SHARED_SERVERS_VARIABLE}=1" in textwrap.dedent(script)
