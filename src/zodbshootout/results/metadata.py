"""What a result needs besides its numbers to be trusted later: where and how it was measured.

Two runs are only comparable if you know what differed between them: the
versions of the tool, Python, ZODB and the drivers, the machine, the options
and the configuration.  Everything here is plain JSON data; passwords in the
configuration are redacted before they are recorded.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import platform
import subprocess
import sys
from importlib import metadata as importlib_metadata
from typing import Any

from zodbshootout import __version__
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


def git_commit(package_dir: str | None = None, cwd: str | None = None) -> dict[str, Any]:
    """Which commit of zodbshootout runs: ``commit``, ``modified`` and ``source``.

    Found, in this order, in the checkout the package is imported from (an
    editable install's ``src/``); in pip's record of where a non-editable
    install came from (``direct_url.json``: a VCS commit, or a local
    directory that is a checkout); in the working directory, when it is a
    zodbshootout checkout.  Read-only git commands with a short timeout.
    When none works, ``commit`` is None and ``reason`` says why, never an error.
    """
    package = pathlib.Path(package_dir or pathlib.Path(__file__).resolve().parent.parent)
    if package.parent.name == "src" and (package.parent.parent / ".git").exists():
        return _checkout_commit(package.parent.parent, "the checkout it is imported from")
    recorded = _pip_source()
    if recorded.get("commit") or recorded.get("directory"):
        directory = recorded.pop("directory", None)
        if directory and (pathlib.Path(directory) / ".git").exists():
            return _checkout_commit(
                pathlib.Path(directory),
                f"installed (non-editable) from the checkout {directory}: its commit now",
            )
        if recorded.get("commit"):
            return recorded
    here = pathlib.Path(cwd or os.getcwd())
    if _is_zodbshootout_checkout(here):
        return _checkout_commit(
            here, "the working directory's checkout (the installed copy may differ)"
        )
    return {
        "commit": None,
        "reason": "installed without a record of its source commit (not from a git "
        "checkout or a VCS URL, and not run from a zodbshootout checkout)",
    }


def _checkout_commit(root: pathlib.Path, source: str) -> dict[str, Any]:
    try:
        commit = _git(root, "rev-parse", "HEAD")
        changes = _git(root, "status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError) as error:
        reason = "git is not installed" if isinstance(error, FileNotFoundError) else str(error)
        return {"commit": None, "reason": f"{source}: {reason}"}
    return {"commit": commit, "modified": bool(changes), "source": source}


def _pip_source() -> dict[str, Any]:
    """What pip recorded about the install: a VCS commit or a local directory."""
    try:
        text = importlib_metadata.distribution("zodbshootout").read_text("direct_url.json")
    except importlib_metadata.PackageNotFoundError:
        return {}
    if not text:
        return {}
    try:
        record = json.loads(text)
    except ValueError:
        return {}
    vcs = record.get("vcs_info") or {}
    if vcs.get("commit_id"):
        return {"commit": vcs["commit_id"], "source": f"pip install from {record.get('url')}"}
    url = str(record.get("url") or "")
    if url.startswith("file://"):
        return {"directory": url.removeprefix("file://")}
    return {}


def _is_zodbshootout_checkout(directory: pathlib.Path) -> bool:
    project = directory / "pyproject.toml"
    if not (directory / ".git").exists() or not project.is_file():
        return False
    try:
        return 'name = "zodbshootout"' in project.read_text()
    except OSError:
        return False


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
        "hostname": platform.node(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpu_governor": cpu_frequency_governor(),
        "memory_bytes": memory_bytes(),
        "load_average_start": load_average(),
    }


def options_metadata(options: Any) -> dict[str, Any]:
    """The run's options (a ``RunOptions`` dataclass) as JSON data (tuples become lists).

    The tests' fault hook is left out.  The type stays ``Any`` so that results/
    needs nothing from config/ (the package-layer rule of test_architecture).
    """
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
    options: Any, config_path: str, config_text: str, label: str | None = None
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

    facts = {
        "CPU model": environment.get("cpu_model"),
        "CPU cores": environment.get("cpu_count"),
        "Python": python.get("version"),
        "ZODB": version("ZODB"),
        "ZEO": version("ZEO"),
        "RelStorage": version("RelStorage"),
        "object size": options.get("object_size_bytes"),
        "concurrency mode": metadata.get("concurrency_mode") or _saved_mode(options),
        "zodbshootout": environment.get("zodbshootout"),
    }
    return {name: value for name, value in facts.items() if value is not None}


#: Files from before ``concurrency_mode`` was recorded: each saved mode name
#: and whether its record describes it with its sharing (Mode.describe; a
#: unit test holds the two together).  A past format's names: no new mode
#: will be written without ``concurrency_mode``, so nothing is to be added.
_SAVED_MODE_WITH_SHARING = {"processes": False, "threads": True, "gevent": True}


def _saved_mode(options: dict[str, Any]) -> str | None:
    """The concurrency mode an old file's options name, as ``concurrency_mode`` reads."""
    mode = options.get("mode")
    # Threads and gevent add their sharing ("threads" before it was named "sharing").
    sharing = options.get("sharing") or options.get("threads")
    if mode and sharing and _SAVED_MODE_WITH_SHARING.get(mode, True):
        return f"{mode}:{sharing}"
    return mode


def differing_facts(base: dict[str, Any], other: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """(fact, base value, other value) for each comparable fact the two runs disagree on."""
    ours, theirs = comparable_facts(base), comparable_facts(other)
    return [
        (name, ours[name], theirs[name])
        for name in ours
        if name in theirs and ours[name] != theirs[name]
    ]
