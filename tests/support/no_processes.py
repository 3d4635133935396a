"""The quick run starts no process: a unit test that tries fails, naming the call.

tests/conftest.py enters :func:`refuse_process_starts` around every test of
tests/unit (a conftest of tests/unit would shadow the shared one: the tests
import ``conftest`` by name).

Tests that need a worker process, a subprocess or a server belong in
tests/integration; this guard keeps `pytest tests/unit` quick (well under a
minute on two cores) and independent of what the machine can start.  It
replaces the calls that start a process for the duration of each test only
(pytest-xdist's own workers are started before any test), and it is a guard
on the tests, not a stand-in for the code under test.
"""

from __future__ import annotations

import multiprocessing.process
import os
import subprocess


class ProcessStarted(AssertionError):
    """A unit test started a process: it belongs in tests/integration."""


def _refuse(what: str):
    def refuse(*args, **kwargs):
        raise ProcessStarted(
            f"a unit test started a process ({what}); "
            "tests that start processes or servers belong in tests/integration"
        )

    return refuse


#: (owner, attribute): every way the code base (and its libraries) starts a process.
STARTERS = (
    (subprocess.Popen, "_execute_child"),
    (multiprocessing.process.BaseProcess, "start"),
    (os, "fork"),
    (os, "forkpty"),
    (os, "posix_spawn"),
    (os, "posix_spawnp"),
    (os, "system"),
    (os, "execv"),
    (os, "execve"),
)


def refuse_process_starts(monkeypatch) -> None:
    """Make every call of :data:`STARTERS` raise ProcessStarted until *monkeypatch* undoes it."""
    for owner, name in STARTERS:
        if hasattr(owner, name):
            label = f"{getattr(owner, '__name__', owner)}.{name}"
            monkeypatch.setattr(owner, name, _refuse(label))
