"""Servers a test starts on 127.0.0.1 for itself: a free port, waiting for it, runzeo.

Each helper here used to be written again in the test modules that needed it.
"""

from __future__ import annotations

import contextlib
import pathlib
import socket
import subprocess
import sys
import time
from collections.abc import Iterator


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
