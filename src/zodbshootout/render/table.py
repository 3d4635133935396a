"""The table's content, independent of its format: rows of cells, footnotes.

Each format (csv, markdown, ...) lays out the same :class:`Table`, so they
can't disagree about a number.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from zodbshootout.render.insight import InsightRow, insight_rows, unmeasured_reason
from zodbshootout.render.labels import phase_label
from zodbshootout.render.notes import derived_notes
from zodbshootout.render.skew import skew_footnote
from zodbshootout.results.record import TABLE_ORDER, CellKey, RunResult
from zodbshootout.results.stats import Stats, is_precise, stats_of


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


def flagged_cells(table: Table) -> dict[int, list[str]]:
    """The measured cells with a footnote (less precise than asked, or skewed), by
    footnote number, each as ``database Row Label`` (and its concurrency if several)."""
    several = len(table.blocks) > 1
    found: dict[int, list[str]] = {}
    for block in table.blocks:
        for label, cells in block.rows:
            for database, cell in zip(table.databases, cells, strict=True):
                if cell.rate is not None and cell.footnote is not None:
                    where = f"{database} {label}"
                    if several:
                        where += f" (concurrency {block.concurrency})"
                    found.setdefault(cell.footnote, []).append(where)
    return found


def format_flagged_cells(table: Table) -> list[str]:
    """``show --verbose``: every measured cell a footnote applies to, one a line."""
    lines = []
    for number, cells in sorted(flagged_cells(table).items()):
        lines += ["", f"[{number}] applies to {len(cells)} measured cell(s):"]
        lines += [f"  {cell}" for cell in cells]
    return lines


def build_table(
    result: RunResult, aggregate: str = "mean", insight: tuple[str, ...] | None = None
) -> Table:
    """Lay out *result*: a block per concurrency level, a row per count and phase.

    *insight* names the kinds of insight rows to add (see render.insight);
    None: all of them.
    """
    footnotes: list[str] = []
    blocks: list[Block] = []
    rates: dict[CellKey, float | None] = {}
    first = result.databases[0] if result.databases else None
    for key, timings in result.cells(TABLE_ORDER):
        if not blocks or blocks[-1].concurrency != key.concurrency:
            _finish_block(result, blocks, rates, footnotes, insight)
            blocks.append(Block(key.concurrency))
        if key.database == first:  # a row starts with the first database's cell
            blocks[-1].rows.append((phase_label(key.phase, key.object_count), []))
        cell = _cell(result, key, stats_of(key, timings), aggregate, footnotes)
        rates[key] = cell.rate
        blocks[-1].rows[-1][1].append(cell)
    _finish_block(result, blocks, rates, footnotes, insight)
    return Table(result.databases, blocks, footnotes, [*result.notes, *derived_notes(result)])


def _finish_block(
    result: RunResult,
    blocks: list[Block],
    rates: dict[CellKey, float | None],
    footnotes: list[str],
    insight: tuple[str, ...] | None,
) -> None:
    """The insight rows of the last block, once its cells are laid out (footnotes in order)."""
    if blocks:
        block = blocks[-1]
        block.insight = insight_rows(result, block.concurrency, rates, footnotes, insight)


def _cell(
    result: RunResult, key: CellKey, stats: Stats | None, aggregate: str, footnotes: list[str]
) -> Cell:
    if result.failure_for(key):
        stats = None
    if stats is not None and math.isfinite(stats.aggregate(aggregate)):
        goal = result.metadata.get("stopping_rule", {}).get("precision")
        texts = [] if not goal or is_precise(stats.rates, goal) else [_imprecise(goal)]
        texts += [text for text in [skew_footnote(result, key)] if text]
        short = _fewer_repetitions(result, key, len(stats.rates))
        texts = [short, *texts] if short else texts
        if not texts:
            return Cell(stats, stats.aggregate(aggregate))
        return Cell(stats, stats.aggregate(aggregate), _footnote(footnotes, "; ".join(texts)))
    if stats is not None:
        # A duration the clock could not resolve: no rate to show.
        text = f"{key.database} (concurrency {key.concurrency}): too fast for the clock to time"
    else:
        text = unmeasured_reason(result, key)
    return Cell(None, None, _footnote(footnotes, text))


def _imprecise(goal: float) -> str:
    return (
        f"not within ±{goal:.0%} of the mean (95% confidence) when --max-time ran out: "
        "a noisy machine, or a phase that needs more time (raise --max-time)"
    )


def _fewer_repetitions(result: RunResult, key: CellKey, measured: int) -> str | None:
    """What to say of a cell measured in fewer repetitions than the run asked for."""
    rule = result.metadata.get("stopping_rule", {})
    asked = rule.get("min_repetitions") if isinstance(rule, dict) else None
    asked = asked if isinstance(asked, int) and asked > 0 else result.repetitions
    if measured >= asked:
        return None
    why = ": the run was interrupted" if result.interrupted else ""
    return (
        f"{key.database} (concurrency {key.concurrency}): measured in {measured} of "
        f"{asked} repetitions{why}"
    )


def _footnote(footnotes: list[str], text: str) -> int:
    """The number of footnote *text*, added if it is new."""
    if text not in footnotes:
        footnotes.append(text)
    return footnotes.index(text) + 1
