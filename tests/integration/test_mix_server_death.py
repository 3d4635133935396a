"""``zodbshootout mix`` and a ZEO server that dies: that database fails, with its reason.

The server is a private runzeo of the test's own, killed by PID at a
precise point of the run (the fault hook's ``pause``, see
zodbshootout.faults).  The database fails in one line, without a
traceback, keeping what was measured; the exit code is 1: the server was
reachable and set up, so this is not "nothing could run" (2).
"""

from __future__ import annotations

import json
import signal
import subprocess

import pytest

from support import configs
from support.local import runzeo
from support.processes import start_cli, wait_until_session_empty

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

pytestmark = [pytest.mark.slow, pytest.mark.zeo]


def run_killing_server(tmp_path, fault: str, when: str, databases: str = ""):
    """Run a mix on a private server; kill it (SIGKILL) once stderr says *when*."""
    result_file = tmp_path / "mix.json"
    with runzeo(tmp_path / "server.fs") as (server, port):
        config = tmp_path / "mix.conf"
        config.write_text(configs.zeo_client("first", port) + databases)
        cli = start_cli(
            "mix", str(config), "-n", "200", "-c", "2", "-d", "1", "--warmup", "0",
            "--seed", "3", "--timeout", "60", "-o", str(result_file),
            env={"ZODBSHOOTOUT_FAULT": fault},
        )  # fmt: skip
        try:
            assert cli.stderr is not None
            seen = []
            for line in cli.stderr:
                seen.append(line)
                if line.startswith("zodbshootout mix: first: ") and when in line:
                    server.send_signal(signal.SIGKILL)
                    server.wait()
                    break
            else:
                pytest.fail("the run never reached " + when + ": " + "".join(seen))
            stdout, stderr = cli.communicate(timeout=120)
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.communicate()
    done = subprocess.CompletedProcess(cli.args, cli.returncode, stdout, "".join(seen) + stderr)
    return done, json.loads(result_file.read_text()), wait_until_session_empty(cli.pid)


def test_a_server_killed_while_the_dataset_loads_fails_its_database(tmp_path):
    done, saved, left = run_killing_server(
        tmp_path, "first:populate:0:pause", "loading the dataset"
    )
    assert done.returncode == 1, done.stdout + done.stderr  # reached and set up: not 2
    assert "first: failed: ClientDisconnected" in done.stderr
    assert "Traceback" not in done.stderr
    assert "AttributeError" not in done.stderr
    assert saved["mix"] == []
    assert [failure["database"] for failure in saved["failures"]] == ["first"]
    assert saved["setup_failed"] == []
    assert left == []


def test_a_server_killed_during_the_read_back_keeps_the_measurement(tmp_path):
    done, saved, left = run_killing_server(
        tmp_path, "first:readback:0:pause", "reading every object's version back"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    # The table of what the workers measured, then why the database failed.
    assert "first: ycsb-b, 2 workers" in done.stdout
    assert "first: failed: the read-back failed: " in done.stdout
    assert "not measured" not in done.stdout
    (record,) = saved["mix"]
    assert sum(op["count"] for op in record["operations"].values()) > 0
    assert record.get("changes_found") is None  # the check never finished: not claimed
    assert [failure["database"] for failure in saved["failures"]] == ["first"]
    assert saved["setup_failed"] == []
    assert left == []


def test_a_server_that_was_never_up_is_still_nothing_could_run(tmp_path):
    """The other side of the line: an unreachable server is a set-up failure (2)."""
    with runzeo(tmp_path / "server.fs") as (_server, port):
        pass  # stopped: the port is closed
    config = tmp_path / "mix.conf"
    config.write_text(configs.zeo_client("first", port))
    cli = start_cli("mix", str(config), "-n", "20", "-d", "1", "--warmup", "0")
    stdout, stderr = cli.communicate(timeout=120)
    assert cli.returncode == 2, stdout + stderr
    assert "zodbshootout mix: error: first: " in stderr
    assert "Traceback" not in stderr
