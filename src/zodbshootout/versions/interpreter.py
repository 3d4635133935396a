"""The Python a variant runs on: found, asked for its version, checked against ours.

``--python python3.12`` names a program on PATH or a path; pyenv's shims and
a virtual environment's ``python`` are followed to the real interpreter (the
one a new environment is made from), so the cache key names what runs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from importlib import metadata as importlib_metadata

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from zodbshootout.errors import UsageError

#: What an interpreter is asked: its real executable, version and implementation.
_QUESTION = (
    "import json, platform, sys; print(json.dumps({"
    "'executable': getattr(sys, '_base_executable', None) or sys.executable, "
    "'version': platform.python_version(), "
    "'implementation': platform.python_implementation()}))"
)
#: Seconds an interpreter may take to answer (a cold pyenv shim is slow).
ANSWER_SECONDS = 60
#: The shell's exit status of a command that is not there.
COMMAND_NOT_FOUND = 127


@dataclass(frozen=True)
class Interpreter:
    """A Python to build environments from: its real executable and its version."""

    requested: str  # what the user wrote ('' for the Python running zodbshootout)
    executable: str
    version: str
    implementation: str


def find_interpreter(requested: str | None) -> Interpreter:
    """The interpreter *requested* names (None: the one running zodbshootout)."""
    program = sys.executable if requested is None else _locate(requested)
    try:
        done = subprocess.run(
            [program, "-c", _QUESTION],
            capture_output=True,
            text=True,
            timeout=ANSWER_SECONDS,
            stdin=subprocess.DEVNULL,
        )
    except (OSError, subprocess.SubprocessError) as e:
        raise UsageError(f"--python {requested}: it did not run: {e}") from None
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines() or ["no message"]
        # A program that isn't there (127: a pyenv shim of a version not chosen)
        # says so first; a Python that fails says why last (its exception).
        reason = lines[0] if done.returncode == COMMAND_NOT_FOUND else lines[-1]
        raise UsageError(f"--python {requested}: it did not run: {reason.strip()}")
    try:
        facts = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise UsageError(f"--python {requested}: {program} is not a Python interpreter") from None
    interpreter = Interpreter(
        requested or "", facts["executable"], facts["version"], facts["implementation"]
    )
    _check_supported(interpreter)
    return interpreter


def _locate(requested: str) -> str:
    if os.sep in requested:
        if os.access(requested, os.X_OK) and os.path.isfile(requested):
            return os.path.abspath(requested)
        raise UsageError(f"--python {requested}: no such program")
    found = shutil.which(requested)
    if found is None:
        raise UsageError(f"--python {requested}: not found on PATH (name a program or a path)")
    return found


def _check_supported(interpreter: Interpreter) -> None:
    """A UsageError when zodbshootout does not support the interpreter's version."""
    try:
        wanted = importlib_metadata.metadata("zodbshootout")["Requires-Python"] or ""
        supported = SpecifierSet(wanted)
    except (importlib_metadata.PackageNotFoundError, InvalidSpecifier):
        return
    if not supported.contains(interpreter.version, prereleases=True):
        raise UsageError(
            f"--python {interpreter.requested}: Python {interpreter.version} is not one "
            f"zodbshootout runs on (it needs Python {wanted})"
        )
