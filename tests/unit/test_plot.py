"""plot: one bar group per phase on a log axis; a PNG; a clear message without matplotlib."""

import sys

import pytest
from sample_run import sample_result

from zodbshootout.errors import UsageError

pytest.importorskip("matplotlib", reason="matplotlib (the [plot] extra) is not installed")

from zodbshootout.render.plot import build_figure, plot_result


def test_bar_chart_has_one_group_per_phase_on_a_log_axis():
    import matplotlib.pyplot as plt

    figure = build_figure(sample_result())
    try:
        (axes,) = figure.axes
        assert [t.get_text() for t in axes.get_xticklabels()] == ["add", "cold", "steamin"]
        assert axes.get_yscale() == "log"
        # One bar per measured cell: postgresql 3, zeo_fs 2 (steamin failed).
        assert len(axes.patches) == 5
        assert [t.get_text() for t in axes.get_legend().get_texts()] == ["postgresql", "zeo_fs"]
    finally:
        plt.close(figure)


def test_several_counts_add_a_chart_per_phase():
    import matplotlib.pyplot as plt

    result = sample_result()
    result.object_counts = [100, 1000]
    figure = build_figure(result)
    try:
        assert [a.get_title() for a in figure.axes[1:]] == ["add", "cold", "steamin"]
        assert figure.axes[1].get_xlabel() == "objects (c=2)"
    finally:
        plt.close(figure)


def test_writes_a_png(tmp_path):
    path = tmp_path / "chart.png"
    plot_result(sample_result(), str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unknown_image_type_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match=r"end it in \.png"):
        plot_result(sample_result(), str(tmp_path / "chart.bmpx"))


def test_missing_matplotlib_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    with pytest.raises(UsageError, match=r"pip install '\.\[plot\]' in a checkout"):
        plot_result(sample_result(), str(tmp_path / "chart.png"))
