"""A private MariaDB server for tests that kill the server.

The machine's shared server (127.0.0.1:3306) must never be stopped; this one
has its own data directory, socket and port, and belongs to the test that
started it.  Installing its system tables takes about 3 s, starting it well
under one.
"""

from __future__ import annotations

import pathlib
import shutil
import signal
import subprocess
import tempfile
import time

from support.local import free_port, stop_server


def _install_db() -> str | None:
    return shutil.which("mariadb-install-db") or shutil.which("mysql_install_db")


def _server() -> str | None:
    return shutil.which("mariadbd", path="/usr/sbin:/usr/bin") or shutil.which(
        "mysqld", path="/usr/sbin:/usr/bin"
    )


def _client() -> str | None:
    return shutil.which("mariadb") or shutil.which("mysql")


def unavailable() -> str | None:
    """Why a private server can't be started here, or None."""
    if not (_install_db() and _server() and _client()):
        return "no MariaDB server, mariadb-install-db or client installed"
    return None


def temporary_directory(data: pathlib.Path) -> pathlib.Path:
    """The server's own directory for temporary files, beside *data*; made here.

    Not the default /tmp: at start-up, mariadbd deletes every ``#sql*`` file
    in its temporary directory as left over from an earlier run of its own,
    and in /tmp those are the machine's MariaDB's temporary tables in use
    (a test of that server then failed: "Error on delete of
    '/tmp/#sql-temptable-....MAI'").
    """
    directory = data.parent / f"{data.name}-tmp"
    directory.mkdir(parents=True, exist_ok=True)
    return directory


def install_command(data: pathlib.Path) -> list[str]:
    """Create the system tables in *data*: root without a password, no test database."""
    return [
        str(_install_db()),
        "--no-defaults",
        f"--datadir={data}",
        f"--tmpdir={temporary_directory(data)}",  # passed on to its bootstrap server
        "--user=root",
        "--auth-root-authentication-method=normal",
        "--skip-test-db",
    ]


def server_command(
    data: pathlib.Path, socket: pathlib.Path, port: int, address: str, pid_file: pathlib.Path
) -> list[str]:
    """mariadbd on *address*:*port*, as root, durability traded for speed."""
    return [
        str(_server()),
        "--no-defaults",
        f"--datadir={data}",
        f"--tmpdir={temporary_directory(data)}",
        f"--socket={socket}",
        f"--port={port}",
        f"--bind-address={address}",
        "--user=root",
        f"--pid-file={pid_file}",
        "--skip-log-bin",
        "--innodb-flush-log-at-trx-commit=0",
    ]


def admin_command(socket: pathlib.Path, statements: list[str]) -> list[str]:
    """The client as root over *socket*, running *statements*."""
    return [
        str(_client()),
        "--no-defaults",
        "-uroot",
        f"--socket={socket}",
        "-e",
        "; ".join(statements),
    ]


def setup_statements(databases: list[str], user: str, password: str) -> list[str]:
    """A user with a password, and databases that user owns."""
    statements = [f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}'"]
    for database in databases:
        statements.append(f"CREATE DATABASE {database}")
        statements.append(f"GRANT ALL ON {database}.* TO '{user}'@'%'")
    return statements


class PrivateMariaDB:
    """mariadbd on 127.0.0.1:port with a user, its password and its database."""

    def __init__(self, user: str, password: str) -> None:
        self.directory = pathlib.Path(tempfile.mkdtemp(prefix="zodbshootout-mariadb-"))
        self.user = user
        self.password = password
        self.database = user
        self.port = free_port()
        self.socket = self.directory / "mariadb.sock"
        self.process: subprocess.Popen | None = None
        #: The server's log (its standard error).
        self.log = self.directory / "server.log"

    def start(self) -> PrivateMariaDB:
        data = self.directory / "data"
        done = subprocess.run(
            install_command(data), capture_output=True, text=True, check=False, timeout=120
        )
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()[-3:]
            raise RuntimeError(f"mariadb-install-db failed ({done.returncode}): {' '.join(said)}")
        argv = server_command(
            data, self.socket, self.port, "127.0.0.1", self.directory / "mariadb.pid"
        )
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log
            )
        self._admin(setup_statements([self.database], self.user, self.password))
        return self

    def _admin(self, statements: list[str], timeout: float = 30.0) -> None:
        """Run *statements* once the server answers on its socket."""
        deadline = time.monotonic() + timeout
        while True:
            done = subprocess.run(
                admin_command(self.socket, statements), capture_output=True, text=True, check=False
            )
            if done.returncode == 0:
                return
            assert self.process is not None
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"private MariaDB did not come up: {done.stderr.strip()}")
            time.sleep(0.1)

    def mysql_section(self) -> str:
        """The body of a RelStorage ``<mysql>`` section for this server."""
        return (
            f"host 127.0.0.1\nport {self.port}\nuser {self.user}\n"
            f"passwd {self.password}\ndb {self.database}\n"
        )

    def crash(self) -> None:
        """Go down at once, as a server that loses its machine (SIGKILL, by PID)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        """Stop the server (ours, by PID) and remove its files."""
        stop_server(self.process, signal.SIGTERM, self.directory)
