"""``zodbshootout report`` of an ``--rtt`` ladder: its chart against the RTT, in a browser.

Real short ladders (a classic run and a mix run) on an embedded ZEO server
and a FileStorage (no server: measured once, left out of the chart), made
into reports and opened in headless chromium (support.browser): the page
loads without console messages, its charts load, and every panel of the
RTT chart -- located from the same figure drawn here -- shows pixels of a
data line.  Skips with the reason when chromium is not installed.
"""

from __future__ import annotations

import pathlib

import pytest

from zodbshootout.outputfile import REPORT_MARKER as MARKER

from support import shared_runs
from support.browser import browse, probe

pytest.importorskip("matplotlib", reason="matplotlib is not installed (pip install -e '.[plot]')")

pytestmark = [pytest.mark.slow, pytest.mark.zeo]

#: After the load event: each chart's source, natural width and box on the page.
CHARTS = """<script>
window.addEventListener("load", function () {
  var charts = Array.prototype.map.call(document.querySelectorAll("img.chart"), function (i) {
    var box = i.getBoundingClientRect();
    return {src: i.getAttribute("src"), natural: i.naturalWidth,
            left: box.left + window.scrollX, top: box.top + window.scrollY,
            width: box.width, height: box.height};
  });
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({charts: charts, title: document.title});
  document.body.appendChild(out);
});
</script>"""


@pytest.fixture(scope="module")
def classic(tmp_path_factory) -> pathlib.Path:
    return shared_runs.rtt_ladder(tmp_path_factory, "classic")


@pytest.fixture(scope="module")
def mix(tmp_path_factory) -> pathlib.Path:
    pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")
    return shared_runs.rtt_ladder(tmp_path_factory, "mix")


def _check_drawn(ladder: pathlib.Path, tmp_path: pathlib.Path, titles: list[str]) -> None:
    """The report's page: no console message, its charts loaded, and in each panel of
    the RTT chart (*titles*, located from the same figure drawn here) a data line."""
    import matplotlib.pyplot as plt
    import numpy
    from PIL import Image

    from zodbshootout.render.rtt_plot import build_rtt_figure
    from zodbshootout.results import file as resultfile

    page = ladder.parent / "site" / "index.html"
    assert "Against the round trip" in page.read_text()
    logged = browse(
        tmp_path, page, "--enable-logging=stderr", "--v=0", "--dump-dom",
        "--virtual-time-budget=5000",
    )  # fmt: skip
    assert [line for line in logged.stderr.splitlines() if ":CONSOLE" in line] == []
    charts = {chart["src"]: chart for chart in probe(tmp_path, page, CHARTS, 1280)["charts"]}
    assert all(chart["natural"] > 0 for chart in charts.values()), "a chart did not load"
    chart = charts["rtt.svg"]
    figure = build_rtt_figure(resultfile.load(str(ladder)))
    try:
        figure.canvas.draw()
        boxes = [axes.get_position() for axes in figure.axes]
        assert [axes.get_title() for axes in figure.axes] == titles
    finally:
        plt.close(figure)
    shot = tmp_path / "rtt.png"
    height = int(chart["top"] + chart["height"]) + 50
    browse(tmp_path, page, f"--screenshot={shot}", f"--window-size=1280,{height}")
    image = Image.open(shot).convert("HSV")
    for box in boxes:
        left = chart["left"] + box.x0 * chart["width"]
        right = chart["left"] + box.x1 * chart["width"]
        top = chart["top"] + (1 - box.y1) * chart["height"]
        bottom = chart["top"] + (1 - box.y0) * chart["height"]
        panel = image.crop((int(left) + 3, int(top) + 3, int(right) - 3, int(bottom) - 3))
        pixels = numpy.asarray(panel)
        # Frames, text and grids are grey; a data line is a saturated colour.
        saturated = int(((pixels[:, :, 1] > 100) & (pixels[:, :, 2] > 80)).sum())
        assert saturated > 50, f"the panel at {box} shows no data line"


def test_a_classic_ladder_s_report_draws_the_ladder_in_every_panel(classic, tmp_path):
    site = classic.parent / "site"
    assert sorted(p.name for p in site.iterdir()) == [MARKER, "index.html", "rtt.svg", "run.svg"]
    # A panel per phase, each with one line: the one database that has a server.
    _check_drawn(classic, tmp_path, ["cold", "prefetch", "steamin"])


def test_a_mix_ladder_s_report_draws_throughput_and_p99_against_the_rtt(mix, tmp_path):
    site = mix.parent / "site"
    names = sorted(p.name for p in site.iterdir())
    assert names == [MARKER, "index.html", "mix.html", "mix.svg", "rtt.svg"]
    _check_drawn(mix, tmp_path, ["throughput", "p99 latency"])
