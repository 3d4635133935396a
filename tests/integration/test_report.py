"""``zodbshootout report`` of a saved history, opened in a real headless browser.

Debian's chromium (``apt-get install chromium``; etc/provision.sh installs it)
loads the page logging its console to stderr (any console message is an
error: the page has no script, so a message means a script ran where none
should, or a resource failed), dumps the DOM of a copy of the page after a
probe script measured what the browser laid out (tables, charts with their
loaded sizes, overflow on a phone's width), and takes a screenshot, checked
by its pixels.  Skips with the reason when chromium is not installed.
"""

from __future__ import annotations

import pathlib
import time

import pytest

from zodbshootout.outputfile import REPORT_MARKER as MARKER

from conftest import run_cli
from support import configs, shared_runs
from support.browser import browse, probe

pytestmark = pytest.mark.slow

#: A label that would run a script, or fail to load an image, if it were not escaped.
HOSTILE_LABEL = "<img src=missing.png onerror=console.error(1)>"

#: Inserted into a copy of the page: after the load event, the layout facts as JSON.
PROBE = """<script>
window.addEventListener("load", function () {
  var charts = Array.prototype.map.call(document.querySelectorAll("img.chart"), function (i) {
    var box = i.getBoundingClientRect();
    return {natural: i.naturalWidth, width: box.width, height: box.height};
  });
  var facts = {
    tables: document.querySelectorAll("table").length,
    rows: document.querySelectorAll("tbody tr").length,
    charts: charts,
    overflow: document.documentElement.scrollWidth - window.innerWidth,
    width: window.innerWidth,
    title: document.title
  };
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify(facts);
  document.body.appendChild(out);
});
</script>"""


def console_messages(tmp_path: pathlib.Path, page: pathlib.Path) -> list[str]:
    """What *page* wrote to the browser's console until it was loaded and idle.

    (``--dump-dom`` waits for the load event and, with a virtual time budget,
    for what runs after it; a screenshot may be taken before an image's error.)
    """
    done = browse(
        tmp_path, page, "--enable-logging=stderr", "--v=0", "--dump-dom",
        "--virtual-time-budget=5000",
    )  # fmt: skip
    return [line for line in done.stderr.splitlines() if ":CONSOLE" in line]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> pathlib.Path:
    """A history of three tiny FileStorage runs, one with a hostile label, as a report."""
    base = tmp_path_factory.mktemp("report")
    config = base / "fs.conf"
    config.write_text(configs.filestorage("fs"))
    runs = base / "runs"
    for label in ("first", HOSTILE_LABEL, "third"):
        done = run_cli(
            str(config), "-n", "20", "-c", "1", "-r", "2", "--threads", "-q",
            "--save-to", str(runs),
            "--label", label,
        )  # fmt: skip
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
        time.sleep(1.0)  # distinct start times
    out = base / "site"
    done = run_cli("report", str(runs), "-o", str(out))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert f"wrote {out / 'index.html'}" in done.stderr
    return out


def test_a_run_a_comparison_and_a_history_each_replace_the_last_report(report, tmp_path):
    runs = sorted((report.parent / "runs").glob("*.json"))
    out = tmp_path / "site"
    done = run_cli("report", str(runs[0]), "-o", str(out))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "index.html", "run.svg"]
    assert "<title>zodbshootout: first</title>" in (out / "index.html").read_text()
    done = run_cli("report", str(runs[0]), str(runs[2]), "-o", str(out), "-q")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert done.stderr == ""
    # The run's chart is gone: the directory holds one report, not two mixed.
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "comparison.svg", "index.html"]
    page = (out / "index.html").read_text()
    assert "<title>third against first</title>" in page
    assert "Geometric mean" in page
    assert sorted(p.name for p in report.iterdir()) == [MARKER, "history.svg", "index.html"]


def test_console_check_sees_a_broken_page(tmp_path):
    """The check below can fail: what the hostile label would do unescaped is seen."""
    broken = tmp_path / "broken.html"
    broken.write_text(f"<!DOCTYPE html><title>x</title>{HOSTILE_LABEL}")
    assert console_messages(tmp_path, broken)


def test_history_report_loads_without_console_errors(report, tmp_path):
    assert console_messages(tmp_path, report / "index.html") == []


@pytest.mark.parametrize("width", [1280, 390])
def test_history_report_lays_out_a_table_and_loaded_charts(report, tmp_path, width):
    facts = probe(tmp_path, report / "index.html", PROBE, width)
    assert facts["tables"] == 1
    assert facts["rows"] >= 8  # a row per phase of the tiny runs
    assert facts["charts"], "no chart on the page"
    for chart in facts["charts"]:
        assert chart["natural"] > 0, "a chart did not load"
        assert 0 < chart["width"] <= facts["width"]
        assert chart["height"] > 100
    # headless chromium keeps a window at least 500 px wide: about a phone's width.
    assert facts["width"] <= max(width, 500)
    # The page itself does not scroll sideways (wide tables scroll inside their box).
    assert facts["overflow"] <= 0
    assert facts["title"] == "zodbshootout: history of 3 runs"


