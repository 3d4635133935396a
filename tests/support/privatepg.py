"""A private PostgreSQL cluster for tests that stop the server or check passwords.

The machine's shared server trusts every local connection and must never be
stopped; this one has its own data directory and port, checks passwords
(scram-sha-256), and belongs to the test that started it.
"""

from __future__ import annotations

import os
import pathlib
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

from support.local import free_port, stop_server

BIN = pathlib.Path("/usr/lib/postgresql")


def binaries() -> pathlib.Path | None:
    """The newest installed PostgreSQL server's bin directory, if any."""
    found = sorted(BIN.glob("*/bin/postgres"), key=lambda p: int(p.parts[-3]))
    return found[-1].parent if found else None


def unavailable() -> str | None:
    """Why a private cluster can't be started here, or None."""
    if binaries() is None:
        return "no PostgreSQL server binaries under /usr/lib/postgresql"
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return "no postgres user to run the server as"
    if os.geteuid() != 0:
        return "starting a cluster as the postgres user needs root"
    if shutil.which("setpriv") is None:
        return "setpriv is not installed"
    return None


class PrivateCluster:
    """initdb + postgres on 127.0.0.1:port; a role with a password and its database."""

    def __init__(self, role: str, password: str, settings: dict[str, str] | None = None) -> None:
        # Not below pytest's tmp_path: that is private to root, and the
        # server runs as postgres.
        self.directory = pathlib.Path(tempfile.mkdtemp(prefix="zodbshootout-pg-"))
        self.role = role
        self.password = password
        self.port = free_port()
        self.process: subprocess.Popen | None = None
        #: Server settings beyond the defaults (``-c name=value``), e.g. log_statement.
        self.settings = settings or {}
        #: The server's log (its standard error), written by the server as it runs.
        self.log = self.directory / "server.log"

    def _as_postgres(self, argv: list[str]) -> list[str]:
        # setpriv execs in place, so the PID we keep is the server's own.
        return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *argv]

    def start(self) -> PrivateCluster:
        bin_dir = binaries()
        assert bin_dir is not None
        postgres = pwd.getpwnam("postgres")
        os.chown(self.directory, postgres.pw_uid, postgres.pw_gid)
        admin_password = self.directory / "admin-password"
        admin_password.write_text(self.password + "\n")
        os.chown(admin_password, postgres.pw_uid, postgres.pw_gid)
        data = self.directory / "data"
        subprocess.run(
            self._as_postgres(
                [
                    str(bin_dir / "initdb"),
                    "-D",
                    str(data),
                    "-U",
                    "postgres",
                    "-A",
                    "scram-sha-256",
                    f"--pwfile={admin_password}",
                    "--no-sync",
                ]
            ),
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        admin_password.unlink()
        # The port was free when chosen, but initdb takes seconds, and a server
        # of another test may bind it meanwhile (CI: the connection met that
        # server's answer, "invalid response to SSL negotiation"): take another.
        for attempt in range(3):
            if attempt:
                self.port = free_port()
            self.process = self._serve(bin_dir, data)
            try:
                self._wait_until_ready()
                break
            except Exception:
                if attempt == 2 or not self._port_was_taken():
                    raise
        self._admin(
            f"CREATE ROLE {self.role} LOGIN PASSWORD '{self.password}'",
            f"CREATE DATABASE {self.role} OWNER {self.role}",
        )
        return self

    def _serve(self, bin_dir: pathlib.Path, data: pathlib.Path) -> subprocess.Popen:
        return subprocess.Popen(
            self._as_postgres(
                [
                    str(bin_dir / "postgres"),
                    "-D",
                    str(data),
                    "-p",
                    str(self.port),
                    "-c",
                    "listen_addresses=127.0.0.1",
                    "-c",
                    f"unix_socket_directories={self.directory}",
                    "-c",
                    "fsync=off",
                    "-c",
                    "full_page_writes=off",
                    *[f"-c{name}={value}" for name, value in self.settings.items()],
                ]
            ),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log.open("wb"),
        )

    def _port_was_taken(self) -> bool:
        """Whether the server ended because its port was in use (its log says so)."""
        assert self.process is not None
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return False
        return "could not bind" in self.log.read_text(errors="replace")

    def _wait_until_ready(self, timeout: float = 30.0) -> None:
        import psycopg2

        deadline = time.monotonic() + timeout
        while True:
            try:
                psycopg2.connect(**self._postgres_login()).close()
                return
            except psycopg2.OperationalError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise
                time.sleep(0.1)

    def _postgres_login(self) -> dict:
        # The superuser shares the role's password: only the tests know it.
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "user": "postgres",
            "password": self.password,
            "dbname": "postgres",
            "connect_timeout": 3,
        }

    def _admin(self, *statements: str) -> None:
        import psycopg2

        connection = psycopg2.connect(**self._postgres_login())
        connection.autocommit = True
        try:
            with connection.cursor() as cursor:
                for statement in statements:
                    cursor.execute(statement)
        finally:
            connection.close()

    def dsn(self, password: str | None = None) -> str:
        return (
            f"host=127.0.0.1 port={self.port} dbname={self.role} user={self.role} "
            f"password={self.password if password is None else password} "
            "connect_timeout=3"
        )

    def crash(self) -> None:
        """Go down at once, as a server that loses its machine (immediate shutdown)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)
            self.process.wait(30)

    def stop(self) -> None:
        """Stop the server (ours, by PID) and remove its files."""
        stop_server(self.process, signal.SIGQUIT, self.directory)
