"""What a result needs besides its numbers to be trusted later: where and how it was measured.

Two runs are only comparable if you know what differed between them: the
versions of the tool, Python, ZODB and the drivers, the machine, the options
and the configuration.  Everything here is plain JSON data; passwords in the
configuration are redacted before they are recorded.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import platform
import subprocess
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


#: Where Linux says how the first CPU's frequency is chosen.
GOVERNOR_PATH = "/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"


def cpu_frequency_governor(path: str = GOVERNOR_PATH) -> str:
    """The CPU frequency governor (``performance``, ``powersave``...), or ``unknown``.

    A governor that lowers the clock when idle makes short benchmarks slower
    and noisier.  Virtual machines and containers often don't expose it:
    then it is recorded as unknown, never guessed.
    """
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip() or "unknown"
    except OSError:
        return "unknown"


def load_average() -> tuple[float, float, float] | None:
    """The system's 1, 5 and 15 minute load averages, or None where there are none.

    A load well above zero before a run means other programs compete for
    the CPUs the workers need.
    """
    try:
        one, five, fifteen = os.getloadavg()
    except (AttributeError, OSError):
        return None
    return (round(one, 2), round(five, 2), round(fifteen, 2))


def git_commit(package_dir: str | None = None) -> dict[str, Any] | None:
    """The commit of the checkout zodbshootout runs from, or None (installed, or no git).

    Only when the package is imported from a checkout's ``src/`` (an
    editable install): read-only git commands with a short timeout, and any
    failure (git missing, not a repository) means None, never an error.
    """
    package = pathlib.Path(package_dir or os.path.dirname(os.path.abspath(__file__)))
    root = package.parent.parent
    if package.parent.name != "src" or not (root / ".git").exists():
        return None
    try:
        commit = _git(root, "rev-parse", "HEAD")
        changes = _git(root, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "modified": bool(changes)}


def _git(root: pathlib.Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args],
        capture_output=True,
        text=True,
        timeout=5,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    return done.stdout.strip()


def environment() -> dict[str, Any]:
    """The software and machine a run is measured on."""
    return {
        "zodbshootout": __version__,
        "git": git_commit(),
        "python": {
            "version": platform.python_version(),
            "implementation": platform.python_implementation(),
            "executable": sys.executable,
        },
        "packages": package_versions(),
        "platform": platform.platform(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_governor": cpu_frequency_governor(),
        "memory_bytes": memory_bytes(),
        "load_average_start": load_average(),
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


def run_metadata(
    options: RunOptions, config_path: str, config_text: str, label: str | None = None
) -> dict[str, Any]:
    """Everything :mod:`resultfile` records about a run besides its timings."""
    return {
        "label": label,
        "environment": environment(),
        "options": options_metadata(options),
        "config": config_metadata(config_path, config_text),
    }


# --- Comparing runs' metadata ----------------------------------------------------


def comparable_facts(metadata: dict[str, Any]) -> dict[str, Any]:
    """What must be equal for two runs' numbers to be compared: machine, software, workload.

    Facts a (older or edited) file doesn't record are left out rather than
    taken as different.
    """
    environment = metadata.get("environment") or {}
    packages = environment.get("packages") or {}
    python = environment.get("python") or {}
    options = metadata.get("options") or {}

    def version(name: str) -> str | None:
        if name not in packages:
            return None  # not recorded: unknown, not different
        return packages[name] or "not installed"

    mode = options.get("mode")
    if mode and mode != "processes" and options.get("threads"):
        mode = f"{mode}:{options['threads']}"
    facts = {
        "CPU model": environment.get("cpu_model"),
        "CPU cores": environment.get("cpu_count"),
        "Python": python.get("version"),
        "ZODB": version("ZODB"),
        "ZEO": version("ZEO"),
        "RelStorage": version("RelStorage"),
        "object size": options.get("object_size_bytes"),
        "concurrency mode": metadata.get("concurrency_mode") or mode,
        "zodbshootout": environment.get("zodbshootout"),
    }
    return {name: value for name, value in facts.items() if value is not None}


def differing_facts(base: dict[str, Any], other: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(fact, base value, other value) for each comparable fact the two runs disagree on."""
    ours, theirs = comparable_facts(base), comparable_facts(other)
    return [
        (name, ours[name], theirs[name])
        for name in ours
        if name in theirs and ours[name] != theirs[name]
    ]
