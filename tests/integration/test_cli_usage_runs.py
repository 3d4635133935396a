"""Usage edges checked by a real run: an option's value named like a subcommand, -q
before mix, the mix's lines through the one writer (issue 35, item 11).  Each runs in
this process with threads and an in-memory database; a run still starts a process or two
of its own, which tests/unit refuses, so they live here.
"""

from __future__ import annotations

import contextlib
import io
import json

from zodbshootout.cli import entry as cli

IN_MEMORY = "<zodb mem>\n  <mappingstorage/>\n</zodb>\n"


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_a_subcommand_name_as_an_options_value_stays_a_value(write_config, tmp_path):
    """``--label mix CONFIG`` is a run labelled "mix", not the mix subcommand."""
    config = write_config(IN_MEMORY)
    saved = tmp_path / "run.json"
    code, _stdout, stderr = run_main(
        "--label", "mix", config, "-n", "5", "-c", "1", "-r", "1", "--threads", "-q",
        "-o", str(saved), "add",
    )  # fmt: skip
    assert code == cli.EXIT_OK, stderr
    assert json.loads(saved.read_text())["metadata"]["label"] == "mix"


def test_quiet_before_mix_quiets_the_mix(write_config):
    config = write_config(IN_MEMORY)
    code, stdout, stderr = run_main(
        "-q", "mix", config, "--threads", "-n", "20", "-d", "0.2", "--warmup", "0"
    )
    assert code == cli.EXIT_OK, stderr
    assert "read" in stdout
    assert "zodbshootout mix: mem:" not in stderr


def test_mix_says_its_lines_through_the_one_writer(write_config, monkeypatch):
    """The mix's progress thread and its runner both say lines: one write each."""
    calls: list[str] = []
    from zodbshootout.cli import printing

    real = printing.write_line

    def spy(line: str, stream=None) -> None:
        calls.append(line)
        real(line, stream)

    monkeypatch.setattr("zodbshootout.cli.running.write_line", spy)  # the modes' say
    code, _stdout, stderr = run_main(
        "mix", write_config(IN_MEMORY), "--threads", "-n", "20", "-d", "0.3", "--warmup", "0"
    )
    assert code == cli.EXIT_OK, stderr
    assert calls
    assert all(line.startswith("zodbshootout mix: ") for line in calls)
    assert set(stderr.splitlines()) >= set(calls)
