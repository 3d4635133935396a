"""``zodbshootout mix`` and a server that dies: that database fails, with its reason.

The server is a private one of the test's own (runzeo, a PostgreSQL cluster,
a MariaDB server), killed by PID at a precise point of the run (the fault
hook's ``pause``, see zodbshootout.faults).  The database fails in one line,
without a traceback, keeping what was measured; the exit code is 1: the
server was reachable and set up, so this is not "nothing could run" (2).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time

import pytest

from support import configs, privatemariadb, privatepg
from support.local import runzeo
from support.processes import start_cli, wait_until_session_empty

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

pytestmark = [pytest.mark.slow]


def run_killing_server(tmp_path, fault: str | None, when: str, *options: str, wait: str = "3"):
    """Run a mix on a private ZEO server; kill it (SIGKILL) once stderr says *when*.

    *wait*: the client's wait-timeout ("30" is ZEO's default).  The outcome,
    the saved result, the processes left, and how long the run lasted after
    the kill.
    """
    with runzeo(tmp_path / "server.fs") as (server, port):
        config = tmp_path / "mix.conf"
        config.write_text(
            configs.zeo_client("first", port).replace("wait-timeout 3", f"wait-timeout {wait}")
        )

        def kill() -> None:
            server.send_signal(signal.SIGKILL)
            server.wait()

        return run_killing(tmp_path, config, kill, fault, when, *options)


def run_killing(tmp_path, config, kill, fault: str | None, when: str, *options: str):
    """Run a mix of *config*; call *kill* once stderr says *when*; see run_killing_server."""
    result_file = tmp_path / "mix.json"
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
                kill()
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


@pytest.mark.zeo
def test_a_server_killed_while_the_dataset_loads_fails_its_database(tmp_path):
    done, saved, left, _after = run_killing_server(
        tmp_path, "first:populate:0:pause", "loading the dataset"
    )
    assert done.returncode == 1, done.stdout + done.stderr  # reached and set up: not 2
    # The load runs in a process of its own, which may connect after the kill.
    failed = ("first: failed: ClientDisconnected", "first: failed: cannot open the database")
    assert any(line in done.stderr for line in failed), done.stderr
    assert "Traceback" not in done.stderr
    assert "AttributeError" not in done.stderr
    assert saved["mix"] == []
    assert [failure["database"] for failure in saved["failures"]] == ["first"]
    assert saved["setup_failed"] == []
    assert left == []


@pytest.mark.zeo
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


@pytest.mark.zeo
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
    assert len(stderr.splitlines()) == 1, stderr  # not a progress line saying it first
    assert "Traceback" not in stderr


@pytest.mark.zeo
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
    assert "Couldn't load state" not in done.stderr  # ZODB's record of it, said once by the tool
    assert "raise --timeout" not in done.stderr
    # The seconds before the kill are kept: the first interval closed before it.
    (record,) = saved["mix"]
    assert 1.0 <= record["seconds"] < 1.0 + after_kill + 5, record["seconds"]
    assert sum(op["count"] for op in record["operations"].values()) > 0
    assert record.get("changes_found") is None  # no read-back on a server that is gone
    assert "first: ycsb-b, 2 workers" in done.stdout
    assert [failure["database"] for failure in saved["failures"]] == ["first"]
    assert left == []


@pytest.fixture
def private_postgresql():
    """A PostgreSQL cluster of this test's own, which it may crash at will."""
    reason = privatepg.unavailable()
    if reason:
        pytest.skip(reason)
    pytest.importorskip("psycopg2")
    cluster = privatepg.PrivateCluster("zs_mix_death", "Mix-Death-Pw-7Qx").start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def private_mariadb():
    """A MariaDB server of this test's own, which it may kill at will."""
    reason = privatemariadb.unavailable()
    if reason:
        pytest.skip(reason)
    pytest.importorskip("MySQLdb")
    server = privatemariadb.PrivateMariaDB("zs_mix_death", "Mix-Death-Pw-7Qx").start()
    try:
        yield server
    finally:
        server.stop()


def relstorage_config(tmp_path, adapter: str, body: str):
    config = tmp_path / "mix.conf"
    config.write_text(
        "%import relstorage\n<zodb first>\n  <relstorage>\n"
        f"    <{adapter}>\n{body}\n    </{adapter}>\n  </relstorage>\n</zodb>\n"
    )
    return config


def assert_fails_at_once(done, saved, left, after_kill):
    """A 30 s run whose server died after its first second: over within seconds.

    Before the storage kinds knew a lost SQL connection, every worker went on
    failing one transaction after another (the driver's OperationalError, as
    many as the remaining 29 s held) and the record claimed 30 s.
    """
    assert done.returncode == 1, done.stdout + done.stderr
    assert after_kill < 10, done.stderr  # not the 29 s left
    lines = [line for line in done.stderr.splitlines() if "first: failed:" in line]
    assert len(lines) == 1, done.stderr
    assert "first: failed: its server was lost while measuring: " in lines[0]
    assert "Traceback" not in done.stderr
    # Nothing but the tool's own lines: no library record repeating why (RelStorage's
    # "Reconnect ... failed" from every worker).
    assert all(line.startswith("zodbshootout mix: ") for line in done.stderr.splitlines()), (
        done.stderr
    )
    assert "Mix-Death-Pw-7Qx" not in done.stdout + done.stderr
    (record,) = saved["mix"]
    assert 1.0 <= record["seconds"] < 1.0 + after_kill + 5, record["seconds"]
    assert sum(op["count"] for op in record["operations"].values()) > 0
    for operation in record["operations"].values():
        assert not operation["failures"], operation  # stopped at the first lost connection
    assert record.get("changes_found") is None  # no read-back on a server that is gone
    assert [failure["database"] for failure in saved["failures"]] == ["first"]
    assert left == []


@pytest.mark.postgresql
def test_a_postgresql_server_crashed_while_workers_measure_fails_within_seconds(
    tmp_path, private_postgresql
):
    body = f"      dsn {private_postgresql.dsn()}"
    config = relstorage_config(tmp_path, "postgresql", body)
    outcome = run_killing(
        tmp_path, config, private_postgresql.crash, None, "1 s:", "-d", "30", "--interval", "1"
    )
    assert_fails_at_once(*outcome)


@pytest.mark.mysql
def test_a_mariadb_server_killed_while_workers_measure_fails_within_seconds(
    tmp_path, private_mariadb
):
    body = "\n".join("      " + line for line in private_mariadb.mysql_section().splitlines())
    config = relstorage_config(tmp_path, "mysql", body)
    outcome = run_killing(
        tmp_path, config, private_mariadb.crash, None, "1 s:", "-d", "30", "--interval", "1"
    )
    assert_fails_at_once(*outcome)
