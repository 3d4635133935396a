"""-o and --pyperf write regular files only, and a save that fails is a failed run.

In this process, without workers (--threads); the real-process cases (a FIFO,
a socket, a device node made in tmp_path) are in tests/integration/test_hardening.py,
and those that finish a whole run (which records the checkout's commit with git) in
tests/integration/test_outputfile_runs.py.
"""

from __future__ import annotations

import contextlib
import io
import pathlib

import pytest

from zodbshootout.cli import entry as cli
from zodbshootout.errors import UsageError
from zodbshootout.results import file as resultfile

IN_MEMORY = """
<zodb mem>
  <mappingstorage/>
</zodb>
"""

# A run that measures something in this process: one thread, one phase.
QUICK = ("-n", "5", "-c", "1", "-r", "1", "-q", "--threads", "add")


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_a_target_that_becomes_a_symlink_during_the_run_is_not_replaced(tmp_path):
    """The check is repeated at every save, not only before the run."""
    from sample_run import sample_result

    target = tmp_path / "run.json"
    resultfile.save(sample_result(), str(target))
    target.unlink()
    (tmp_path / "elsewhere").write_text("keep me\n")
    target.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UsageError, match="it is a symbolic link"):
        resultfile.save(sample_result(), str(target))
    assert target.is_symlink()
    assert (tmp_path / "elsewhere").read_text() == "keep me\n"


def test_export_refuses_a_symlink_target(tmp_path, capsys):
    from sample_run import sample_result

    saved = tmp_path / "run.json"
    resultfile.save(sample_result(), str(saved))
    link = tmp_path / "suite.json"
    link.symlink_to(tmp_path / "real.json")
    assert cli.main(["export", str(saved), "-o", str(link)]) == 2
    assert "refusing to write" in capsys.readouterr().err
    assert link.is_symlink()
    assert not (tmp_path / "real.json").exists()


def test_plot_refuses_a_symlink_target(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from sample_run import sample_result

    saved = tmp_path / "run.json"
    resultfile.save(sample_result(), str(saved))
    link = tmp_path / "chart.png"
    link.symlink_to(tmp_path / "real.png")
    assert cli.main(["plot", str(saved), "-o", str(link)]) == 2
    assert "refusing to write" in capsys.readouterr().err
    assert link.is_symlink()
    assert not (tmp_path / "real.png").exists()


def test_a_name_ending_in_a_slash_is_refused(tmp_path, write_config):
    config = write_config(IN_MEMORY)
    target = f"{tmp_path}/newdir/"
    code, stdout, stderr = run_main(config, *QUICK, "-o", target)
    assert code == 2, stderr
    assert stdout == ""
    assert stderr == (
        f"zodbshootout: error: refusing to write {target}: a name ending in / names a "
        "directory; give a new or regular file's path, or - for stdout\n"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test.conf"]


@pytest.mark.parametrize("option", ["-o", "--pyperf"])
def test_the_configuration_itself_is_never_an_output(tmp_path, write_config, option):
    config = write_config(IN_MEMORY)
    before = pathlib.Path(config).read_text()
    # The same file by another name.
    other_name = str(tmp_path / "." / "test.conf")
    code, _stdout, stderr = run_main(config, *QUICK, option, other_name)
    assert code == 2, stderr
    assert stderr == (
        f"zodbshootout: error: refusing to write {other_name}: it is the configuration "
        f"file {config}\n"
    )
    assert pathlib.Path(config).read_text() == before


@pytest.mark.parametrize("option", ["-o", "--pyperf", "--save-to"])
def test_an_empty_output_name_is_refused_not_ignored(tmp_path, write_config, option, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = write_config(IN_MEMORY)
    code, stdout, stderr = run_main(config, *QUICK, option, "")
    assert (code, stdout) == (2, ""), stderr
    assert stderr.startswith(f"zodbshootout: error: argument {option}")
    assert "an empty name; name a file or directory" in stderr
    assert stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("command", "option"),
    [("export", "-o"), ("plot", "-o"), ("report", "-o"), ("cachesim", "--plot")],
)
def test_an_empty_output_name_of_a_subcommand_is_refused(tmp_path, command, option):
    from sample_run import sample_result

    saved = tmp_path / "run.json"
    resultfile.save(sample_result(), str(saved))
    source = str(saved)
    if command == "cachesim":
        source = str(tmp_path / "t.spc")
        pathlib.Path(source).write_text("0,1,4096,r,0.1\n0,2,4096,r,0.2\n")
    code, stdout, stderr = run_main(command, source, option, "")
    assert (code, stdout) == (2, ""), stderr
    assert stderr.count("\n") == 1, stderr
    assert f"argument {option}" in stderr
    assert "an empty name" in stderr


def test_a_label_that_is_no_text_is_refused_before_the_run(tmp_path, write_config):
    """Bytes that are not UTF-8 in argv arrive as lone surrogates."""
    config = write_config(IN_MEMORY)
    code, stdout, stderr = run_main(config, *QUICK, "--label", "v1-\udcff")
    assert (code, stdout) == (2, ""), stderr
    assert stderr == "zodbshootout: error: --label is not UTF-8 text\n"
