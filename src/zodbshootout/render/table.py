"""The table's content, independent of its format: rows of cells, footnotes.

Each format (csv, markdown, ...) lays out the same :class:`Table`, so they
can't disagree about a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from zodbshootout.precision import is_precise
from zodbshootout.render.insight import InsightRow, insight_rows, unmeasured_reason
from zodbshootout.render.labels import phase_label
from zodbshootout.render.notes import derived_notes
from zodbshootout.results import CellKey, RunResult
from zodbshootout.stats import Stats, cell_stats


@dataclass(frozen=True)
class Cell:
    """A measured rate, or the number of the footnote that says why there is none.

    A rate with a footnote is less precise than ``--precision`` asked for.
    """

    stats: Stats | None
    rate: float | None
    footnote: int | None = None


@dataclass
class Block:
    """The rows of one concurrency level."""

    concurrency: int
    rows: list[tuple[str, list[Cell]]] = field(default_factory=list)
    #: Cache hit rates, bytes/object and index keys/s (see zodbshootout.render.insight);
    #: markdown, table and json show them all, the classic csv only index keys/s.
    insight: list[InsightRow] = field(default_factory=list)


@dataclass
class Table:
    databases: list[str]
    blocks: list[Block]
    footnotes: list[str]
    notes: list[str]


def build_table(
    result: RunResult, aggregate: str = "mean", insight: tuple[str, ...] | None = None
) -> Table:
    """Lay out *result*: a block per concurrency level, a row per count and phase.

    *insight* names the kinds of insight rows to add (see render.insight);
    None: all of them.
    """
    footnotes: list[str] = []
    blocks = []
    for concurrency in result.concurrencies:
        block = Block(concurrency)
        rates: dict[CellKey, float | None] = {}
        for count in result.object_counts:
            for phase in result.phases:
                cells = []
                for database in result.databases:
                    key = CellKey(database, concurrency, count, phase)
                    cells.append(_cell(result, key, aggregate, footnotes))
                    rates[key] = cells[-1].rate
                block.rows.append((phase_label(phase, count), cells))
        block.insight = insight_rows(result, concurrency, rates, footnotes, insight)
        blocks.append(block)
    return Table(result.databases, blocks, footnotes, [*result.notes, *derived_notes(result)])


def _cell(result: RunResult, key: CellKey, aggregate: str, footnotes: list[str]) -> Cell:
    failure = result.failure_for(key)
    stats = None if failure else cell_stats(result, key)
    if stats is not None and math.isfinite(stats.aggregate(aggregate)):
        goal = result.metadata.get("stopping_rule", {}).get("precision")
        if not goal or is_precise(stats.rates, goal):
            return Cell(stats, stats.aggregate(aggregate))
        text = (
            f"not within ±{goal:.0%} of the mean (95% confidence) when --max-time ran out: "
            "a noisy machine, or a phase that needs more time (raise --max-time)"
        )
        return Cell(stats, stats.aggregate(aggregate), _footnote(footnotes, text))
    if stats is not None:
        # A duration the clock could not resolve: no rate to show.
        text = f"{key.database} (concurrency {key.concurrency}): too fast for the clock to time"
    else:
        text = unmeasured_reason(result, key)
    return Cell(None, None, _footnote(footnotes, text))


def _footnote(footnotes: list[str], text: str) -> int:
    """The number of footnote *text*, added if it is new."""
    if text not in footnotes:
        footnotes.append(text)
    return footnotes.index(text) + 1
