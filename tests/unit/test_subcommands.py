"""show, compare, plot and export, as a user calls them (in this process, no workers)."""

import json

import pytest
from sample_run import sample_result, with_noise

from zodbshootout import resultfile
from zodbshootout.cli import main
from zodbshootout.render.csv import format_csv


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
    assert "| Add 1000 Objects           |    19906 ±2% | 15925 ±2% |" in capsys.readouterr().out


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
    add = next(line for line in out.splitlines() if line.startswith("postgresql  Add"))
    assert "2.00x faster" in add
    assert "significant (p<0.001)" in add
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
        (["compare", "a.json"], "required: CHANGED.json"),
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

    from zodbshootout.subcommands import RunOutputs

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
