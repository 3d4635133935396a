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
    with pytest.raises(UsageError, match=r"pip install '\.\[plot\]'"):
        plot_result(sample_result(), str(tmp_path / "chart.png"))


def test_comparison_chart_has_a_bar_per_cell_coloured_by_verdict():
    import matplotlib.pyplot as plt
    from matplotlib.colors import to_hex

    from zodbshootout.render.ratio_chart import build_comparison_figure
    from zodbshootout.results.compare import compare_results

    changed = sample_result(scale={"add": 0.5, "cold": 1.1})
    comparison = compare_results(sample_result(), changed, base_name="a", changed_name="b")
    figure = build_comparison_figure(comparison)
    try:
        (axes,) = figure.axes
        # Each cell's name and ratio on a line above its bar (no names beside the bars).
        texts = {t.get_gid(): t.get_text() for t in axes.texts}
        assert texts["cell-0"] == "postgresql · Add 1000 Objects"
        assert [texts["ratio-0"], texts["ratio-1"]] == ["2.00x faster *", "1.10x slower *"]
        assert axes.get_yticklabels() == []
        bars = [p for p in axes.patches if p.get_height() == pytest.approx(0.34)]
        assert len(bars) == 5  # cells measured in both runs
        colours = [to_hex(bar.get_facecolor()) for bar in bars]
        green, red, grey = (to_hex(c) for c in ("tab:green", "tab:red", "tab:gray"))
        # add faster, cold slower (both significant), steamin unchanged.
        assert colours == [green, red, grey, green, red]
        assert "geometric mean 1.27x faster" in axes.get_title()
    finally:
        plt.close(figure)


def test_history_chart_has_a_line_per_database_over_the_runs():
    import matplotlib.pyplot as plt

    from zodbshootout.render.plot import build_history_figure
    from zodbshootout.results.history import SavedRun, history_cells

    runs = []
    for index, scale in enumerate((1.0, 0.9, 0.5)):
        result = sample_result(scale={"add": scale})
        result.metadata.update(started=1_700_000_000 + index, label=f"run{index}")
        runs.append(SavedRun(f"run{index}.json", result))
    figure = build_history_figure(runs, history_cells(runs))
    try:
        assert [a.get_title() for a in figure.axes] == ["add", "cold", "steamin"]
        add = figure.axes[0]
        assert [t.get_text() for t in add.get_xticklabels()] == ["run0", "run1", "run2"]
        series = {container.get_label(): container for container in add.containers}
        assert set(series) == {"postgresql", "zeo_fs"}
        data_line = series["postgresql"].lines[0]
        assert list(data_line.get_xdata()) == [0, 1, 2]
        ys = list(data_line.get_ydata())
        assert ys[2] == pytest.approx(2 * ys[0])
    finally:
        plt.close(figure)


def test_a_history_figure_never_mixes_log_and_linear_axes():
    """add changes little, steamin is 1000x faster: both charts share one (log) scale."""
    import matplotlib.pyplot as plt

    from zodbshootout.render.plot import build_history_figure
    from zodbshootout.results.history import SavedRun, history_cells

    runs = []
    for index, scale in enumerate((1.0, 0.9)):
        result = sample_result(scale={"add": scale})
        result.metadata.update(started=1_700_000_000 + index)
        runs.append(SavedRun(f"run{index}.json", result))
    figure = build_history_figure(runs, history_cells(runs))
    try:
        assert {a.get_yscale() for a in figure.axes} == {"log"}
    finally:
        plt.close(figure)
    # Without steamin no chart spans ten times: every one is linear.
    for run in runs:
        run.result.phases = ["add", "cold"]
    figure = build_history_figure(runs, history_cells(runs))
    try:
        assert {a.get_yscale() for a in figure.axes} == {"linear"}
    finally:
        plt.close(figure)


def test_open_counts_connections_per_second_in_every_chart():
    import matplotlib.pyplot as plt

    from zodbshootout.render.plot import build_history_figure
    from zodbshootout.results.history import SavedRun, history_cells
    from zodbshootout.results.record import Measurement, PhaseTiming

    result = sample_result()
    result.phases = [*result.phases, "open"]
    result.object_counts = [100, 1000]
    result.measurements += [
        Measurement("postgresql", 2, count, 1, PhaseTiming("open", worker, 0.01, count, 0, 0, 0))
        for count in (100, 1000)
        for worker in (0, 1)
    ]
    figure = build_figure(result)
    try:
        bars = figure.axes[0]
        assert [t.get_text() for t in bars.get_xticklabels()][-1] == "open\n(connections/s)"
        sweeps = {a.get_title(): a.get_ylabel() for a in figure.axes[1:]}
        assert sweeps == {
            "add": "objects/s",
            "cold": "objects/s",
            "steamin": "objects/s",
            "open": "connections/s",
        }
    finally:
        plt.close(figure)
    runs = [SavedRun(f"run{index}.json", result) for index in range(2)]
    figure = build_history_figure(runs, history_cells(runs))
    try:
        units = {a.get_title(): a.get_ylabel() for a in figure.axes}
        assert units["open"] == "connections/s"
        assert units["add"] == "objects/s"
    finally:
        plt.close(figure)


def test_series_of_a_classic_run_is_refused_in_one_line(tmp_path, capsys):
    from zodbshootout.cli.entry import main
    from zodbshootout.results import file as resultfile

    saved = str(tmp_path / "run.json")
    resultfile.save(sample_result(), saved)
    for command in ("plot", "report"):
        out = str(tmp_path / ("x.png" if command == "plot" else "site"))
        assert main([command, saved, "-o", out, "--series", "zeo.*"]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1
        assert "--series chooses a mix run's series; this is a classic run" in err
