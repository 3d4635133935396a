"""Two commands writing the same output: the second is refused (issue 35, 4).

Real processes: one holds an output (a command of its own, or a held claim
in a helper process), the other tries to write it.  The refusal is one
line, exit 2, naming the process that holds it; the file is left as it was.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from zodbshootout.results import file as resultfile

from conftest import run_cli

pytestmark = pytest.mark.slow

MEMORY = "<zodb mem>\n  <mappingstorage/>\n</zodb>\n"

#: A process that claims its argv[1] as a command does, says so, and holds it
#: until its stdin closes.
HOLDER = textwrap.dedent(
    """
    import sys
    from zodbshootout.outputfile import claim_output, output_claims
    with output_claims():
        claim_output(sys.argv[1])
        print("held", flush=True)
        sys.stdin.read()
    """
)


def _holder(path: str) -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, path],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None
    assert holder.stdout.readline() == "held\n"
    return holder


def _saved_run(tmp_path) -> str:
    config = tmp_path / "mem.conf"
    config.write_text(MEMORY)
    run = str(tmp_path / "run.json")
    done = run_cli(str(config), "-n", "5", "-c", "1", "-r", "2", "-q", "--threads", "-o", run)
    assert done.returncode == 0, done.stderr
    return run


def _commands(tmp_path, command: str) -> tuple[list[str], str]:
    """The argv of *command* (a subcommand that writes an output) and the output it names."""
    config = tmp_path / "mem.conf"
    config.write_text(MEMORY)
    quick = ["-n", "5", "-c", "1", "-r", "1", "-q", "--threads"]
    out = tmp_path / "out"
    if command == "run -o":
        return [str(config), *quick, "-o", str(out)], str(out)
    if command == "run --pyperf":
        return [str(config), *quick, "--pyperf", str(out)], str(out)
    if command == "mix -o":
        mix = ["mix", str(config), "--threads", "-n", "10", "-d", "0.2", "--warmup", "0"]
        return [*mix, "-o", str(out)], str(out)
    run = _saved_run(tmp_path)  # what the commands that read a result file read
    if command == "export":
        return ["export", run, "-o", str(out)], str(out)
    if command == "plot":
        return ["plot", run, "-o", f"{out}.png"], f"{out}.png"
    assert command == "report", command
    return ["report", run, "-o", str(tmp_path / "site")], str(tmp_path / "site")


@pytest.mark.parametrize(
    "command", ["run -o", "run --pyperf", "mix -o", "export", "plot", "report"]
)
def test_an_output_another_process_holds_is_refused_and_left_as_it_was(tmp_path, command):
    argv, target = _commands(tmp_path, command)
    if command != "report":
        with open(target, "wb") as file:
            file.write(b"an earlier file\n")
    holder = _holder(target)
    try:
        done = run_cli(*argv)
    finally:
        holder.communicate("")
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    (line,) = done.stderr.splitlines()
    assert f"refusing to write {target}: another zodbshootout (process {holder.pid})" in line
    if command == "report":
        assert not os.path.exists(target)
    else:
        with open(target, "rb") as file:
            assert file.read() == b"an earlier file\n"
    # The holder ended: its lock is gone, and the output is free again.
    assert not os.path.exists(os.path.join(tmp_path, f".{os.path.basename(target)}.lock"))
    again = run_cli(*argv)
    assert again.returncode == 0, again.stderr


def test_two_mix_runs_on_one_file_the_second_is_refused_the_first_saved(tmp_path):
    config = tmp_path / "mem.conf"
    config.write_text(MEMORY)
    out = tmp_path / "run.json"
    common = ["mix", str(config), "--threads", "-n", "20", "--warmup", "0", "-o", str(out)]
    first = subprocess.Popen(
        [sys.executable, "-m", "zodbshootout", *common, "-d", "15", "--label", "first"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert first.stderr is not None
        # Its first progress line: it has checked (and claimed) its output by now.
        assert first.stderr.readline().startswith("zodbshootout mix:")
        second = run_cli(*common, "-d", "0.5", "--label", "second")
        # Long enough that the runs overlapped even on a loaded machine.
        assert first.poll() is None
        assert second.returncode == 2, second.stderr
        assert f"another zodbshootout (process {first.pid})" in second.stderr
        assert len(second.stderr.splitlines()) == 1
    finally:
        # The overlap is shown: Ctrl-C ends the first, which saves what it measured.
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=120)
    assert first.returncode == 130
    saved = resultfile.load(str(out))
    assert saved.metadata["label"] == "first"
    assert saved.interrupted
    assert sorted(os.listdir(tmp_path)) == ["mem.conf", "run.json"]


def test_a_killed_holders_lock_does_not_block_the_next_writer(tmp_path):
    """A lock file left by a killed command is not held: the next command writes."""
    run = _saved_run(tmp_path)
    target = tmp_path / "out.json"
    holder = _holder(str(target))
    holder.send_signal(signal.SIGKILL)
    holder.communicate()
    assert (tmp_path / ".out.json.lock").exists()  # left behind, but nobody holds it
    done = run_cli("export", run, "-o", str(target))
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / ".out.json.lock").exists()


def test_a_refused_output_leaves_no_save_to_directory_behind(tmp_path):
    config = tmp_path / "mem.conf"
    config.write_text(MEMORY)
    out = tmp_path / "run.json"
    holder = _holder(str(out))
    try:
        done = run_cli(str(config), "-n", "5", "-r", "1", "-q", "--threads", "-o", str(out),
                       "--save-to", str(tmp_path / "runs"))  # fmt: skip
    finally:
        holder.communicate("")
    assert done.returncode == 2, done.stderr
    assert sorted(os.listdir(tmp_path)) == ["mem.conf"]
