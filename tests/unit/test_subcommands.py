"""show, compare, plot and export, as a user calls them (in this process, no workers)."""

import json
import pathlib

import pytest
from sample_run import busy_result, sample_result, with_noise

from zodbshootout.cli.entry import main
from zodbshootout.render.csv import format_csv
from zodbshootout.results import file as resultfile


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "run.json"
    resultfile.save(sample_result(), str(path))
    return str(path)


def test_show_prints_the_classic_table(saved, capsys):
    assert main(["show", saved]) == 0
    out, err = capsys.readouterr()
    assert out == "\n".join(format_csv(sample_result())) + "\n"
    assert err == ""


def test_show_uses_the_runs_aggregate(tmp_path, capsys):
    result = sample_result()
    result.metadata["options"]["aggregate"] = "min"
    path = tmp_path / "best.json"
    resultfile.save(result, str(path))
    main(["show", str(path)])
    assert capsys.readouterr().out == "\n".join(format_csv(result, "min")) + "\n"


def test_show_in_markdown(saved, capsys):
    assert main(["show", saved, "--format", "markdown"]) == 0
    assert "| Add 1000 Objects                           |    19906 ±2% | 15925 ±2% |" in (
        capsys.readouterr().out
    )


def test_show_warns_about_noisy_cells(tmp_path, capsys):
    path = tmp_path / "noisy.json"
    resultfile.save(with_noise(sample_result(), "zeo_fs", "add", (1, 2, 1)), str(path))
    main(["show", str(path)])
    err = capsys.readouterr().err
    assert err.startswith("zodbshootout: warning: 1 cell(s) vary by more than 10%")
    assert "zeo_fs, add, 1000 objects" in err
    main(["show", str(path), "-q"])
    assert capsys.readouterr().err == ""


def test_compare_prints_ratio_and_significance(saved, tmp_path, capsys):
    changed = tmp_path / "changed.json"
    resultfile.save(sample_result(scale={"add": 0.5}), str(changed))
    assert main(["compare", saved, str(changed)]) == 0
    out = capsys.readouterr().out
    assert "run.json" in out.splitlines()[0]
    assert "changed.json" in out.splitlines()[0]
    add = next(line for line in out.splitlines() if line.split()[:2] == ["postgresql", "Add"])
    assert "2.00x faster" in add
    assert add.split()[-4:-1] == ["faster", "<0.001", "<0.001"]
    assert out.splitlines()[-1] == "2 of 5 tested cells differ significantly."


def test_compare_with_itself(saved, capsys):
    assert main(["compare", saved, saved]) == 0
    out = capsys.readouterr().out
    assert "base" in out.splitlines()[0]
    assert out.splitlines()[-1] == "0 of 5 tested cells differ significantly."


def test_plot_writes_an_image(saved, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    chart = tmp_path / "chart.png"
    assert main(["plot", saved, "-o", str(chart)]) == 0
    assert chart.read_bytes().startswith(b"\x89PNG")
    assert capsys.readouterr().err == f"zodbshootout: wrote {chart}\n"


def test_export_writes_pyperf(saved, tmp_path):
    out = tmp_path / "suite.json"
    assert main(["export", saved, "-o", str(out)]) == 0
    assert json.loads(out.read_text())["version"] == "1.0"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["show"], "the following arguments are required: RESULT.json"),
        (["show", "/nonexistent/run.json"], "cannot read result file /nonexistent/run.json"),
        (["plot", "x.json"], "the following arguments are required: -o/--output"),
        (["compare", "a.json"], "cannot read result file a.json"),
        (["show", "x.json", "--format", "yaml"], "invalid choice: 'yaml'"),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"zodbshootout {argv[0]}: error: ")
    assert message in err


def test_show_uses_the_format_the_run_printed(tmp_path, capsys):
    result = sample_result()
    result.metadata["format"] = "markdown"
    path = tmp_path / "md.json"
    resultfile.save(result, str(path))
    main(["show", str(path)])
    assert capsys.readouterr().out.startswith("Objects per second (mean of 3 repetitions;")
    main(["show", str(path), "--format", "csv"])
    assert capsys.readouterr().out.startswith('"Transaction",')


@pytest.mark.parametrize("option", ["-o", "--pyperf"])
def test_unwritable_output_is_refused_before_the_run(option, tmp_path, capsys):
    from conftest import ETC

    target = str(tmp_path / "missing-dir" / "run.json")
    assert main([str(ETC / "local.conf"), option, target]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"zodbshootout: error: cannot write {target}: the directory "
        f"{tmp_path / 'missing-dir'} does not exist\n"
    )


