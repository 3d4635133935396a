"""Runs saved over time (``--save-to DIR``): naming them, finding them, lining their cells up.

``--save-to`` names each file after the run's start time (UTC) and label,
``20261123T162000Z-my-branch.json``, so that a directory listing is already
in order.  :func:`load_runs` reads a directory's result files (or the files
given) and orders them by the start time recorded inside, and
:func:`history_cells` lines up the cells of every run, each cell keeping
its statistics per run (None where a run did not measure it).
"""

from __future__ import annotations

import datetime
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass

from zodbshootout.errors import UsageError
from zodbshootout.results import file as resultfile
from zodbshootout.results.record import DATABASE_ORDER, CellKey, RunResult
from zodbshootout.results.stats import Stats, cell_stats


def saved_file_name(started_seconds: float, label: str | None) -> str:
    """``20261123T162000Z-LABEL.json``: sorts by time; the label made safe for a file name."""
    moment = datetime.datetime.fromtimestamp(started_seconds, datetime.timezone.utc)
    name = moment.strftime("%Y%m%dT%H%M%SZ")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", label or "").strip("-.")[:60]
    return f"{name}-{slug}.json" if slug else f"{name}.json"


def unused_path(directory: str, file_name: str) -> str:
    """*file_name* in *directory*, with ``-2``, ``-3``... added when it is already taken."""
    stem, extension = os.path.splitext(file_name)
    path = os.path.join(directory, file_name)
    number = 2
    while os.path.exists(path):
        path = os.path.join(directory, f"{stem}-{number}{extension}")
        number += 1
    return path


@dataclass(frozen=True)
class SavedRun:
    """A result file of a history and the name its column gets."""

    path: str
    result: RunResult

    @property
    def started(self) -> float:
        started = self.result.metadata.get("started")
        return float(started) if isinstance(started, (int, float)) else 0.0

    @property
    def label(self) -> str | None:
        label = self.result.metadata.get("label")
        return str(label) if label else None

    @property
    def name(self) -> str:
        """The run's label, or else its start time (UTC, to the minute), or its file name."""
        if self.label:
            return self.label
        if self.started:
            moment = datetime.datetime.fromtimestamp(self.started, datetime.timezone.utc)
            return moment.strftime("%Y-%m-%d %H:%M")
        return os.path.basename(self.path)


def load_runs(paths: list[str]) -> tuple[list[SavedRun], list[str]]:
    """The runs in *paths* (files, or directories of ``*.json``), oldest first, and warnings.

    A file named on the command line must be a result file (else UsageError);
    a JSON file in a directory that isn't one (a pyperf export, say) is
    skipped with a warning.
    """
    runs: list[SavedRun] = []
    warnings: list[str] = []
    for path in paths:
        if os.path.isdir(path):
            names = sorted(name for name in os.listdir(path) if name.endswith(".json"))
            for name in names:
                member = os.path.join(path, name)
                try:
                    runs.append(SavedRun(member, resultfile.load(member)))
                except UsageError as e:
                    warnings.append(f"skipped {member}: {e}")
        else:
            runs.append(SavedRun(path, resultfile.load(path)))
    if not runs:
        raise UsageError(f"no saved runs in {', '.join(paths)} (save some with --save-to DIR)")
    runs.sort(key=lambda run: run.started)
    return runs, warnings


def column_names(runs: Sequence[SavedRun]) -> list[str]:
    """Each run's name, numbered where two runs would otherwise share one."""
    names = [run.name for run in runs]
    return [
        f"{name} #{index}" if names.count(name) > 1 else name for index, name in enumerate(names, 1)
    ]


@dataclass(frozen=True)
class HistoryRow:
    """One cell across the runs: its statistics in each run, None where it was not measured."""

    key: CellKey
    stats: list[Stats | None]


def history_cells(runs: list[SavedRun]) -> list[HistoryRow]:
    """One row per cell any run measured, in the order the runs first had them."""
    keys: dict[CellKey, None] = {}
    for run in runs:
        for key in run.result.cell_keys(DATABASE_ORDER):
            keys.setdefault(key)
    rows = []
    for key in keys:
        stats = [cell_stats(run.result, key) for run in runs]
        if any(s is not None for s in stats):
            rows.append(HistoryRow(key, stats))
    return rows
