"""A populate that fails costs the cells it touched, loudly (a whole run in this process:
it records the checkout's git commit, a git process)."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

MEMORY = """
<zodb mem>
  <mappingstorage/>
</zodb>
<zodb other>
  <mappingstorage/>
</zodb>
"""


def run_main(*argv: str) -> tuple[int, str, str]:
    from zodbshootout.cli import entry

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = entry.main(list(argv))
    return code, out.getvalue(), err.getvalue()


def cells(stdout: str, index: int) -> list[str]:
    return [
        line.split(",")[index + 1].strip()
        for line in stdout.splitlines()
        if line.startswith('"') and not line.startswith('"Transaction"')
    ]


@pytest.mark.parametrize("repetition", [1, 2])
def test_a_populate_that_fails_fails_its_cells_with_the_reason(tmp_path, monkeypatch, repetition):
    config = tmp_path / "mem.conf"
    config.write_text(MEMORY)
    saved = tmp_path / "run.json"
    monkeypatch.setenv("ZODBSHOOTOUT_FAULT", f"mem:populate:{repetition}:raise")
    code, stdout, stderr = run_main(
        str(config),
        "--threads",
        "-n",
        "10",
        "-c",
        "1",
        "-r",
        "2",
        "-q",
        "-o",
        str(saved),
        "add",
        "cold",
    )
    assert code == 1, stdout + stderr
    assert all(cell.startswith("n/a[") for cell in cells(stdout, 0)), stdout
    assert all(cell.isdigit() for cell in cells(stdout, 1)), stdout
    assert (
        f"mem (concurrency 1): repetition {repetition} failed: InjectedFault: "
        f"injected fault in populate of worker {repetition}"
    ) in stdout
    assert "not measured" not in stdout
    failures = json.loads(saved.read_text())["failures"]
    assert [(f["database"], sorted(f["phases"])) for f in failures] == [("mem", ["add", "cold"])]
