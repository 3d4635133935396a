"""Start real database servers inside a test host (see netns.Host), own data directories.

Each starter returns once the server accepts connections; the host stops
the processes (by PID) when the test is done.  Data lives in a directory
the caller owns and removes.
"""

from __future__ import annotations

import os
import pathlib
import pwd
import shutil
import sys

from support import privatemariadb
from support.netns import Host

PG_BIN = pathlib.Path("/usr/lib/postgresql")


def postgresql_binaries() -> pathlib.Path | None:
    """The newest installed PostgreSQL server's bin directory, if any."""
    versions = sorted(PG_BIN.glob("*/bin/postgres"), key=lambda p: int(p.parts[-3]))
    return versions[-1].parent if versions else None


def _as_postgres(argv: list[str]) -> list[str]:
    # setpriv execs in place, so the PID we keep is the server's own.
    return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *argv]


def start_postgresql(
    host: Host, directory: pathlib.Path, database: str, user: str, password: str, port: int = 5432
) -> None:
    """A private PostgreSQL cluster listening on the host's address."""
    bin_dir = postgresql_binaries()
    assert bin_dir is not None
    postgres = pwd.getpwnam("postgres")
    data = directory / "pgdata"
    sockets = directory / "pgsock"
    for path in (directory, data, sockets):
        path.mkdir(exist_ok=True)
        os.chown(path, postgres.pw_uid, postgres.pw_gid)
    directory.chmod(0o755)
    host.run(
        _as_postgres(
            [str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "postgres", "--no-sync"]
        ),
        check=True,
    )
    with open(data / "pg_hba.conf", "a") as hba:
        hba.write(f"host all all {host.address}/24 trust\n")
    host.spawn(
        _as_postgres(
            [
                str(bin_dir / "postgres"),
                "-D",
                str(data),
                "-p",
                str(port),
                "-c",
                f"listen_addresses={host.address}",
                "-c",
                f"unix_socket_directories={sockets}",
                "-c",
                "fsync=off",
            ]
        )
    )
    host.wait_for_port(port)
    psql = [
        str(bin_dir.parent / "bin" / "psql"),
        "-h",
        host.address,
        "-p",
        str(port),
        "-U",
        "postgres",
        "-v",
        "ON_ERROR_STOP=1",
    ]
    if not os.path.exists(psql[0]):
        psql[0] = shutil.which("psql") or "psql"
    host.run([*psql, "-c", f"CREATE ROLE {user} LOGIN PASSWORD '{password}'"], check=True)
    host.run([*psql, "-c", f"CREATE DATABASE {database} OWNER {user}"], check=True)


def start_mariadb(
    host: Host,
    directory: pathlib.Path,
    databases: list[str],
    user: str,
    password: str,
    port: int = 3306,
) -> None:
    """A private MariaDB server listening on the host's address."""
    data = directory / "mariadb"
    socket = directory / "mariadb.sock"
    host.run(privatemariadb.install_command(data), check=True)
    pid_file = directory / "mariadb.pid"
    host.spawn(privatemariadb.server_command(data, socket, port, host.address, pid_file))
    host.wait_for_port(port)
    statements = privatemariadb.setup_statements(databases, user, password)
    host.run(privatemariadb.admin_command(socket, statements), check=True)


def start_zeo(host: Host, directory: pathlib.Path, port: int) -> None:
    """A ZEO server (runzeo) serving a FileStorage on the host's address."""
    host.spawn(
        [
            sys.executable,
            "-m",
            "ZEO.runzeo",
            "-a",
            f"{host.address}:{port}",
            "-f",
            str(directory / "zeo.fs"),
        ]
    )
    host.wait_for_port(port)


def start_memcached(host: Host, port: int = 24004) -> None:  # the samples' port
    memcached = shutil.which("memcached") or "/usr/bin/memcached"
    host.spawn([memcached, "-u", "root", "-l", host.address, "-p", str(port), "-m", "64"])
    host.wait_for_port(port)