def test_history_report_screenshot_shows_the_table_and_the_charts(report, tmp_path):
    from PIL import Image

    shot = tmp_path / "shot.png"
    browse(tmp_path, report / "index.html", f"--screenshot={shot}", "--window-size=1280,2400")
    image = Image.open(shot).convert("RGB")
    counts = {colour: count for count, colour in image.getcolors(image.width * image.height)}
    white = counts.get((255, 255, 255), 0)
    assert white < 0.97 * image.width * image.height, "the screenshot is blank"
    # The table's header background (#f3f3f3) and a chart's first line (matplotlib's
    # tab:blue, #1f77b4) are on screen.
    colours = set(counts)
    assert (0xF3, 0xF3, 0xF3) in colours
    assert any(abs(r - 0x1F) + abs(g - 0x77) + abs(b - 0xB4) < 12 for r, g, b in colours)


# --- A mix run's pages ------------------------------------------------------------------

#: After the load event: the chart's box on the page, and the links.
MIX_PROBE = """<script>
window.addEventListener("load", function () {
  var charts = Array.prototype.map.call(document.querySelectorAll("img.chart"), function (i) {
    var box = i.getBoundingClientRect();
    return {natural: i.naturalWidth, left: box.left + window.scrollX,
            top: box.top + window.scrollY, width: box.width, height: box.height};
  });
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({charts: charts,
    links: Array.prototype.map.call(document.querySelectorAll("a"), function (a) {
      return a.getAttribute("href"); })});
  document.body.appendChild(out);
});
</script>"""


@pytest.fixture(scope="module")
def mix_report(tmp_path_factory) -> pathlib.Path:
    """A short mix run on an embedded ZEO server and SQLite, as a report (its site/)."""
    pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")
    return shared_runs.zeo_and_sqlite_mix(tmp_path_factory).parent / "site"


def test_a_mix_report_is_its_tables_and_a_chart_page_linked_from_them(mix_report, tmp_path):
    assert sorted(p.name for p in mix_report.iterdir()) == [
        MARKER, "index.html", "mix.html", "mix.svg"
    ]  # fmt: skip
    assert console_messages(tmp_path, mix_report / "index.html") == []
    assert console_messages(tmp_path, mix_report / "mix.html") == []
    index = probe(tmp_path, mix_report / "index.html", PROBE, 1280)
    assert index["tables"] == 2  # a table per database
    assert index["rows"] == 2 * 3  # read, update, all
    assert "mix.html" in probe(tmp_path, mix_report / "index.html", MIX_PROBE, 1280)["links"]


def test_every_panel_of_the_mix_page_s_chart_is_drawn_in_the_browser(mix_report, tmp_path):
    """A screenshot of mix.html: in each panel's box (from the same figure, drawn here),
    pixels of a data line (a saturated colour: frames, text and grids are grey)."""
    import matplotlib.pyplot as plt
    import numpy
    from PIL import Image

    from zodbshootout.render.mix_plot import build_mix_figure
    from zodbshootout.results import file as resultfile
    from zodbshootout.results.mix import MixRun

    page = mix_report / "mix.html"
    facts = probe(tmp_path, page, MIX_PROBE, 1280)
    (chart,) = facts["charts"]
    assert chart["natural"] > 0, "the chart did not load"
    assert "index.html" in facts["links"]
    run = MixRun.of(resultfile.load(str(mix_report.parent / "mix.json")))
    figure = build_mix_figure(run)
    try:
        figure.canvas.draw()
        boxes = [axes.get_position() for axes in figure.axes]
        assert len(boxes) >= 3 + 5  # spectrum, latency, throughput, series panels
    finally:
        plt.close(figure)
    height = int(chart["top"] + chart["height"]) + 50
    shot = tmp_path / "mix.png"
    browse(tmp_path, page, f"--screenshot={shot}", f"--window-size=1280,{height}")
    image = Image.open(shot).convert("HSV")
    for box in boxes:
        left = chart["left"] + box.x0 * chart["width"]
        right = chart["left"] + box.x1 * chart["width"]
        top = chart["top"] + (1 - box.y1) * chart["height"]
        bottom = chart["top"] + (1 - box.y0) * chart["height"]
        panel = image.crop((int(left) + 3, int(top) + 3, int(right) - 3, int(bottom) - 3))
        pixels = numpy.asarray(panel)
        saturated = int(((pixels[:, :, 1] > 100) & (pixels[:, :, 2] > 80)).sum())
        assert saturated > 50, f"the panel at {box} shows no data line"
