"""Passwords never reach stdout, stderr, logs, result files or file names.

Each test configures real passwords (in DSNs, ``passwd`` keys and a
``%define``), runs the command with everything that writes output turned on
(``-o``, ``-p``, ``--debug``), including databases that fail because of a
wrong password or an unreachable server, and searches every byte it
produced for the passwords.
"""

from __future__ import annotations

import os
import pathlib
import subprocess

import pytest

from conftest import (
    MYSQL_HOST,
    MYSQL_PORT,
    POSTGRESQL_HOST,
    POSTGRESQL_PORT,
    postgresql_admin,
    require_server,
    run_cli,
)
from support import privatepg
from support.local import free_port

ROLE = f"zs_secret_{os.getpid()}"
RIGHT = "Right-Pa55word-7Qz"
WRONG = "Wrong-Pa55word-3Xk"
UNREACHABLE = "Unreach-Pa55word-9Vb"
PASSWORDS = (RIGHT, WRONG, UNREACHABLE)


def everything_written(done, *places: pathlib.Path) -> str:
    """stdout, stderr, and the names and contents of every file below *places*."""
    parts = [done.stdout, done.stderr]
    for place in places:
        for path in sorted(place.rglob("*")):
            parts.append(str(path))
            if path.is_file():
                parts.append(path.read_bytes().decode("utf-8", errors="replace"))
    return "\n".join(parts)


def run_writing_everything(
    config: str, tmp_path: pathlib.Path, concurrency: int = 1
) -> tuple[subprocess.CompletedProcess, pathlib.Path]:
    """Run *config* with --debug, a result file and profiles in tmp_path/out.

    Returns the finished command and that directory, whose every file the
    test then searches for passwords.
    """
    out = tmp_path / "out"
    out.mkdir()
    args = ("-n", "10", "-c", str(concurrency), "-r", "1", "--debug")
    done = run_cli(config, *args, "-o", str(out / "run.json"), "-p", str(out / "profiles"))
    return done, out


def assert_no_password(text: str) -> None:
    for password in PASSWORDS:
        assert password not in text, f"{password!r} leaked"
        # Not even the interesting half of it.
        assert password[:12] not in text, f"part of {password!r} leaked"


@pytest.fixture
def postgresql_role():
    """A role with a password, and a database it owns; both dropped afterwards."""
    admin = postgresql_admin()
    with admin.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {ROLE} WITH (FORCE)")
        cursor.execute(f"DROP ROLE IF EXISTS {ROLE}")
        cursor.execute(f"CREATE ROLE {ROLE} LOGIN PASSWORD %s", (RIGHT,))
        cursor.execute(f"CREATE DATABASE {ROLE} OWNER {ROLE}")
    try:
        yield ROLE
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {ROLE} WITH (FORCE)")
            cursor.execute(f"DROP ROLE IF EXISTS {ROLE}")
        admin.close()


@pytest.fixture
def mysql_user():
    """A MariaDB/MySQL user with a password, and a database; both dropped afterwards."""
    require_server("mysql")
    pymysql = pytest.importorskip("pymysql")
    admin = pymysql.connect(host=MYSQL_HOST, port=MYSQL_PORT, user="root", password="")
    hosts = ("%", "localhost", "127.0.0.1")
    with admin.cursor() as cursor:
        cursor.execute(f"CREATE DATABASE IF NOT EXISTS {ROLE}")
        for host in hosts:
            cursor.execute(f"CREATE USER IF NOT EXISTS '{ROLE}'@'{host}' IDENTIFIED BY '{RIGHT}'")
            cursor.execute(f"GRANT ALL ON {ROLE}.* TO '{ROLE}'@'{host}'")
    try:
        yield ROLE
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {ROLE}")
            for host in hosts:
                cursor.execute(f"DROP USER IF EXISTS '{ROLE}'@'{host}'")
        admin.close()


