"""``show --metadata``: where, when and how a saved run was measured, as readable lines."""

from __future__ import annotations

import datetime
from typing import Any

from zodbshootout.render.description import format_description
from zodbshootout.results.record import RunResult


def format_timestamp(seconds: float | None) -> str:
    """An epoch timestamp as ``2026-11-23 16:20:00 UTC``; ``unknown`` without one."""
    if not isinstance(seconds, (int, float)):
        return "unknown"
    moment = datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc)
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def _load(values: Any) -> str:
    if not values:
        return "unknown"
    return " ".join(f"{value:.2f}" for value in values) + " (1, 5, 15 min)"


def _gib(count: Any) -> str:
    return f"{count / 2**30:.1f} GiB" if isinstance(count, int) and count else "unknown"


def _git(git: Any) -> str:
    """`` (git 0123456789ab, modified)``, or why the commit is unknown."""
    if not git:
        return ""
    if not git.get("commit"):
        return f" (git commit unknown: {git.get('reason') or 'not recorded'})"
    return f" (git {git['commit'][:12]}{', modified' if git.get('modified') else ''})"


def format_metadata(result: RunResult) -> list[str]:
    """Label, dates, machine, software versions, options and databases of a saved run."""
    metadata = result.metadata
    environment = metadata.get("environment") or {}
    python = environment.get("python") or {}
    options = metadata.get("options") or {}
    tool = str(environment.get("zodbshootout", "unknown")) + _git(environment.get("git"))
    lines = [
        f"Label:            {metadata.get('label') or '-'}",
        f"Started:          {format_timestamp(metadata.get('started'))}",
        f"Finished:         {format_timestamp(metadata.get('finished'))}",
        f"zodbshootout:     {tool}",
        f"Python:           {_python(python)}",
        f"Host:             {environment.get('hostname') or 'unknown'}",
        f"Platform:         {environment.get('platform', 'unknown')}",
        f"CPU:              {environment.get('cpu_model', 'unknown')}, "
        f"{environment.get('cpu_count', '?')} cores, "
        f"governor {environment.get('cpu_governor', 'unknown')}",
        f"Memory:           {_gib(environment.get('memory_bytes'))}",
        f"Load at start:    {_load(environment.get('load_average_start'))}",
        f"Load at end:      {_load(environment.get('load_average_end'))}",
    ]
    packages = environment.get("packages") or {}
    installed = [f"{name} {version}" for name, version in packages.items() if version]
    if installed:
        lines.append(f"Packages:         {', '.join(installed)}")
    if options:
        lines.append(
            "Options:          "
            + ", ".join(
                f"{name}={_option(value)}"
                for name, value in options.items()
                if value not in (None, False, [], ())
            )
        )
    config = metadata.get("config") or {}
    if config.get("path"):
        lines.append(f"Configuration:    {config['path']}")
    described = metadata.get("databases") or {}
    for name in result.databases:
        if name in described:
            lines.append(f"Database:         {format_description(name, described[name])}")
    return lines


def _python(python: dict[str, Any]) -> str:
    known = [str(python[key]) for key in ("implementation", "version") if python.get(key)]
    return " ".join(known) or "unknown"


def _option(value: Any) -> str:
    if isinstance(value, list):
        return ",".join(map(str, value))
    if isinstance(value, dict):
        return str(value.get("level") or value.get("path") or "yes")
    return str(value)
