"""History: file names of --save-to, finding and ordering runs, the table of cells over runs."""

import csv
import io
import json
import pathlib

import pytest
from sample_run import sample_result

from zodbshootout.cli.entry import main
from zodbshootout.errors import UsageError
from zodbshootout.render.formats import get_format
from zodbshootout.results import file as resultfile
from zodbshootout.results.history import (
    SavedRun,
    column_names,
    history_cells,
    load_runs,
    saved_file_name,
    unused_path,
)

GOLDEN = pathlib.Path(__file__).parent / "golden"
DAY = 86400.0


def three_runs(directory: pathlib.Path) -> list[str]:
    """Three saved runs a day apart, add getting faster, written out of order."""
    paths = []
    for index, (label, scale) in enumerate([("main", 1.0), ("fix-1", 0.9), ("fix-2", 0.5)]):
        result = sample_result(scale={"add": scale})
        result.metadata["started"] = 1_700_000_000.0 + index * DAY
        result.metadata["label"] = label
        path = directory / f"{2 - index}-{label}.json"  # listing order is not run order
        resultfile.save(result, str(path))
        paths.append(str(path))
    return paths


def test_saved_file_names_sort_by_time_and_carry_a_safe_label():
    assert saved_file_name(1_700_000_000.5, "my branch/v2") == "20231114T221320Z-my-branch-v2.json"
    assert saved_file_name(1_700_000_000.5, None) == "20231114T221320Z.json"
    assert saved_file_name(1_700_000_000.5, "../..") == "20231114T221320Z.json"


def test_a_taken_name_gets_a_number(tmp_path):
    (tmp_path / "run.json").write_text("{}")
    (tmp_path / "run-2.json").write_text("{}")
    assert unused_path(str(tmp_path), "run.json") == str(tmp_path / "run-3.json")


def test_runs_are_ordered_by_start_time_and_foreign_files_skipped(tmp_path):
    three_runs(tmp_path)
    (tmp_path / "suite.json").write_text(json.dumps({"version": "1.0", "benchmarks": []}))
    runs, warnings = load_runs([str(tmp_path)])
    assert [run.name for run in runs] == ["main", "fix-1", "fix-2"]
    assert warnings == [
        f"skipped {tmp_path / 'suite.json'}: {tmp_path / 'suite.json'} is not a zodbshootout "
        "result file"
    ]


def test_an_empty_directory_is_a_usage_error(tmp_path):
    with pytest.raises(UsageError, match="no saved runs in"):
        load_runs([str(tmp_path)])


def test_runs_without_a_label_are_named_by_start_time_and_duplicates_numbered():
    result = sample_result()
    result.metadata["started"] = 1_700_000_000.0
    runs = [SavedRun("a.json", result), SavedRun("b.json", result)]
    assert column_names(runs) == ["2023-11-14 22:13 #1", "2023-11-14 22:13 #2"]


def test_one_row_per_cell_with_one_value_per_run(tmp_path):
    runs, _warnings = load_runs(three_runs(tmp_path))
    rows = history_cells(runs)
    # Five measured cells (zeo_fs steamin failed in every run).
    assert [(row.key.database, row.key.phase) for row in rows] == [
        ("postgresql", "add"),
        ("postgresql", "cold"),
        ("postgresql", "steamin"),
        ("zeo_fs", "add"),
        ("zeo_fs", "cold"),
    ]
    add = rows[0].stats
    assert add[2].mean == pytest.approx(2 * add[0].mean)  # fix-2 adds twice as fast


def test_history_table_matches_golden(tmp_path):
    runs, _warnings = load_runs(three_runs(tmp_path))
    runs = [SavedRun(pathlib.Path(run.path).name, run.result) for run in runs]
    rows = history_cells(runs)
    for format_name, golden in (("table", "history.txt"), ("markdown", "history.md")):
        text = "\n".join(get_format(format_name).history(runs, rows, "mean")) + "\n"
        assert text == (GOLDEN / golden).read_text(), format_name


def test_history_as_csv_and_json_holds_the_rates(tmp_path):
    runs, _warnings = load_runs(three_runs(tmp_path))
    rows = history_cells(runs)
    table = list(csv.reader(io.StringIO("\n".join(get_format("csv").history(runs, rows, "mean")))))
    assert table[0] == [
        "database",
        "concurrency",
        "object_count",
        "phase",
        "main",
        "fix-1",
        "fix-2",
    ]
    assert len(table) == 1 + 5
    assert all(len(row) == 7 for row in table)
    document = json.loads("\n".join(get_format("json").history(runs, rows, "mean")))
    assert [run["name"] for run in document["runs"]] == ["main", "fix-1", "fix-2"]
    assert len(document["cells"][0]["rates"]) == 3


def test_history_subcommand(tmp_path, capsys):
    three_runs(tmp_path)
    assert main(["history", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[-3:] == ["main", "fix-1", "fix-2"]
    assert main(["history", str(tmp_path / "nothing-here")]) == 2
    assert "cannot read result file" in capsys.readouterr().err
