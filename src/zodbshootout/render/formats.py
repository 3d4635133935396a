"""The output formats (``--format``): what a format renders, and the registry of formats.

A format is one module of render/ with a :class:`Format` subclass named
``FORMAT``: one pure method per shape of result, each returning lines of
text.  :data:`FORMATS` maps each ``--format`` name to its module, and every
subcommand with ``--format`` (the run, show, mix, compare, history,
cachesim) offers every format in it, so that a new format is one new module
and one line here (see docs/adding-a-format.rst).  The shapes' contents
(their rows, notes and documents) are in the shape modules (table, mix,
comparison, history, cachesim); a format only lays them out, its tables
with :mod:`zodbshootout.render.table_writer`.
"""

from __future__ import annotations

import abc
import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the shapes' records; only a format's methods need them
    from zodbshootout.results.cachesim import Simulation
    from zodbshootout.results.compare import Comparison
    from zodbshootout.results.history import HistoryRow, SavedRun
    from zodbshootout.results.maintenance import MaintenanceRun
    from zodbshootout.results.mix import MixRun
    from zodbshootout.results.mix_compare import MixComparison
    from zodbshootout.results.record import RunResult

#: Each ``--format`` name and the module of render/ whose ``FORMAT`` renders it,
#: in the order --help lists them after a subcommand's default.  Modules are
#: imported when chosen (rich, for one, only for the terminal table).
FORMATS: dict[str, str] = {
    "markdown": "zodbshootout.render.markdown",
    "csv": "zodbshootout.render.csv",
    "json": "zodbshootout.render.json",
    "table": "zodbshootout.render.terminal",
}


class Format(abc.ABC):
    """One output format: a pure function per shape of result, from records to lines.

    A line has no trailing newline; only the command line prints them.
    """

    def on_terminal(self, color: bool, width: int | None) -> Format:
        """This format as printed on a terminal of *width* characters (None: on a file
        or a pipe, no limit), in colours or not: itself, unless it draws for one."""
        return self

    @abc.abstractmethod
    def run(self, result: RunResult, aggregate: str) -> list[str]:
        """A classic run: a row per phase and object count, a column per database."""

    @abc.abstractmethod
    def mix(self, run: MixRun) -> list[str]:
        """A mix run: per database, a row per operation (throughput, latencies, errors)."""

    @abc.abstractmethod
    def comparisons(self, comparisons: Sequence[Comparison]) -> list[str]:
        """Classic runs, each changed one compared with the base cell by cell."""

    @abc.abstractmethod
    def mix_comparisons(self, comparisons: Sequence[MixComparison]) -> list[str]:
        """Mix runs, each changed one compared with the base per database and operation."""

    @abc.abstractmethod
    def history(
        self, runs: Sequence[SavedRun], rows: Sequence[HistoryRow], aggregate: str
    ) -> list[str]:
        """Classic runs side by side, oldest first: a row per cell, a column per run."""

    @abc.abstractmethod
    def mix_history(self, runs: Sequence[tuple[str, MixRun]]) -> list[str]:
        """Mix runs side by side, oldest first (each with its column's name)."""

    @abc.abstractmethod
    def simulation(self, simulation: Simulation) -> list[str]:
        """What cachesim found: per trace and cache size, each policy's hits and time."""

    def maintenance(self, run: MaintenanceRun) -> list[str]:
        """A maintain run: per database, size and operation, time, memory, bytes, objects.

        Aligned text with the footnotes under it, unless a format lays it out its own way.
        """
        from zodbshootout.render.maintenance import text_rows
        from zodbshootout.render.table_writer import aligned

        rows, notes = text_rows(run)
        lines = aligned(rows, right=range(2, len(rows[0])))
        lines.insert(1, "-" * len(lines[0]))
        return lines + (["", *notes] if notes else [])


def get_format(name: str) -> Format:
    """The format registered as *name*; a ValueError names the known ones."""
    module = FORMATS.get(name)
    if module is None:
        raise ValueError(f"unknown format {name!r}; choose from {', '.join(FORMATS)}")
    found = importlib.import_module(module).FORMAT
    if not isinstance(found, Format):
        raise TypeError(f"{module}.FORMAT is not a Format")
    return found


def format_names(default: str) -> list[str]:
    """Every format name, *default* first and then the registry's order (--format's choices)."""
    return [default, *(name for name in FORMATS if name != default)]
