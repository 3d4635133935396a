"""``zodbshootout report``: the static page of a run, a comparison or a history.

These check the page's text and the directory rules; tests/integration/test_report.py
loads the page in a real browser.
"""

from __future__ import annotations

import dataclasses
import html.parser
import os

import pytest
from sample_run import sample_result

from zodbshootout.cli.entry import main
from zodbshootout.errors import UsageError
from zodbshootout.outputfile import REPORT_MARKER, check_report_directory
from zodbshootout.render.html import render_page, run_report
from zodbshootout.results import file as resultfile

HOSTILE = '<script>alert("x")</script>'


class _Elements(html.parser.HTMLParser):
    """The tags of a page and its text, as a browser's parser sees them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def parse(page: str) -> _Elements:
    parser = _Elements()
    parser.feed(page)
    return parser


def saved(tmp_path, name: str = "run.json", **scale: float) -> str:
    path = str(tmp_path / name)
    resultfile.save(sample_result(scale=scale), path)
    return path


def test_page_has_a_viewport_a_table_per_level_and_the_footnote():
    result = sample_result()
    page = parse(render_page(run_report(result, "mean", "run.json", charts=False)))
    tags = [tag for tag, _ in page.tags]
    assert ("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}) in (
        page.tags
    )
    assert tags.count("table") == len(result.concurrencies)
    text = " ".join(page.text)
    assert "Read 1000 Cold Objects" in text
    assert "n/a [1]" in text  # zeo_fs steamin failed; its reason is the footnote
    assert "worker 1 died (killed by SIGKILL)" in text


def test_labels_and_notes_from_a_result_file_are_escaped():
    result = sample_result()
    result.metadata["label"] = HOSTILE
    result.notes.append(f"a note {HOSTILE}")
    result.databases[0] = "<b>pg</b>"
    result.measurements[:] = [
        dataclasses.replace(m, database="<b>pg</b>") if m.database == "postgresql" else m
        for m in result.measurements
    ]
    page = render_page(run_report(result, "mean", "run.json", charts=False))
    assert "<script" not in page
    assert "<b>" not in page
    parsed = parse(page)
    assert all(tag not in ("script", "b") for tag, _ in parsed.tags)
    text = "".join(parsed.text)
    assert HOSTILE in text  # shown as text, not run
    assert "<b>pg</b>" in text


def test_busy_machine_is_a_warning_on_the_page():
    result = sample_result()
    result.metadata["environment"] = {"cpu_count": 2}
    result.metadata["load_average"] = {"postgresql": {"before": 0.5, "after": 7.5}}
    page = parse(render_page(run_report(result, "mean", "run.json", charts=False)))
    assert ("div", {"class": "warning", "role": "note"}) in page.tags
    assert any("machine was busy: load average 7.5 on 2 cores" in t for t in page.text)


def test_report_directory_rules(tmp_path):
    check_report_directory(str(tmp_path / "new"))  # a new name
    check_report_directory(str(tmp_path))  # empty
    (tmp_path / REPORT_MARKER).write_text("zodbshootout report\nindex.html\n")
    check_report_directory(str(tmp_path))  # an earlier report's
    foreign = tmp_path / "home"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine")
    web_root = tmp_path / "www"
    web_root.mkdir()
    (web_root / "index.html").write_text("someone else's page")
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / REPORT_MARKER).symlink_to(tmp_path / REPORT_MARKER)
    refusals = {
        "-": "a report is a directory of files",
        str(foreign): f"holds files and no {REPORT_MARKER}",
        str(web_root): f"holds files and no {REPORT_MARKER}",
        str(linked): f"holds files and no {REPORT_MARKER}",
        str(foreign / "notes.txt"): "it is a regular file",
        str(tmp_path / "missing" / "report"): "does not exist",
    }
    (tmp_path / "link").symlink_to(tmp_path)
    refusals[str(tmp_path / "link")] = "it is a symbolic link"
    for path, reason in refusals.items():
        with pytest.raises(UsageError, match=reason):
            check_report_directory(path)


def _contents(directory) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


def test_a_web_root_with_its_own_index_html_is_refused_and_left_byte_for_byte(tmp_path, capsys):
    """Issue 35, 1: an index.html and charts of the same names are someone else's files."""
    run = saved(tmp_path)
    site = tmp_path / "www"
    site.mkdir()
    (site / "index.html").write_bytes(b"<html>my own page</html>\n")
    (site / "run.svg").write_bytes(b"<svg>my logo</svg>")
    (site / "history.svg").write_bytes(b"<svg>my history</svg>")
    before = _contents(site)
    assert main(["report", run, "-o", str(site)]) == 2
    error = capsys.readouterr().err
    assert len(error.strip().splitlines()) == 1
    assert f"refusing to write a report into {site}" in error
    assert _contents(site) == before


def test_an_earlier_report_is_replaced_and_only_the_files_it_wrote_removed(tmp_path):
    run = saved(tmp_path)
    other = saved(tmp_path, "other.json", add=2.0)
    site = tmp_path / "site"
    assert main(["report", run, "-o", str(site)]) == 0
    assert {p.name for p in site.iterdir()} == {REPORT_MARKER, "index.html", "run.svg"}
    (site / "notes.txt").write_bytes(b"the user's own file")
    assert main(["report", run, other, "-o", str(site), "-q"]) == 0
    names = {p.name for p in site.iterdir()}
    assert names == {REPORT_MARKER, "index.html", "comparison.svg", "notes.txt"}
    assert (site / "notes.txt").read_bytes() == b"the user's own file"
    marked = (site / REPORT_MARKER).read_text().splitlines()[1:]
    assert sorted(marked) == ["comparison.svg", "index.html"]


def test_report_into_a_foreign_directory_is_refused_before_anything_is_written(tmp_path, capsys):
    run = saved(tmp_path)
    before = sorted(os.listdir(tmp_path))
    assert main(["report", run, "-o", str(tmp_path)]) == 2
    error = capsys.readouterr().err
    assert "refusing to write a report into" in error
    assert len(error.strip().splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == before
