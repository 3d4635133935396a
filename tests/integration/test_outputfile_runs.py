"""-o and --pyperf on a whole run (in this process, --threads): a regular file is replaced
atomically, a save that fails is a failed run, a label the file can't hold is refused first.

A run records the git commit of the checkout it runs from (a git process), so these
tests are here, not in tests/unit/test_output_targets.py."""

from __future__ import annotations

import contextlib
import errno
import io
import os

from zodbshootout import outputfile
from zodbshootout.cli import entry as cli
from zodbshootout.results import file as resultfile

IN_MEMORY = """
<zodb mem>
  <mappingstorage/>
</zodb>
"""


QUICK = ("-n", "5", "-c", "1", "-r", "1", "-q", "--threads", "add")


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def _fail_at_fsync(monkeypatch, error: int = errno.ENOSPC) -> None:
    """The disk fills while the result is written (the lowest layer of a save)."""

    def full(_fd: int) -> None:
        raise OSError(error, os.strerror(error))

    monkeypatch.setattr(outputfile.os, "fsync", full)


def test_a_regular_file_is_still_replaced_atomically(tmp_path, write_config):
    config = write_config(IN_MEMORY)
    target = tmp_path / "run.json"
    target.write_text("an older run\n")
    code, _stdout, stderr = run_main(config, *QUICK, "-o", str(target))
    assert code == 0, stderr
    assert resultfile.load(str(target)).databases == ["mem"]


def test_a_failed_save_exits_non_zero_and_disowns_the_earlier_file(
    tmp_path, write_config, monkeypatch
):
    config = write_config(IN_MEMORY)
    target = tmp_path / "run.json"
    target.write_text("an older run\n")
    _fail_at_fsync(monkeypatch)
    code, stdout, stderr = run_main(config, *QUICK, "-o", str(target))
    assert code == cli.EXIT_CELLS_FAILED, stderr
    # The measurements are still printed.
    assert "Add 5 Objects" in stdout
    assert f"zodbshootout: error: cannot save {target}: No space left on device" in stderr
    assert "it still holds an earlier file, not this run's result" in stderr
    assert "Traceback" not in stderr
    assert target.read_text() == "an older run\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json", "test.conf"]


def test_a_failed_pyperf_save_exits_non_zero(tmp_path, write_config, monkeypatch):
    config = write_config(IN_MEMORY)
    target = tmp_path / "suite.json"
    _fail_at_fsync(monkeypatch, errno.EIO)
    code, _stdout, stderr = run_main(config, *QUICK, "--pyperf", str(target))
    assert code == cli.EXIT_CELLS_FAILED, stderr
    assert f"cannot save {target}: Input/output error" in stderr
    assert not target.exists()


def test_a_label_the_result_file_could_not_hold_is_refused_before_the_run(tmp_path, write_config):
    config = write_config(IN_MEMORY)
    saved = tmp_path / "run.json"
    code, stdout, stderr = run_main(config, *QUICK, "--label", "L" * 201, "-o", str(saved))
    assert (code, stdout) == (2, ""), stderr
    assert stderr == (
        "zodbshootout: error: --label is 201 characters long; at most 200 fit in a result file\n"
    )
    assert not saved.exists()
    # The longest label that fits is saved, and read back.
    code, _stdout, stderr = run_main(config, *QUICK, "--label", "L" * 200, "-o", str(saved))
    assert code == 0, stderr
    code, stdout, stderr = run_main("show", str(saved))
    assert code == 0, stderr
