"""What the subcommands on saved runs share: the runs' names, their aggregate, warnings."""

from __future__ import annotations

import os
import sys
from typing import Any

from zodbshootout.cli.say import emit
from zodbshootout.results.noise import busy_load
from zodbshootout.results.record import RunResult
from zodbshootout.results.stats import AGGREGATES


def saved_aggregate(result: RunResult, chosen: str | None) -> str:
    """The aggregate to show a saved run with: the user's choice, else the run's own."""
    if chosen:
        return chosen
    used = result.metadata.get("options", {}).get("aggregate")
    return used if used in AGGREGATES else "mean"


def warn(command: str, lines: list[str], quiet: bool) -> None:
    """Each of *lines* on stderr as a warning of *command*, unless *quiet*."""
    if quiet:
        return
    for line in lines:
        emit(f"zodbshootout {command}: warning: {line}", sys.stderr)


def run_names(paths: list[str], results: list[RunResult] | None = None) -> list[str]:
    """How each compared run is called in the output.

    Its label (``--label``) when every run has a different one, else its
    file's base name, else its path if two base names match.
    """
    labels = [str(r.metadata.get("label") or "") for r in results or []]
    if labels and all(labels) and len(set(labels)) == len(labels):
        return labels
    names = [os.path.basename(path) for path in paths]
    if len(set(names)) == len(names):
        return names
    if len(set(paths)) == len(paths):
        return list(paths)
    return [
        "base",
        *(f"changed{'' if len(paths) == 2 else index}" for index in range(1, len(paths))),
    ]


def format_differences(name: str, base_name: str, differences: list[tuple[str, Any, Any]]) -> str:
    """The warning for runs measured in different conditions, naming each differing fact."""
    facts = ", ".join(f"{fact} ({ours!r} vs {theirs!r})" for fact, ours, theirs in differences)
    return (
        f"{base_name} and {name} were measured in different conditions: {facts}; "
        "part of any difference may come from them"
    )


def busy_lines(base_name: str, base: RunResult, name: str, changed: RunResult) -> list[str]:
    """A warning per run of a comparison measured on a busy machine."""
    lines = []
    for run_name, result in ((base_name, base), (name, changed)):
        busy = busy_load(result.metadata)
        if busy:
            lines.append(
                f"{run_name} was measured on a busy machine ({busy}): a difference "
                "may come from the load rather than the change"
            )
    return lines


def is_single(paths: list[str]) -> bool:
    """One saved run (not a directory of them)."""
    return len(paths) == 1 and not os.path.isdir(paths[0])


def is_pair(paths: list[str]) -> bool:
    """Two saved runs, base and changed (no directory)."""
    return len(paths) == 2 and not any(os.path.isdir(path) for path in paths)
