"""Test-only fault injection: make one worker die, crash or hang in one phase.

The fault tests need a worker that fails in a precise place (worker 1, in
the middle of the cold phase) so that they can check what the rest of the
run does about it.  The environment variable ``ZODBSHOOTOUT_FAULT`` names
that place::

    ZODBSHOOTOUT_FAULT=DATABASE:PHASE:WORKER:ACTION   e.g.  sqlite:cold:1:kill

ACTION is ``kill`` (SIGKILL itself), ``exit`` (leave without a word, as a
crashed interpreter does), ``raise`` (an unexpected exception), ``oom`` (a
MemoryError) or ``hang`` (sleep until stopped).  ``*`` as DATABASE matches
every database.  The hook fires after the barrier that starts the phase and
before the worker reads its clock, so it never adds to a measured duration.
It is not a user feature and is documented only here.

PHASE ``populate`` is the runner's own untimed step: the fault fires in the
runner process, before the populate of repetition WORKER (the field names
the repetition there), so ``raise`` fails that step as a dead server would,
and ``pause`` waits :data:`PAUSE_SECONDS` after the progress
line ``populate`` so that a test can kill a server exactly then.

In ``mix``, PHASE ``populate`` (WORKER 0) fires where the dataset loads,
after the progress line ``loading the dataset`` and the database's opening.
PHASE ``readback`` is ``mix``'s untimed read-back of the objects' versions
after a database's workers finished (WORKER 0).  Both run where the
session populates: a process of their own with worker processes.

Only the command line reads the variable (:func:`from_environment`, once per
run, into ``RunOptions.fault``); the runner hands the fault to each worker in
its ``StageTask.fault``, so the worker loop never reads the environment and
a run without the variable (every real run) carries None.  The warm-up
repetition never carries it: the fault hits a measured repetition.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass

from zodbshootout.errors import UsageError

VARIABLE = "ZODBSHOOTOUT_FAULT"
ACTIONS = ("kill", "exit", "raise", "oom", "hang", "pause")
#: How long ``pause`` waits.
PAUSE_SECONDS = 3.0


class InjectedFault(RuntimeError):
    """The exception the ``raise`` action throws."""


@dataclass(frozen=True)
class Fault:
    """Where a fault fires and what it does."""

    database: str
    phase: str
    worker: int
    action: str

    def matches(self, database: str, phase: str, worker: int) -> bool:
        return self.database in ("*", database) and self.phase == phase and self.worker == worker


def parse_fault(text: str) -> Fault:
    """Parse ``DATABASE:PHASE:WORKER:ACTION``; a malformed value is a ValueError."""
    parts = text.rsplit(":", 3)
    if len(parts) != 4 or not parts[2].isdigit() or parts[3] not in ACTIONS:
        raise ValueError(
            f"{VARIABLE}={text!r}: expected DATABASE:PHASE:WORKER:ACTION with ACTION one of "
            f"{', '.join(ACTIONS)}"
        )
    database, phase, worker, action = parts
    return Fault(database, phase, int(worker), action)


def fault_for(database: str, environ: Mapping[str, str] | None = None) -> Fault | None:
    """The fault *environ* (default: this process's environment) sets for *database*."""
    fault = from_environment(environ)
    return fault if fault is not None and fault.database in ("*", database) else None


def from_environment(environ: Mapping[str, str] | None = None) -> Fault | None:
    """The fault the tests asked for in ``ZODBSHOOTOUT_FAULT``, or None (every real run).

    A malformed value is a UsageError: the tests' typo must not pass unnoticed.
    """
    text = (os.environ if environ is None else environ).get(VARIABLE)
    if not text:
        return None
    try:
        return parse_fault(text)
    except ValueError as e:
        raise UsageError(str(e)) from None


def at_populate(fault: Fault | None, database: str, repetition: int) -> None:
    """Fire *fault* if it is aimed at *database*'s populate of *repetition* (runner side)."""
    if fault is not None and fault.matches(database, "populate", repetition):
        fire(fault)


def fire(fault: Fault) -> None:
    """Do what the fault says, in this worker."""
    if fault.action == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif fault.action == "exit":
        os._exit(70)
    elif fault.action == "raise":
        raise InjectedFault(f"injected fault in {fault.phase} of worker {fault.worker}")
    elif fault.action == "oom":
        raise MemoryError()
    elif fault.action == "pause":
        time.sleep(PAUSE_SECONDS)
        return
    while True:  # hang: until the runner gives up and stops us
        time.sleep(3600)


def fire_if_due(fault: Fault | None, database: str, phase: str, worker: int) -> None:
    """Fire *fault* (a test's; None in real runs) if it names this database, phase and worker."""
    if fault is not None and fault.matches(database, phase, worker):
        fire(fault)
