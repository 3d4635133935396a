"""What a result needs besides its numbers to be trusted later: where and how it was measured.

Two runs are only comparable if you know what differed between them: the
versions of the tool, Python, ZODB and the drivers, the machine, the options
and the configuration.  Everything here is plain JSON data; passwords in the
configuration are redacted before they are recorded.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
from importlib import metadata as importlib_metadata
from typing import Any

from zodbshootout import __version__
from zodbshootout.options import RunOptions
from zodbshootout.redact import find_secrets, redact

#: Distributions whose versions change what a run measures.  Missing ones are
#: recorded as None, which says "not installed" just as clearly.
PACKAGES = (
    "ZODB",
    "ZEO",
    "RelStorage",
    "persistent",
    "BTrees",
    "transaction",
    "ZConfig",
    "zodbpickle",
    "psycopg2",
    "psycopg2-binary",
    "psycopg",
    "pg8000",
    "mysqlclient",
    "PyMySQL",
    "pylibmc",
    "gevent",
)


def package_versions(names: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed version of each distribution, or None if it is not installed."""
    versions: dict[str, str | None] = {}
    for name in names:
        try:
            versions[name] = importlib_metadata.version(name)
        except importlib_metadata.PackageNotFoundError:
            versions[name] = None
    return versions


def cpu_model() -> str:
    """The CPU's marketing name (Linux: /proc/cpuinfo), or what platform knows."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Hardware", "cpu model"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def memory_bytes() -> int | None:
    """Physical memory in bytes, or None where the system doesn't say."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def environment() -> dict[str, Any]:
    """The software and machine a run is measured on."""
    return {
        "zodbshootout": __version__,
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "packages": package_versions(),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": memory_bytes(),
    }


def options_metadata(options: RunOptions) -> dict[str, Any]:
    """The run's options as JSON data (tuples become lists); the tests' fault hook is left out."""
    return {
        name: list(value) if isinstance(value, tuple) else value
        for name, value in dataclasses.asdict(options).items()
        if name != "fault"
    }


def config_metadata(path: str, text: str) -> dict[str, Any]:
    """The configuration file's name and text, with every password it contains redacted."""
    secrets = find_secrets(text)
    return {"path": redact(path, secrets), "text": redact(text, secrets)}


def run_metadata(options: RunOptions, config_path: str, config_text: str) -> dict[str, Any]:
    """Everything :mod:`resultfile` records about a run besides its timings."""
    return {
        "environment": environment(),
        "options": options_metadata(options),
        "config": config_metadata(config_path, config_text),
    }
