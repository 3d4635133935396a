"""The chart of two runs compared: one bar per cell, the ratio of their rates.

Drawn for a phone first: the figure is narrow (its SVG is about 500 CSS
pixels wide, so a 390-pixel screen shrinks it by a quarter at most and
9-point text stays about 9 pixels tall), each cell's name and ratio are
written on a line of their own above its bar instead of beside it (a name
beside the bar would take half of a narrow chart), the axis covers every
bar's interval (the whiskers) with a little room and nothing more, tick
labels are thinned until none overlaps, and the caption is wrapped to the
figure's width.  The texts carry SVG ids (``gid``) so that a test in a
browser can find them: ``tick-N``, ``cell-N``, ``ratio-N``, ``title``,
``caption``.
"""

from __future__ import annotations

import math
import textwrap
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from zodbshootout.render.comparison import format_ratio
from zodbshootout.render.labels import phase_label
from zodbshootout.render.plot import _pyplot, _save
from zodbshootout.results.compare import ALPHA, FASTER, SLOWER

if TYPE_CHECKING:
    from zodbshootout.results.compare import CellComparison, Comparison

#: Bar colours: faster, slower (both significant), and a difference that may be noise.
FASTER_COLOUR, SLOWER_COLOUR, NOISE_COLOUR = "tab:green", "tab:red", "tab:gray"
#: The narrowest figure (inches; 72 SVG points each, 96/72 CSS pixels per point).
WIDTH_INCHES = 5.2
#: Each cell's height: its name line and its bar.
ROW_INCHES = 0.5
#: Font sizes (points) of the names and ticks, of the caption, of the title.
TEXT_POINTS, CAPTION_POINTS, TITLE_POINTS = 10.0, 9.0, 11.0
#: Generous average glyph widths (em) of the default font: any text (DejaVu Sans digits
#: are 0.64 em, capitals up to 0.77), and mostly lower-case prose (0.52 on average).
EM_WIDTH, PROSE_EM_WIDTH = 0.66, 0.6
#: Ratios worth a tick, above 1 (below 1 their inverses), nearest first.
TICK_FACTORS = (1.05, 1.1, 1.25, 1.5, 2.0, 3.0, 5.0, 10.0, 20.0, 50.0, 100.0)


@dataclass(frozen=True)
class RatioRow:
    """One cell as drawn: its name, its ratio in words, and its bar in log units."""

    name: str
    ratio_text: str
    log: float
    below: float  # how far the whisker reaches below the bar's end (log units, >= 0)
    above: float
    colour: str


def text_points(text: str, size: float) -> float:
    """About how wide *text* is in points at *size* (a little more, never less)."""
    return len(text) * size * EM_WIDTH


def plot_comparison(comparison: Comparison, path: str) -> None:
    """Draw the change of every cell measured in both runs into *path*."""
    _save(build_comparison_figure(comparison), path)


def ratio_rows(comparison: Comparison) -> list[RatioRow]:
    """Every cell measured in both runs, as drawn, in the comparison's order."""
    cells = comparison.measured_in_both
    several_levels = len({c.key.concurrency for c in cells}) > 1
    rows = []
    for c in cells:
        name = f"{c.key.database} · {phase_label(c.key.phase, c.key.object_count)}"
        name += f" · c={c.key.concurrency}" if several_levels else ""
        ratio = c.ratio or 1.0
        colour = {SLOWER: SLOWER_COLOUR, FASTER: FASTER_COLOUR}.get(c.verdict or "", NOISE_COLOUR)
        low, high = _interval_errors(c, ratio)
        rows.append(
            RatioRow(
                name,
                format_ratio(ratio) + (" *" if colour != NOISE_COLOUR else ""),
                math.log(ratio),
                math.log(ratio) - math.log(ratio - low),
                math.log(ratio + high) - math.log(ratio),
                colour,
            )
        )
    return rows


def build_comparison_figure(comparison: Comparison) -> Any:
    """Horizontal bars of changed ÷ base rate per cell, on a log axis through 1x.

    Green and red bars are the cells whose verdict is faster or slower
    (Welch's t-test, Holm's correction), grey ones are inconclusive.  The
    whisker is the ratio's interval at the level the cell was judged at
    (Holm's), so it crosses 1x exactly when the verdict is inconclusive; a
    cell measured once on a side has none.  The caller closes the figure.
    """
    plt = _pyplot()
    rows = ratio_rows(comparison)
    # Wide enough for the longest name line (name, a gap, the ratio).
    title = (
        f"{comparison.changed_name} against {comparison.base_name}: geometric mean "
        f"{format_ratio(comparison.geometric_mean)}"
    )
    needed = max([0.0, *(text_points(f"{r.name}    {r.ratio_text}", TEXT_POINTS) for r in rows)])
    width = max(WIDTH_INCHES, (needed + 24.0) / 72.0)
    caption = _caption(comparison, width)
    height = 1.0 + ROW_INCHES * len(rows) + 0.17 * caption.count("\n")
    figure = plt.figure(figsize=(width, height), layout="constrained")
    axes = figure.add_subplot()
    _draw_rows(axes, rows)
    low, high = ratio_limits(rows)
    axes.set_xlim(low, high)
    ticks = ratio_ticks(low, high, width * 72.0 - 16.0)
    axes.set_xticks([math.log(t) for t in ticks], [tick_text(t) for t in ticks])
    for index, label in enumerate(axes.get_xticklabels()):
        label.set_gid(f"tick-{index}")
        label.set_fontsize(TEXT_POINTS)
    axes.set_yticks([])
    axes.set_ylim(-0.6, len(rows) - 0.25)
    axes.axvline(0.0, color="black", linewidth=1)
    axes.grid(axis="x", alpha=0.4)
    axes.set_xlabel(caption, fontsize=CAPTION_POINTS, gid="caption")
    lines = textwrap.fill(title, _characters(width, TITLE_POINTS))
    axes.set_title(lines, fontsize=TITLE_POINTS, gid="title")
    return figure