def test_a_failed_save_warns_once_and_does_not_stop_the_run(tmp_path, capsys):
    import argparse
    import shutil

    from zodbshootout.cli.outputs import RunOutputs

    directory = tmp_path / "out"
    directory.mkdir()
    target = directory / "run.json"
    outputs = RunOutputs(argparse.Namespace(output=str(target), pyperf=None, format="csv"))
    shutil.rmtree(directory)  # the disk "fills up" after the run started
    outputs.database_done(sample_result())
    outputs.database_done(sample_result())
    outputs.finish(sample_result())
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"zodbshootout: warning: cannot write {target}: the directory {directory} does not exist",
        f"zodbshootout: error: cannot write {target}: the directory {directory} does not exist",
    ]
    assert outputs.save_failed


def test_compare_fails_only_when_asked_and_names_the_slower_cells(saved, tmp_path, capsys):
    slower = tmp_path / "slower.json"
    resultfile.save(sample_result(scale={"cold": 2.0}), str(slower))
    assert main(["compare", saved, str(slower)]) == 0
    capsys.readouterr()
    assert main(["compare", saved, str(slower), "--fail-if-slower", "10"]) == 1
    err = capsys.readouterr().err.splitlines()
    assert err[0] == (
        "zodbshootout compare: 2 cell(s) significantly slower than the base by more than 10% "
        "(--fail-if-slower):"
    )
    assert err[1].startswith("  slower.json: postgresql, cold, 1000 objects, concurrency 2: ")
    assert "2.00x slower" in err[1]
    assert main(["compare", saved, str(slower), "--fail-if-slower", "120"]) == 0


def test_a_gate_that_cannot_see_the_threshold_says_so_and_exits_3(tmp_path, capsys):
    """Two copies of a busy machine's run, one cell 1.5x or 2x slower: never a pass."""
    from zodbshootout.errors import EXIT_INCONCLUSIVE

    base, slower = tmp_path / "base.json", tmp_path / "slower.json"
    resultfile.save(busy_result(), str(base))
    resultfile.save(busy_result(("mysql", "cold"), 2.0), str(slower))
    # 2x slower: just significant among 24 cells at this spread (p=0.047), or else blind.
    assert main(["compare", str(base), str(slower), "--fail-if-slower", "10"]) != 0
    out = capsys.readouterr().out
    assert "Overall: these runs could detect a slowdown of 115% or more in every cell" in out
    resultfile.save(busy_result(("mysql", "cold"), 1.5), str(slower))
    code = main(["compare", str(base), str(slower), "--fail-if-slower", "10"])
    out, err = capsys.readouterr()
    assert code == EXIT_INCONCLUSIVE == 3
    lines = err.splitlines()
    assert lines[0] == (
        "zodbshootout compare: inconclusive: asked to catch a 10% slowdown "
        "(--fail-if-slower 10), but 24 cell(s) could not have shown it:"
    )
    cold = next(line for line in lines if "mysql, cold" in line)
    assert "1.50x slower, can detect " in cold
    assert lines[-1].startswith("  To resolve 10%: run both with -r ")
    mysql_cold = next(
        line for line in out.splitlines() if line.startswith("mysql ") and "Cold" in line
    )
    # Its own p is below 0.05, Holm's (24 cells) is not.
    assert mysql_cold.split()[-4:-1] == ["inconclusive", "0.014", "n.s."]


