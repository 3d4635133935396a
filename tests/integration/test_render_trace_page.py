"""``trace-stats --html``: the analyzer's page, opened in a real headless browser.

A small recorded workload (a FileStorage, objects read with a skewed
popularity from two connections) analyzed by the command as a user runs it;
chromium loads the page with its console logged (any message is a failure:
the page has no script), a probe reports what it laid out (the tables, the
chart with its loaded size), and a screenshot must not be blank.
"""

from __future__ import annotations

import pathlib
import random

import pytest

from conftest import run_cli
from support.browser import browse, probe

pytestmark = pytest.mark.slow

PROBE = """<script>
window.addEventListener("load", function () {
  var charts = Array.prototype.map.call(document.querySelectorAll("img.chart"), function (i) {
    var box = i.getBoundingClientRect();
    return {natural: i.naturalWidth, width: box.width, height: box.height};
  });
  var out = document.createElement("pre");
  out.id = "probe";
  out.textContent = JSON.stringify({
    tables: document.querySelectorAll("table").length,
    headings: Array.prototype.map.call(document.querySelectorAll("h2"), function (h) {
      return h.textContent; }),
    charts: charts,
    overflow: document.documentElement.scrollWidth - window.innerWidth,
    width: window.innerWidth,
    title: document.title
  });
  document.body.appendChild(out);
});
</script>"""


def record_workload(directory: pathlib.Path) -> None:
    import transaction
    import ZODB
    from persistent.mapping import PersistentMapping
    from ZODB.FileStorage import FileStorage

    from zodbshootout.recording import record

    db = ZODB.DB(record(FileStorage(str(directory / "Data.fs")), str(directory / "app")))
    with db.transaction() as conn:
        for key in range(200):
            conn.root()[key] = PersistentMapping({"v": "x" * key})
    rng = random.Random(4)
    weights = [1 / (rank + 1) for rank in range(200)]
    managers = [transaction.TransactionManager() for _ in range(2)]
    conns = [db.open(manager) for manager in managers]
    for step in range(100):
        manager, conn = managers[step % 2], conns[step % 2]
        manager.begin()
        for key in rng.choices(range(200), weights, k=10):
            conn.root()[key]["v"]
        conn.root()[step % 7]["v"] = "y"  # both connections write the same few objects
        manager.commit()
        conn.cacheMinimize()
    for conn in conns:
        conn.close()
    db.close()


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> pathlib.Path:
    base = tmp_path_factory.mktemp("trace")
    record_workload(base)
    out = base / "site"
    done = run_cli("trace-stats", str(base), "--html", str(out))
    assert done.returncode == 0, done.stderr
    assert f"wrote {out / 'index.html'}" in done.stderr
    assert "conflict candidates: " in done.stdout
    return out / "index.html"


def test_the_page_lays_out_its_tables_and_its_chart(page, tmp_path):
    facts = probe(tmp_path, page, PROBE, 1280)
    assert facts["title"].startswith("zodbshootout trace-stats: 1 recorded trace file")
    assert facts["headings"][:4] == ["Counts", "Popularity", "Record sizes", "Time"]
    assert "Conflict candidates" in facts["headings"]
    assert facts["tables"] == 2  # sizes, conflict candidates
    [chart] = facts["charts"]
    assert chart["natural"] > 500
    assert (chart["width"], chart["height"]) > (500, 300)
    assert facts["overflow"] <= 0
    phone = probe(tmp_path, page, PROBE, 390)
    assert phone["charts"][0]["width"] <= phone["width"] < 1280  # the chart shrinks to fit
    assert phone["overflow"] <= 0


def test_the_page_logs_nothing_to_the_console(page, tmp_path):
    done = browse(
        tmp_path, page, "--enable-logging=stderr", "--v=0", "--dump-dom",
        "--virtual-time-budget=5000",
    )  # fmt: skip
    assert [line for line in done.stderr.splitlines() if ":CONSOLE" in line] == []


def test_the_screenshot_is_not_blank(page, tmp_path):
    from PIL import Image

    shot = tmp_path / "shot.png"
    browse(tmp_path, page, f"--screenshot={shot}", "--window-size=1280,2600")
    image = Image.open(shot).convert("RGB")
    counts = {colour: count for count, colour in image.getcolors(image.width * image.height)}
    white = counts.get((255, 255, 255), 0)
    assert white < 0.97 * image.width * image.height, "the screenshot is blank"
    # The chart's first series (matplotlib's tab:blue, #1f77b4) is on screen.
    assert any(abs(r - 0x1F) + abs(g - 0x77) + abs(b - 0xB4) < 12 for r, g, b in counts)
