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
import time

import pytest

from support import configs
from support.local import runzeo
from support.processes import start_cli, wait_until_session_empty

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

pytestmark = [pytest.mark.slow, pytest.mark.zeo]


def run_killing_server(tmp_path, fault: str | None, when: str, *options: str, wait: str = "3"):
    """Run a mix on a private server; kill it (SIGKILL) once stderr says *when*.

    *wait*: the client's wait-timeout ("30" is ZEO's default).  The outcome,
    the saved result, the processes left, and how long the run lasted after
    the kill.
    """
    result_file = tmp_path / "mix.json"
    with runzeo(tmp_path / "server.fs") as (server, port):
        config = tmp_path / "mix.conf"
        config.write_text(
            configs.zeo_client("first", port).replace("wait-timeout 3", f"wait-timeout {wait}")
        )
        cli = start_cli(
            "mix", str(config), "-n", "200", "-c", "2", "-d", "1", "--warmup", "0",
            "--seed", "3", "--timeout", "60", "-o", str(result_file), *options,
            env={"ZODBSHOOTOUT_FAULT": fault} if fault else {},
        )  # fmt: skip
        try:
            assert cli.stderr is not None
            seen = []
            for line in cli.stderr:
                seen.append(line)
                if line.startswith("zodbshootout mix: first: ") and when in line:
                    server.send_signal(signal.SIGKILL)
                    server.wait()
                    killed = time.monotonic()
                    break
            else:
                pytest.fail("the run never reached " + when + ": " + "".join(seen))
            stdout, stderr = cli.communicate(timeout=400)
            after_kill = time.monotonic() - killed
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.communicate()
    done = subprocess.CompletedProcess(cli.args, cli.returncode, stdout, "".join(seen) + stderr)
    saved = json.loads(result_file.read_text())
    return done, saved, wait_until_session_empty(cli.pid), after_kill


def test_a_server_killed_while_the_dataset_loads_fails_its_database(tmp_path):
    done, saved, left, _after = run_killing_server(
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
    done, saved, left, _after = run_killing_server(
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


def test_a_server_killed_while_workers_measure_fails_within_seconds(tmp_path):
    """A 30 s run: the kill ends it within the client's wait-timeout (3 s), not at its end.

    A worker between two calls when the server dies may wait once for the
    client's reconnection (wait-timeout); never once per retry, nor until --timeout.
    """
    done, saved, left, after_kill = run_killing_server(
        tmp_path, None, "1 s:", "-d", "30", "--interval", "1"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert after_kill < 15, done.stderr  # not the 29 s left
    assert "first: failed: its server was lost while measuring: ClientDisconnected" in done.stderr
    assert "Traceback" not in done.stderr
    assert "raise --timeout" not in done.stderr
    # The seconds before the kill are kept: the first interval closed before it.
    (record,) = saved["mix"]
    assert 1.0 <= record["seconds"] < 1.0 + after_kill + 5, record["seconds"]
    assert sum(op["count"] for op in record["operations"].values()) > 0
    assert record.get("changes_found") is None  # no read-back on a server that is gone
    assert "first: ycsb-b, 2 workers" in done.stdout
    assert [failure["database"] for failure in saved["failures"]] == ["first"]
    assert left == []