def test_compare_several_runs_against_the_first(saved, tmp_path, capsys):
    paths = []
    for name, scale in (("b.json", 0.5), ("c.json", 2.0)):
        path = tmp_path / name
        resultfile.save(sample_result(scale={"add": scale}), str(path))
        paths.append(str(path))
    assert main(["compare", saved, *paths, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    pairs = [(c["base"], c["changed"]) for c in document["comparisons"]]
    assert pairs == [("run.json", "b.json"), ("run.json", "c.json")]
    assert main(["compare", saved, *paths]) == 0
    out = capsys.readouterr().out
    assert "== b.json against run.json ==" in out
    assert "== c.json against run.json ==" in out


def test_compare_warns_naming_what_differs(saved, tmp_path, capsys):
    other = sample_result()
    other.metadata["environment"] = {"cpu_model": "B", "python": {"version": "3.12.0"}}
    other.metadata["options"]["object_size_bytes"] = 256
    base = sample_result()
    base.metadata["environment"] = {"cpu_model": "A", "python": {"version": "3.12.0"}}
    base.metadata["options"]["object_size_bytes"] = 128
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    resultfile.save(base, str(paths[0]))
    resultfile.save(other, str(paths[1]))
    assert main(["compare", *map(str, paths)]) == 0
    assert capsys.readouterr().err == (
        "zodbshootout compare: warning: a.json and b.json were measured in different "
        "conditions: CPU model ('A' vs 'B'), object size (128 vs 256); part of any "
        "difference may come from them\n"
    )


def test_show_metadata_matches_golden(tmp_path, capsys):
    result = sample_result()
    result.metadata.update(
        label="nightly",
        environment={
            "zodbshootout": "1.0",
            "git": {"commit": "0123456789abcdef" * 2 + "01234567", "modified": True},
            "python": {"version": "3.11.7", "implementation": "CPython"},
            "platform": "Linux-6.1-x86_64",
            "hostname": "bench-1",
            "cpu_model": "Some CPU @ 2.20GHz",
            "cpu_count": 2,
            "cpu_governor": "unknown",
            "memory_bytes": 8 * 2**30,
            "load_average_start": [0.5, 0.25, 0.125],
            "load_average_end": None,
            "packages": {"ZODB": "6.0", "RelStorage": None},
        },
        databases={"zeo_fs": {"database": "zeo", "zeo_version": "6.2", "history": "preserving"}},
    )
    path = tmp_path / "meta.json"
    resultfile.save(result, str(path))
    assert main(["show", str(path), "--metadata"]) == 0
    golden = pathlib.Path(__file__).parent / "golden" / "metadata.txt"
    assert capsys.readouterr().out == golden.read_text()


def test_plot_of_two_runs_and_of_a_directory(saved, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    changed = tmp_path / "changed.json"
    resultfile.save(sample_result(scale={"add": 0.5}), str(changed))
    chart = tmp_path / "change.png"
    assert main(["plot", saved, str(changed), "-o", str(chart)]) == 0
    assert chart.read_bytes().startswith(b"\x89PNG")
    history = tmp_path / "history.svg"
    assert main(["plot", str(tmp_path), "-o", str(history)]) == 0
    assert history.read_text().startswith("<?xml")


def test_save_to_a_directory_that_cannot_be_made_is_refused_before_the_run(tmp_path, capsys):
    from conftest import ETC

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    target = blocker / "runs"
    assert main([str(ETC / "local.conf"), "--save-to", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"zodbshootout: error: cannot create {target}: ")
    assert err.count("\n") == 1


def test_compared_runs_are_named_by_their_labels_when_they_all_differ(tmp_path, capsys):
    paths = []
    for label in ("before", "after"):
        result = sample_result()
        result.metadata["label"] = label
        paths.append(str(tmp_path / f"{label}-run.json"))
        resultfile.save(result, paths[-1])
    assert main(["compare", *paths]) == 0
    assert capsys.readouterr().out.split()[2:4] == ["before", "after"]
    unlabelled = str(tmp_path / "plain.json")
    resultfile.save(sample_result(), unlabelled)
    assert main(["compare", paths[0], unlabelled]) == 0
    assert capsys.readouterr().out.split()[2:4] == ["before-run.json", "plain.json"]


def test_the_terminal_table_into_a_pipe_keeps_its_natural_width(tmp_path, capsys):
    """Not a terminal: nothing cut at 100 columns (no '…')."""
    import dataclasses

    wide = sample_result()
    names = [f"relstorage_database_{index}" for index in range(6)]
    wide = dataclasses.replace(
        wide,
        databases=names,
        failures=[],
        measurements=[
            dataclasses.replace(m, database=name)
            for m in wide.measurements
            if m.database == "postgresql"
            for name in names
        ],
    )
    path = tmp_path / "wide.json"
    resultfile.save(wide, str(path))
    assert main(["show", str(path), "--format", "table"]) == 0
    out = capsys.readouterr().out
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) > 100
    assert "19,906" in out  # a whole rate, with its separators


def test_history_and_compare_say_which_run_was_measured_on_a_busy_machine(tmp_path, capsys):
    quiet, busy = sample_result(), sample_result(scale={"cold": 1.5})
    for result in (quiet, busy):
        result.metadata["environment"] = {"cpu_count": 2}
    quiet.metadata["load_average"] = {"postgresql": {"before": 0.3, "after": 0.5}}
    busy.metadata["load_average"] = {"postgresql": {"before": 10.6, "after": 9.1}}
    busy.metadata["started"] += 3600
    directory = tmp_path / "runs"
    directory.mkdir()
    resultfile.save(quiet, str(directory / "quiet.json"))
    resultfile.save(busy, str(directory / "busy.json"))
    main(["compare", str(directory / "quiet.json"), str(directory / "busy.json")])
    err = capsys.readouterr().err
    assert (
        "zodbshootout compare: warning: busy.json was measured on a busy machine "
        "(load 10.6 on 2 cores): a difference may come from the load rather than the change"
    ) in err
    assert "quiet.json was measured" not in err
    assert main(["history", str(directory)]) == 0
    legend = [line for line in capsys.readouterr().out.splitlines() if ": " in line]
    busy_line = next(line for line in legend if "busy.json" in line)
    assert "measured on a busy machine (load 10.6 on 2 cores)" in busy_line
    assert not any("busy machine" in line for line in legend if "quiet.json" in line)
