"""``cachesim --plot FILE.png``: hit rate against cache size, one line per policy.

One chart per trace (or group of a run's traces), the cache size on a
logarithmic axis; a traced cache's own hit rate is a marker at its size.
Drawn and written as ``zodbshootout plot`` draws its charts (matplotlib,
an atomic write, the format from the file's extension).
"""

from __future__ import annotations

from typing import Any

from zodbshootout.render import plot as charts
from zodbshootout.results.cachesim import Simulation


def check_plot_target(path: str) -> None:
    """A UsageError now, before any replay, for a path that can't take a chart."""
    charts._image_format(path)  # the same check as zodbshootout plot's


def plot_simulation(simulation: Simulation, path: str) -> None:
    """Draw *simulation* into *path* (.png, .svg or .pdf)."""
    check_plot_target(path)
    charts._save(build_figure(simulation), path)


def build_figure(simulation: Simulation) -> Any:
    """The matplotlib Figure, one axes per group; the caller closes it."""
    plt = charts._pyplot()
    from matplotlib import ticker  # matplotlib is there: _pyplot said so

    count = len(simulation.groups)
    columns = min(3, count)
    rows = -(-count // columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(4.5 * columns, 3.4 * rows), squeeze=False, layout="constrained"
    )
    for index, group in enumerate(simulation.groups):
        axis = axes[index // columns][index % columns]
        sizes = [size / (1 << 20) for size in simulation.sizes_bytes]
        for policy in simulation.policies:
            rates = [
                100 * (group.simulated[(policy, size)].hit_rate or 0.0)
                for size in simulation.sizes_bytes
            ]
            axis.plot(sizes, rates, marker="o", label=policy)
        if group.actual is not None and group.actual_size_bytes:
            axis.plot(
                [group.actual_size_bytes / (1 << 20)],
                [100 * (group.actual.hit_rate or 0.0)],
                marker="*",
                markersize=12,
                linestyle="",
                color="black",
                label=f"actual ({group.kind or 'traced'})",
            )
        axis.set_xscale("log", base=2)
        axis.xaxis.set_major_formatter(ticker.FuncFormatter(lambda value, _pos: f"{value:g}"))
        axis.set_ylim(-2, 102)
        axis.set_title(group.name, fontsize=9)
        axis.set_xlabel("cache size (MiB)")
        axis.set_ylabel("hit rate (%)")
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=7)
    for index in range(count, rows * columns):
        axes[index // columns][index % columns].set_visible(False)
    return figure
