"""Small error paths: long bad arguments are cut in messages; -p naming a file is one line."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from zodbshootout.cli.entry import main

IN_MEMORY = "<zodb mem>\n  <mappingstorage/>\n</zodb>\n"


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    "argv",
    [
        ["-n", "9" * 10_000],
        ["--format", "y" * 10_000],
        ["show", "x" * 10_000],
        ["compare", "z" * 10_000, "a.json"],
    ],
)
def test_a_10_kb_bad_argument_is_not_echoed_whole(tmp_path, argv):
    config = tmp_path / "mem.conf"
    config.write_text(IN_MEMORY)
    if argv[0] not in ("show", "compare"):
        argv = [str(config), "--threads", *argv]
    code, stdout, stderr = run_main(*argv)
    assert (code, stdout) == (2, ""), stderr[:300]
    assert stderr.count("\n") == 1
    assert len(stderr) < 1000, stderr[:300]
    assert re.search(r"…\(10,00[0-2] characters\)", stderr), stderr[:300]


def test_a_profile_directory_that_is_a_file_is_one_line(tmp_path):
    config = tmp_path / "mem.conf"
    config.write_text(IN_MEMORY)
    taken = tmp_path / "profiles"
    taken.write_text("not a directory")
    code, stdout, stderr = run_main(str(config), "--threads", "-n", "5", "-p", str(taken))
    assert (code, stdout) == (2, "")
    assert stderr == (
        f"zodbshootout: error: -p {taken}: it exists and is not a directory; name a directory\n"
    )
    assert taken.read_text() == "not a directory"
