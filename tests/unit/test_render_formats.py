"""markdown, json and the terminal table: golden text, and the same numbers as the csv."""

import json
import pathlib
import re

import pytest
from sample_run import sample_result

from zodbshootout.render.csv import format_csv
from zodbshootout.render.formats import FORMATS, get_format
from zodbshootout.render.json import format_json
from zodbshootout.render.markdown import format_markdown
from zodbshootout.render.terminal import format_terminal

GOLDEN = pathlib.Path(__file__).parent / "golden"


def _text(lines):
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("render", "golden"),
    [
        (format_markdown, "table.md"),
        (format_json, "table.json"),
        (format_terminal, "table_terminal.txt"),
    ],
)
def test_format_matches_golden(render, golden):
    assert _text(render(sample_result())) == (GOLDEN / golden).read_text(encoding="utf-8")


def test_formats_agree_with_the_classic_table():
    """Every format shows the csv's rounded rates, in the same cells."""
    result = sample_result()
    # The csv's rows 1..3 hold the cells, after the quoted label.
    cells = [line.split('",')[1] for line in format_csv(result)[1:4]]
    csv_numbers = [n for text in cells for n in re.findall(r"(\d+),?(?:\s|$)", text)]
    markdown_numbers = re.findall(r"\b(\d{4,}) ±", _text(format_markdown(result)))
    terminal_numbers = [
        n.replace(",", "") for n in re.findall(r"([\d,]{5,}) ±", _text(format_terminal(result)))
    ]
    document = json.loads(_text(format_json(result)))
    json_numbers = [
        f"{cell['rate']:.0f}"
        for row in document["blocks"][0]["rows"]
        for cell in row["cells"].values()
        if cell["rate"] is not None
    ]
    assert csv_numbers == markdown_numbers == terminal_numbers == json_numbers
    assert len(csv_numbers) == 5


def test_json_cells_carry_statistics():
    document = json.loads(_text(format_json(sample_result())))
    cell = document["blocks"][0]["rows"][0]["cells"]["postgresql"]
    assert cell["repetitions"] == 3
    assert cell["min"] <= cell["median"] <= cell["max"]
    low, high = cell["ci95"]
    assert low < cell["mean"] < high
    failed = document["blocks"][0]["rows"][2]["cells"]["zeo_fs"]
    assert failed == {"rate": None, "footnote": 1}
    assert document["footnotes"] == ["zeo_fs (concurrency 2): worker 1 died (killed by SIGKILL)"]


def test_terminal_table_highlights_the_best_value_per_row():
    lines = format_terminal(sample_result(), color=True)
    add_row = next(line for line in lines if "Add 1000" in line)
    # postgresql is faster than zeo_fs: its value is bold green (ANSI 1;32).
    assert re.search(r"\x1b\[1;32m *19,906\x1b\[0m", add_row)
    assert not re.search(r"\x1b\[1;32m *15,925", add_row)


def test_min_aggregate_reaches_every_format():
    result = sample_result()
    for name in FORMATS:
        output = get_format(name)
        assert output.run(result, "min") != output.run(result, "mean"), name


def test_unknown_format_is_rejected():
    with pytest.raises(ValueError, match="unknown format 'yaml'; choose from markdown, csv"):
        get_format("yaml")


def test_terminal_table_of_one_database_marks_nothing():
    result = sample_result()
    result.databases = ["postgresql"]
    text = _text(format_terminal(result))
    assert "*" not in text
    assert "19,906 ±2%" in text
