"""A FileStorage path that is no regular file is refused, and nothing is created beside it."""

from __future__ import annotations

import contextlib
import io

from zodbshootout.cli.entry import main


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_a_filestorage_path_that_is_no_regular_file_is_refused_creating_nothing(tmp_path):
    """A FIFO stands for a device here: never a real /dev path in a test."""
    import os

    devices = tmp_path / "devices"
    devices.mkdir()
    fifo = devices / "node"
    os.mkfifo(fifo)
    config = tmp_path / "fs.conf"
    config.write_text(f"<zodb fs>\n  <filestorage>\n    path {fifo}\n  </filestorage>\n</zodb>\n")
    code, _stdout, stderr = run_main(str(config), "--threads", "-c", "1", "-n", "5", "-r", "1")
    assert code == 2, stderr
    assert stderr == (
        f"zodbshootout: error: fs: the FileStorage path {fifo} is a FIFO, not a regular file; "
        "name a new file or an existing FileStorage\n"
    )
    assert [p.name for p in devices.iterdir()] == ["node"]