@pytest.mark.postgresql
def test_postgresql_passwords_stay_secret(postgresql_role, tmp_path, write_config):
    config = write_config(f"""
        %define PGPASSWORD {RIGHT}
        <zodb pg_ok>
          <relstorage>
            <postgresql>
              dsn dbname={postgresql_role} user={postgresql_role} host={POSTGRESQL_HOST} port={POSTGRESQL_PORT} password=$PGPASSWORD
            </postgresql>
          </relstorage>
        </zodb>
        <zodb pg_down>
          <relstorage>
            <postgresql>
              dsn dbname={postgresql_role} user={postgresql_role} host=127.0.0.1 port={free_port()} password='{UNREACHABLE}'
            </postgresql>
          </relstorage>
        </zodb>
    """)  # noqa: E501
    done, out = run_writing_everything(config, tmp_path)

    # The run did what it should: one database measured, one failed with its reason.
    assert done.returncode == 1, done.stderr[-2000:]
    assert "pg_down (concurrency 1): " in done.stdout
    add_row = next(line for line in done.stdout.splitlines() if line.startswith('"Add'))
    assert add_row.split(",")[1].strip().isdigit(), done.stdout
    assert (out / "run.json").exists()
    assert any((out / "profiles").iterdir())
    assert_no_password(everything_written(done, out))


@pytest.mark.mysql
def test_mysql_wrong_password_is_reported_without_it(mysql_user, tmp_path, write_config):
    config = write_config(f"""
        <zodb my_wrong>
          <relstorage>
            <mysql>
              host {MYSQL_HOST}
              port {MYSQL_PORT}
              user {mysql_user}
              passwd {WRONG}
              db {mysql_user}
            </mysql>
          </relstorage>
        </zodb>
    """)
    done, out = run_writing_everything(config, tmp_path)

    # One database, and it can't be used: exit 2, the reason says what to check.
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.splitlines()[-1]
    assert last.startswith("zodbshootout: error: my_wrong: ")
    assert "Access denied" in last
    assert "check the user and password" in last
    assert_no_password(everything_written(done, out))


def test_a_broken_configuration_does_not_print_its_passwords(tmp_path, write_config):
    """ZConfig quotes a bad value in its error; --debug prints the whole traceback.

    Here the password (through a %define) is also, by mistake, the port.
    """
    config = write_config(f"""
        %define SECRET {RIGHT}
        <zodb broken>
          <relstorage>
            <mysql>
              host 127.0.0.1
              passwd $SECRET
              port $SECRET
            </mysql>
          </relstorage>
        </zodb>
    """)
    for extra in ((), ("--debug",)):
        done = run_cli(config, "-n", "10", *extra)
        assert done.returncode == 2, f"{done.stdout}\n{done.stderr}"
        assert "zodbshootout: error: " in done.stderr
        assert_no_password(everything_written(done))


@pytest.fixture
def password_checking_postgresql():
    """The shared server trusts local logins; this private cluster checks passwords."""
    reason = privatepg.unavailable()
    if reason:
        pytest.skip(reason)
    pytest.importorskip("psycopg2")
    cluster = privatepg.PrivateCluster(ROLE, RIGHT).start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.postgresql
def test_wrong_and_right_postgresql_passwords_stay_secret(
    password_checking_postgresql, tmp_path, write_config
):
    cluster = password_checking_postgresql
    config = write_config(f"""
        <zodb pg_right>
          <relstorage>
            <postgresql>
              dsn {cluster.dsn()}
            </postgresql>
          </relstorage>
        </zodb>
        <zodb pg_wrong>
          <relstorage>
            <postgresql>
              dsn {cluster.dsn(WRONG)}
            </postgresql>
          </relstorage>
        </zodb>
    """)
    done, out = run_writing_everything(config, tmp_path, concurrency=2)

    assert done.returncode == 1, done.stderr[-2000:]
    add_row = next(line for line in done.stdout.splitlines() if line.startswith('"Add'))
    assert add_row.split(",")[1].strip().isdigit(), done.stdout
    assert "pg_wrong (concurrency 2): cannot open the database" in done.stdout
    assert "password authentication failed" in done.stdout
    assert "check the user and password" in done.stdout
    assert_no_password(everything_written(done, out))