def _draw_rows(axes: Any, rows: list[RatioRow]) -> None:
    """Each cell's bar and whisker, with its name (left) and ratio (right) on a line above."""
    from matplotlib.transforms import blended_transform_factory

    positions = list(range(len(rows)))[::-1]  # first cell on top
    lows, highs = [r.below for r in rows], [r.above for r in rows]
    axes.barh(
        positions,
        [r.log for r in rows],
        color=[r.colour for r in rows],
        xerr=[lows, highs] if any(lows) or any(highs) else None,
        capsize=3,
        height=0.34,
    )
    across = blended_transform_factory(axes.transAxes, axes.transData)
    for index, (position, row) in enumerate(zip(positions, rows, strict=True)):
        # On white, so that the 1x line and the grid don't cross the words.
        style: dict[str, Any] = {"transform": across, "va": "bottom", "fontsize": TEXT_POINTS}
        style["bbox"] = {"facecolor": "white", "edgecolor": "none", "pad": 1.0}
        axes.text(0.01, position + 0.24, row.name, ha="left", gid=f"cell-{index}", **style)
        axes.text(0.99, position + 0.24, row.ratio_text, ha="right", gid=f"ratio-{index}", **style)


def ratio_limits(rows: list[RatioRow]) -> tuple[float, float]:
    """The axis's ends (log units): every bar and whisker, 1x, and a twentieth more."""
    lowest = min([0.0, *(r.log - r.below for r in rows)])
    highest = max([0.0, *(r.log + r.above for r in rows)])
    # At least 0.8x to 1.25x, so that a run compared with itself still has an axis.
    lowest, highest = min(lowest, -math.log(1.25)), max(highest, math.log(1.25))
    room = (highest - lowest) / 20.0
    return lowest - room, highest + room


def tick_text(ratio: float) -> str:
    """``2x``, ``1.25x``, ``0.8x``, ``0.67x``: a tick's ratio, two digits below 1."""
    return f"{ratio:g}x" if ratio >= 1.0 else f"{ratio:.2g}x"


def ratio_ticks(low: float, high: float, axis_points: float) -> list[float]:
    """The ratios to tick between *low* and *high* (log units) on an axis *axis_points*
    wide: 1x, then outwards each side the next round ratio whose label clears the last."""
    per_unit = axis_points / (high - low)
    chosen = [1.0]
    for side in (1.0, -1.0):
        last = 1.0
        for factor in TICK_FACTORS:
            ratio = factor if side > 0 else 1.0 / factor
            if not low <= math.log(ratio) <= high:
                break
            gap = abs(math.log(ratio) - math.log(last)) * per_unit
            half_widths = (
                text_points(tick_text(ratio), TEXT_POINTS)
                + text_points(tick_text(last), TEXT_POINTS)
            ) / 2
            if gap >= half_widths + 6.0:
                chosen.append(ratio)
                last = ratio
    return sorted(chosen)


def _characters(width_inches: float, size: float) -> int:
    """How many characters of prose of *size* points a line of the figure's width holds."""
    return max(20, int((width_inches * 72.0 - 16.0) / (size * PROSE_EM_WIDTH)))


def _caption(comparison: Comparison, width_inches: float) -> str:
    """What the axis and the colours mean, wrapped to the figure's width."""
    parts = [
        f"rate of {comparison.changed_name} ÷ rate of {comparison.base_name} "
        "(log scale; right of 1x is faster).",
        f"* and colour: slower (red) or faster (green), Welch's t-test, Holm-corrected, "
        f"p < {ALPHA:g}; grey: inconclusive. Whiskers: the interval each cell was judged by.",
    ]
    width = _characters(width_inches, CAPTION_POINTS)
    return "\n".join(textwrap.fill(part, width) for part in parts)


def _interval_errors(cell: CellComparison, ratio: float) -> tuple[float, float]:
    """How far the whisker reaches below and above *ratio* (0, 0 when untested)."""
    interval = cell.ratio_interval()
    if interval is None or cell.base is None or cell.changed is None:
        return 0.0, 0.0
    centre = cell.changed.mean / cell.base.mean
    if not centre:
        return 0.0, 0.0
    # Around the shown ratio (the best rates' with --aggregate min), scaled alike;
    # a lower end at or below zero is drawn at a hundredth of the ratio.
    lowest = max(interval[0] / centre, 0.01)
    return ratio - ratio * lowest, ratio * interval[1] / centre - ratio
