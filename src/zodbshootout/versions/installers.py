"""The two ways to make an environment: uv when it is on PATH, else venv and pip.

Both are driven through their command lines, as a user would: the commands
here are the whole difference between them.  uv resolves and installs in
seconds from its own cache; venv + pip needs nothing but Python.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
from dataclasses import dataclass

from zodbshootout.errors import UsageError

#: --installer's choices: auto takes uv when it is on PATH.
INSTALLERS = ("auto", "uv", "pip")


@dataclass(frozen=True)
class Installer:
    """How environments are made and filled: ``uv`` (the program's path) or ``pip``."""

    name: str
    uv: str | None = None

    def create(self, interpreter: str, directory: pathlib.Path) -> list[str]:
        """The command that makes an empty virtual environment in *directory*."""
        if self.uv:
            return [self.uv, "venv", "--quiet", "--python", interpreter, str(directory)]
        return [interpreter, "-m", "venv", str(directory)]

    def install(self, python: pathlib.Path, arguments: list[str]) -> list[str]:
        """The command that installs *arguments* (requirements, options) with *python*'s site."""
        if self.uv:
            return [self.uv, "pip", "install", "--python", str(python), *arguments]
        return [
            str(python),
            *("-m", "pip", "install", "--disable-pip-version-check", "--no-input"),
            *("--progress-bar", "off"),
            *arguments,
        ]

    def version(self, python: pathlib.Path) -> str:
        """The installer's name and version (pip's is the environment's own pip)."""
        command = [self.uv, "--version"] if self.uv else [str(python), "-m", "pip", "--version"]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
            )
        except (OSError, subprocess.SubprocessError):
            return self.name
        words = done.stdout.split()
        return f"{self.name} {words[1]}" if done.returncode == 0 and len(words) > 1 else self.name


def choose_installer(requested: str = "auto") -> Installer:
    """uv when asked or (auto) when it is on PATH; pip otherwise."""
    uv = shutil.which("uv") if requested in ("auto", "uv") else None
    if requested == "uv" and uv is None:
        raise UsageError("--installer uv: uv is not on PATH (pip install uv, or --installer pip)")
    return Installer("uv", uv) if uv else Installer("pip")
