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
from support import configs
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
