"""Run the command in a session of its own and find every process it left behind.

Everything the tool starts (fork server, workers, resource tracker, ZEO
servers) inherits the command's session id, whoever its parent is later;
so "no orphans" means: no live process in that session once the command
has exited.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys
import time


def session_processes(session_id: int) -> list[str]:
    """``"PID cmdline"`` of every live (non-zombie) process in the session."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue  # exited while we looked
        # The command name (field 2) may hold spaces; the rest follows its ")".
        fields = stat[stat.rindex(")") + 2 :].split()
        state, session = fields[0], int(fields[3])
        if session == session_id and state != "Z":
            found.append(f"{entry.name} {cmdline.strip()}")
    return found


def wait_until_session_empty(session_id: int, timeout: float = 20.0) -> list[str]:
    """Wait for the session's processes to exit; return those still alive at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        left = session_processes(session_id)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def start_cli(
    *args: str, env: dict[str, str] | None = None, cwd: str | os.PathLike | None = None
) -> subprocess.Popen:
    """Start ``python -m zodbshootout ARGS`` in a new session, output piped as text."""
    full_env = dict(os.environ)
    full_env.pop("ZODBSHOOTOUT_DATA", None)
    full_env.pop("ZODBSHOOTOUT_FAULT", None)
    full_env.update(env or {})
    return subprocess.Popen(
        [sys.executable, "-m", "zodbshootout", *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=full_env,
        cwd=cwd,
        start_new_session=True,
    )


def run_cli_in_session(
    *args: str, env: dict[str, str] | None = None, timeout: float = 240
) -> tuple[subprocess.CompletedProcess, list[str]]:
    """Run the command to its end; return its outcome and the processes it left alive."""
    process = start_cli(*args, env=env)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    left = wait_until_session_empty(process.pid)
    done = subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)
    return done, left
