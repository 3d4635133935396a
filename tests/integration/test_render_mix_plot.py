"""``zodbshootout plot`` of a real mix run: its series below latency and throughput.

One short run on an embedded ZEO server and on SQLite; the chart's panels
are checked against the series the result file holds (counted and summed
here, from the file), and every panel of the PNG against blankness.
"""

from __future__ import annotations

import pathlib

import pytest

from zodbshootout.results import file as resultfile
from zodbshootout.results.mix import MixRun

from conftest import run_cli
from support import shared_runs

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")
pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install -e '.[plot]')")

pytestmark = [pytest.mark.slow, pytest.mark.zeo]


@pytest.fixture(scope="module")
def mix_result(tmp_path_factory) -> pathlib.Path:
    """The short mix run on an embedded ZEO server and on SQLite (test_report's too)."""
    return shared_runs.zeo_and_sqlite_mix(tmp_path_factory)


def _run(path: pathlib.Path) -> MixRun:
    return MixRun.of(resultfile.load(str(path)))


def _panel_stddevs(figure) -> list[float]:
    """The pixels' standard deviation inside each axes of the drawn *figure*."""
    import numpy

    figure.canvas.draw()
    pixels = numpy.asarray(figure.canvas.buffer_rgba())[:, :, :3].astype(float)
    height = pixels.shape[0]
    spreads = []
    for axes in figure.axes:
        box = axes.get_window_extent()
        inside = pixels[
            int(height - box.y1) + 2 : int(height - box.y0) - 2, int(box.x0) + 2 : int(box.x1) - 2
        ]
        spreads.append(float(inside.std()))
    return spreads


def test_the_default_panels_are_the_series_the_run_sampled_every_one_drawn(mix_result):
    import matplotlib.pyplot as plt

    from zodbshootout.render.mix_plot import build_mix_figure

    run = _run(mix_result)
    zeo, sqlite = run.record("zeo"), run.record("sqlite")
    assert "zeo.commits" in zeo.series
    assert "client.1.rss" in sqlite.series
    figure = build_mix_figure(run)
    try:
        titles = [axes.get_title() for axes in figure.axes]
        # Spectrum, latency, throughput, then the series.
        assert titles[0].startswith("Latency by percentile")
        series = {title: axes for title, axes in zip(titles[3:], figure.axes[3:], strict=True)}
        assert set(series) == {
            "client: objects",  # pickle and client cache objects
            "client: loads/s",  # client cache hits (ZEO and SQLite), misses (SQLite)
            "client: MB",  # rss
            "zeo: loads/s",
            "zeo: transactions/s",  # commits
            "zeo: conflicts/s",
            "zeo: transactions",  # waiting
        }
        # A line per database and series each sampled.
        assert len(series["client: objects"].get_lines()) == 4
        assert len(series["client: MB"].get_lines()) == 2
        assert len(series["client: loads/s"].get_lines()) == 3
        assert len(series["zeo: transactions/s"].get_lines()) == 1
        # Every panel shares the time axis of latency and throughput.
        shared = figure.axes[1].get_shared_x_axes()
        assert all(shared.joined(figure.axes[1], axes) for axes in figure.axes[2:])
        # The rates add up to the counter's growth, read from the file here.
        commits = zeo.series["zeo.commits"]
        (line,) = series["zeo: transactions/s"].get_lines()
        times, values = line.get_data()
        grown = sum(
            rate * (t - before)
            for rate, t, before in zip(values, times, [commits.t[0], *times[:-1]], strict=True)
        )
        assert grown == pytest.approx(commits.delta())
        assert commits.delta() >= zeo.operations["update"].count > 0
        # The client's memory is both workers' together, in MB.
        rss = sqlite.series
        (sqlite_rss,) = [ln for ln in series["client: MB"].get_lines() if ln.get_color() == "C1"]
        first = (rss["client.0.rss"].values[0] + rss["client.1.rss"].values[0]) / 1e6
        assert sqlite_rss.get_data()[1][0] == pytest.approx(first)
        assert min(_panel_stddevs(figure)) > 1.0, "a panel is blank"
    finally:
        plt.close(figure)


def test_plot_draws_the_chosen_series_and_refuses_a_pattern_that_matches_none(mix_result, tmp_path):
    from PIL import Image, ImageStat

    chart = tmp_path / "zeo.png"
    done = run_cli("plot", str(mix_result), "-o", str(chart), "--series", "zeo.*")
    assert done.returncode == 0, done.stderr
    image = Image.open(chart).convert("L")
    assert ImageStat.Stat(image).stddev[0] > 10, "the chart is blank"
    default = tmp_path / "default.png"
    assert run_cli("plot", str(mix_result), "-o", str(default)).returncode == 0
    # 110 dpi, 4 + 2.3 inches per row below the spectrum: the ZEO server's nine series
    # make six panels (connections; loads/s; stores/s; commits and aborts; both conflicts;
    # active and waiting transactions), the default seven (see the test above).
    assert image.height == round((4.0 + 2.3 * (2 + 6)) * 110)
    assert Image.open(default).height == round((4.0 + 2.3 * (2 + 7)) * 110)
    done = run_cli("plot", str(mix_result), "-o", str(tmp_path / "x.png"), "--series", "nope")
    assert done.returncode == 2
    assert done.stderr.startswith("zodbshootout plot: error: --series nope matches no series")
    assert "zeo.commits" in done.stderr
    assert "Traceback" not in done.stderr
