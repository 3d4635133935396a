"""A toy output format, registered in one place: what a new format module looks like.

:func:`register` adds it to the registry (``render.formats.FORMATS``) for one
test; every subcommand with ``--format`` must then offer it and print with
it, without a line of theirs changed.  Each method names its shape and the
records it was given, so a test sees that the right records arrived.
"""

from __future__ import annotations

from zodbshootout.render.formats import FORMATS, Format

NAME = "toy"


class Toy(Format):
    """One line per output, naming the shape and what it holds."""

    def run(self, result, aggregate):
        return [f"toy run ({aggregate}): {', '.join(result.databases)}"]

    def mix(self, run):
        return [f"toy mix: {', '.join(record.database for record in run.records)}"]

    def comparisons(self, comparisons):
        return [f"toy comparison: {c.base_name} -> {c.changed_name}" for c in comparisons]

    def mix_comparisons(self, comparisons):
        return [f"toy mix comparison: {c.base_name} -> {c.changed_name}" for c in comparisons]

    def history(self, runs, rows, aggregate):
        return [f"toy history ({aggregate}): {', '.join(run.name for run in runs)}"]

    def mix_history(self, runs):
        return [f"toy mix history: {', '.join(name for name, _run in runs)}"]

    def simulation(self, simulation):
        return [f"toy simulation: {', '.join(group.name for group in simulation.groups)}"]


FORMAT = Toy()


def register(monkeypatch):
    """The one registry line a new format adds, for the length of one test."""
    monkeypatch.setitem(FORMATS, NAME, __name__)
