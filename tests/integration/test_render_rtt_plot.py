"""``zodbshootout plot`` of an ``--rtt`` ladder: throughput (and p99) against the RTT seen.

Real short ladders on an embedded ZEO server (with a FileStorage, which has
no server and is left out of the chart); the chart's lines are checked
against the rows and RTTs the result file holds, and its pixels against
blankness.
"""

from __future__ import annotations

import pathlib

import pytest

from zodbshootout.results import file as resultfile
from zodbshootout.results.record import CellKey
from zodbshootout.results.stats import cell_stats

from conftest import run_cli
from support import shared_runs

pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install -e '.[plot]')")

pytestmark = [pytest.mark.slow, pytest.mark.zeo]

STEPS = ("zeo@0ms", "zeo@2ms", "zeo@5ms")


@pytest.fixture(scope="module")
def classic(tmp_path_factory) -> pathlib.Path:
    return shared_runs.rtt_ladder(tmp_path_factory, "classic")


@pytest.fixture(scope="module")
def mix(tmp_path_factory) -> pathlib.Path:
    pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")
    return shared_runs.rtt_ladder(tmp_path_factory, "mix")


def _lines(axes) -> dict[str, tuple[list[float], list[float]]]:
    return {
        line.get_label(): tuple(list(values) for values in line.get_data())
        for line in axes.get_lines()
    }


def _measured_ms(result) -> list[float]:
    rows = result.metadata["rtt"]["rows"]
    return [rows[name]["proxied_seconds"]["zeo"] * 1e3 for name in STEPS]


def _non_blank(path: pathlib.Path) -> None:
    from PIL import Image, ImageStat

    image = Image.open(path).convert("L")
    assert ImageStat.Stat(image).stddev[0] > 10, "the chart is blank"


def test_a_classic_ladder_is_a_chart_per_phase_against_the_rtt_measured(classic, tmp_path):
    import matplotlib.pyplot as plt

    from zodbshootout.render.rtt_plot import build_rtt_figure

    result = resultfile.load(str(classic))
    figure = build_rtt_figure(result)
    try:
        charts = {axes.get_title(): _lines(axes) for axes in figure.axes}
        assert set(charts) == {"cold", "prefetch", "steamin"}
        for phase, lines in charts.items():
            # One line: ZEO's; the FileStorage has no RTT.
            (xs, ys) = lines["zeo"]
            assert list(lines) == ["zeo"]
            assert xs == pytest.approx(sorted(_measured_ms(result)))
            rates = [cell_stats(result, CellKey(n, 1, 30, phase)).mean for n in STEPS]
            assert ys == pytest.approx(
                [r for _x, r in sorted(zip(_measured_ms(result), rates, strict=True))]
            )
        # The delay is what the chart shows: a cold read slows down as the RTT grows.
        cold = charts["cold"]["zeo"][1]
        assert cold[0] > cold[-1]
    finally:
        plt.close(figure)
    chart = tmp_path / "rtt.png"
    done = run_cli("plot", str(classic), "-o", str(chart))
    assert done.returncode == 0, done.stderr
    _non_blank(chart)


def test_a_mix_ladder_is_throughput_and_p99_against_the_rtt_measured(mix, tmp_path):
    import matplotlib.pyplot as plt

    from zodbshootout.render.rtt_plot import build_rtt_figure
    from zodbshootout.results.mix import MixRun
    from zodbshootout.results.mix_stats import summarize

    result = resultfile.load(str(mix))
    run = MixRun.of(result)
    figure = build_rtt_figure(result)
    try:
        throughput, p99 = (_lines(axes) for axes in figure.axes)
        # A line per operation and all of them together.
        assert sorted(throughput) == ["zeo all", "zeo read", "zeo update"]
        xs, ys = throughput["zeo all"]
        assert xs == pytest.approx(sorted(_measured_ms(result)))
        alls = {n: summarize(run.record(n))[-1] for n in STEPS}
        by_x = dict(zip(_measured_ms(result), STEPS, strict=True))
        assert ys == pytest.approx([alls[by_x[x]].per_second for x in sorted(by_x)])
        assert p99["zeo all"][1] == pytest.approx(
            [alls[by_x[x]].percentiles_ms[99.0] for x in sorted(by_x)]
        )
    finally:
        plt.close(figure)
    chart = tmp_path / "rtt.png"
    done = run_cli("plot", str(mix), "-o", str(chart))
    assert done.returncode == 0, done.stderr
    _non_blank(chart)
    # --series draws the time axis of every row instead.
    series = tmp_path / "series.png"
    done = run_cli("plot", str(mix), "-o", str(series), "--series", "zeo.commits")
    assert done.returncode == 0, done.stderr
    _non_blank(series)
