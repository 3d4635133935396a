"""Usage errors at the edges: --debug, options before a subcommand, hosts files, progress lines.

Each goes through ``cli.main`` as a user's command line would (issue 35,
items 10 and 11).
"""

from __future__ import annotations

import contextlib
import io
import threading
import time

import pytest

from zodbshootout.cli import entry as cli
from zodbshootout.cli.commands import COMMANDS
from zodbshootout.cli.printing import write_line
from zodbshootout.config.hosts import parse_hosts

IN_MEMORY = "<zodb mem>\n  <mappingstorage/>\n</zodb>\n"


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("name", ["", *COMMANDS])
def test_a_usage_error_with_debug_exits_2_after_its_traceback(name, tmp_path):
    argv = [name] if name else []
    code, stdout, stderr = run_main(*argv, str(tmp_path / "x"), "--debug", "--bogus")
    assert code == cli.EXIT_USAGE, stderr
    assert stdout == ""
    assert "Traceback (most recent call last)" in stderr
    last = stderr.splitlines()[-1]
    assert ": error: " in last, stderr
    assert "Traceback" not in last


def test_debug_before_a_subcommand_is_the_subcommands(tmp_path):
    code, _stdout, stderr = run_main("--debug", "show", str(tmp_path / "missing.json"))
    assert code == cli.EXIT_USAGE
    assert "Traceback" in stderr
    assert stderr.splitlines()[-1].startswith("zodbshootout show: error: cannot read")


def test_an_option_the_subcommand_lacks_is_refused_before_it(write_config):
    config = write_config(IN_MEMORY)
    code, stdout, stderr = run_main("--log", "x", "mix", config, "-d", "0.2")
    assert (code, stdout) == (cli.EXIT_USAGE, "")
    assert stderr == (
        "zodbshootout: error: --log is not an option of mix: write options after the "
        "subcommand (see zodbshootout mix --help)\n"
    )


@pytest.mark.parametrize("line", ["app1 2 3", "app1 python=/a python=/b", "app1 2 python=/a extra"])
def test_a_hosts_file_line_with_extra_fields_is_refused(tmp_path, line):
    path = tmp_path / "hosts.txt"
    path.write_text(f"localhost\n{line}\n")
    with pytest.raises(ValueError, match=r"hosts.txt, line 2: .* has more than HOST \[SHARE\]"):
        parse_hosts(str(path))


def test_a_directory_is_no_host_name(tmp_path, monkeypatch, write_config):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "clients").mkdir()
    with pytest.raises(ValueError, match="'clients' is a directory, not a hosts file"):
        parse_hosts("clients")
    code, stdout, stderr = run_main("mix", write_config(IN_MEMORY), "--hosts", "clients")
    assert (code, stdout) == (cli.EXIT_USAGE, "")
    assert stderr.count("\n") == 1, stderr
    assert "write clients=1" in stderr


class SlowStream(io.StringIO):
    """A stream that lets other threads run between its writes, as a pipe under load does."""

    def write(self, text: str) -> int:
        time.sleep(0.0005)
        return super().write(text)


def test_lines_from_several_threads_never_mix():
    stream = SlowStream()
    lines = {f"worker {worker}: interval {index}" for worker in range(6) for index in range(40)}

    def say(worker: int) -> None:
        for index in range(40):
            write_line(f"worker {worker}: interval {index}", stream)

    threads = [threading.Thread(target=say, args=(worker,)) for worker in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(stream.getvalue().splitlines()) == sorted(lines)
