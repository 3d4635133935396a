"""The chart of a maintain run: each operation's time against the database's size, log-log.

One small chart per operation, a line per database, points at the sizes
measured (``--sizes``); the label of a line with a fit carries its exponent
(time ∝ N^k) and interval, so that the slope read off the chart and the
number agree.  Operations measured at one size are points without a line.
"""

from __future__ import annotations

import math
from typing import Any

from zodbshootout.errors import UsageError
from zodbshootout.render.plot import _image_format, _pyplot, _save
from zodbshootout.results.maintenance import MaintenanceRun


def points_by_operation(run: MaintenanceRun) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """Per operation, per database: (objects, seconds) of each size measured, in size order."""
    found: dict[str, dict[str, list[tuple[int, float]]]] = {}
    for record in run.records:
        if record.seconds is not None and record.seconds > 0 and record.objects:
            lines = found.setdefault(record.operation, {})
            lines.setdefault(record.database, []).append((record.objects, record.seconds))
    for lines in found.values():
        for points in lines.values():
            points.sort()
    return found


def build_maintenance_figure(run: MaintenanceRun) -> Any:
    charts = points_by_operation(run)
    if not charts:
        raise UsageError("this maintain run has no operation measured at a known size to draw")
    fits = {(fit.database, fit.operation): fit for fit in run.fits}
    plt = _pyplot()
    columns = min(3, len(charts))
    rows = math.ceil(len(charts) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(5 * columns, 4 * rows), squeeze=False)
    for ax, (operation, lines) in zip(axes.flat, charts.items(), strict=False):
        for database, points in lines.items():
            fit = fits.get((database, operation))
            label = database
            if fit is not None:
                label += f" (k = {fit.exponent:.2f}, {fit.low:.2f} … {fit.high:.2f})"
            ax.plot(*zip(*points, strict=True), marker="o", label=label)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(operation)
        ax.set_xlabel("objects (N)")
        ax.set_ylabel("seconds")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    for ax in list(axes.flat)[len(charts) :]:
        ax.set_visible(False)
    figure.tight_layout()
    return figure


def plot_maintenance(run: MaintenanceRun, path: str) -> None:
    """Draw :func:`build_maintenance_figure` into *path* (.png, .svg, .pdf)."""
    _image_format(path)
    _save(build_maintenance_figure(run), path)
