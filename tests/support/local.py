"""Servers a test starts on 127.0.0.1 for itself: a free port, waiting for it, runzeo, memcached.

Each helper here used to be written again in the test modules that needed it.
"""

from __future__ import annotations

import contextlib
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest


def free_port() -> int:
    """A port nothing listens on now (the kernel's choice; closed again at once)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(
    port: int,
    timeout: float = 30.0,
    process: subprocess.Popen | None = None,
    host: str = "127.0.0.1",
) -> None:
    """Return once *host:port* accepts connections; AssertionError at the deadline.

    With *process*, also fail as soon as that process (the server) has exited.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if process is not None and process.poll() is not None:
                raise AssertionError(f"the server exited ({process.returncode})") from None
            time.sleep(0.1)
    raise AssertionError(f"nothing listens on {host}:{port}")


@contextlib.contextmanager
def runzeo(path: pathlib.Path) -> Iterator[tuple[subprocess.Popen, int]]:
    """A ZEO server of the test's own (not the tool's) serving a FileStorage at *path*.

    Yields the process and its port; the test may stop or kill it at will.
    """
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ZEO.runzeo", "-a", f"127.0.0.1:{port}", "-f", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process=process)
        yield process, port
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


@contextlib.contextmanager
def memcached() -> Iterator[int]:
    """A memcached of the test's own on 127.0.0.1; yields its port.

    A test that reads memcached's server-wide statistics (gets, sets,
    flushes) needs a server no other test (or worker) uses meanwhile.
    Skips with the reason when memcached isn't installed.
    """
    program = shutil.which("memcached") or shutil.which("memcached", path="/usr/bin")
    if program is None:
        pytest.skip("memcached is not installed (etc/provision.sh installs it)")
    port = free_port()
    # memcached refuses to run as root unless told which user to be.
    user = ["-u", "root"] if os.geteuid() == 0 else []
    process = subprocess.Popen(
        [program, *user, "-l", "127.0.0.1", "-p", str(port), "-U", "0", "-m", "64"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, process=process)
        yield port
    finally:
        process.kill()
        process.wait()


def stop_server(
    process: subprocess.Popen | None, signum: int, directory: pathlib.Path | None = None
) -> None:
    """Stop a server the test started (by PID, with *signum*, killed after 30 s); remove
    its *directory*."""
    if process is not None and process.poll() is None:
        process.send_signal(signum)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    if directory is not None:
        shutil.rmtree(directory, ignore_errors=True)
