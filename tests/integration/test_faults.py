"""Faults cost only the cells they touch: the rest is measured, nothing hangs or lingers.

Workers are made to fail at a precise place with the test-only hook
``ZODBSHOOTOUT_FAULT=DATABASE:PHASE:WORKER:ACTION`` (zodbshootout.faults);
servers are real ZEO servers that the test starts and stops itself.
"""

from __future__ import annotations

import json
import os
import pathlib
import signal
import textwrap
import time
from collections.abc import Callable

import pytest

from conftest import table_rows
from support import configs, privatemariadb, privatepg
from support.local import free_port, runzeo
from support.processes import run_cli_in_session, start_cli, wait_until_session_empty

N = "20"

TWO_SQLITE = """
    <zodb victim>
      <relstorage>
        <sqlite3>
          data-dir $(ZODBSHOOTOUT_DATA)/victim
        </sqlite3>
      </relstorage>
    </zodb>
    <zodb bystander>
      <relstorage>
        <sqlite3>
          data-dir $(ZODBSHOOTOUT_DATA)/bystander
        </sqlite3>
      </relstorage>
    </zodb>
"""


def column(stdout: str, index: int) -> dict[str, str]:
    return {label: cells[index] for label, cells in table_rows(stdout).items()}


def is_number(cell: str) -> bool:
    return cell.isdigit()


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        ("kill", "worker 1 died (killed by SIGKILL)"),
        ("exit", "worker 1 died (exit code 70)"),
        ("oom", "MemoryError"),
        ("raise", "InjectedFault: injected fault in cold of worker 1"),
    ],
)
def test_a_worker_that_dies_mid_phase_fails_only_its_cells(write_config, action, reason):
    config = write_config(TWO_SQLITE)
    done, left = run_cli_in_session(
        config,
        "-n",
        N,
        "-c",
        "2",
        "-r",
        "1",
        "-q",
        env={"ZODBSHOOTOUT_FAULT": f"victim:cold:1:{action}"},
    )
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    victim, bystander = column(done.stdout, 0), column(done.stdout, 1)
    # The bystander database is measured in full.
    assert all(is_number(cell) for cell in bystander.values()), done.stdout
    # The victim's write stage finished before the fault: its numbers stand.
    assert is_number(victim[f"Add {N} Objects"])
    assert is_number(victim[f"Update {N} Objects"])
    # Its read stage failed as a whole, with the reason in the footnote.
    read_cells = [cell for label, cell in victim.items() if label.startswith("Read")]
    assert read_cells
    assert all(cell.startswith("n/a[") for cell in read_cells)
    assert "victim (concurrency 2): read stage failed: " + reason in done.stdout
    assert "Traceback" not in done.stderr
    assert left == []


def test_a_hung_worker_times_out_and_is_stopped(write_config):
    config = write_config(TWO_SQLITE)
    started = time.monotonic()
    done, left = run_cli_in_session(
        config,
        "-n",
        N,
        "-c",
        "2",
        "-r",
        "1",
        "-q",
        "--timeout",
        "4",
        env={"ZODBSHOOTOUT_FAULT": "victim:add:0:hang"},
    )
    elapsed = time.monotonic() - started
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    assert all(cell.startswith("n/a[") for cell in column(done.stdout, 0).values())
    assert all(is_number(cell) for cell in column(done.stdout, 1).values()), done.stdout
    assert "write stage failed: timed out: a worker did not finish within 4 s" in done.stdout
    # One timeout, not one per barrier or per worker.
    assert elapsed < 40, elapsed
    assert left == []


@pytest.fixture
def zeo_server(tmp_path):
    """A ZEO server of our own (not the tool's), which the test may stop at will."""
    with runzeo(tmp_path / "server.fs") as (process, port):
        yield process, port


def zeo_config(port: int) -> str:
    local = textwrap.dedent(TWO_SQLITE).split("<zodb bystander>")[0].replace("victim", "local")
    return configs.zeo_client("remote", port) + local


@pytest.mark.zeo
def test_a_server_that_is_down_fails_only_its_database(write_config):
    config = write_config(zeo_config(free_port()))
    done, left = run_cli_in_session(config, "-n", N, "-c", "1", "-r", "1", "-q")
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    assert all(cell.startswith("n/a[") for cell in column(done.stdout, 0).values())
    assert all(is_number(cell) for cell in column(done.stdout, 1).values()), done.stdout
    assert "remote (concurrency 1): " in done.stdout
    assert left == []


@pytest.mark.zeo
def run_stopping_a_server(config: str, database: str, stop: Callable[[], None]):
    """Run the CLI; call *stop* as *database*'s second repetition starts writing."""
    cli = start_cli(config, "-n", N, "-c", "2", "-r", "3", "--timeout", "60")
    try:
        assert cli.stderr is not None
        for line in cli.stderr:
            if line.startswith(f"{database}:") and "repetition 2/3: write" in line:
                stop()
                break
        else:
            pytest.fail("the run never reached the second repetition")
        stdout, stderr = cli.communicate(timeout=120)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.communicate()
    return cli, stdout, stderr


def test_a_server_that_goes_down_mid_run_fails_only_its_database(write_config, zeo_server):
    server, port = zeo_server
    config = write_config(zeo_config(port))

    def stop_server() -> None:
        server.send_signal(signal.SIGKILL)
        server.wait()

    cli, stdout, stderr = run_stopping_a_server(config, "remote", stop_server)
    assert cli.returncode == 1, stderr
    remote, local = column(stdout, 0), column(stdout, 1)
    assert any(cell.startswith("n/a[") for cell in remote.values()), stdout
    assert all(is_number(cell) for cell in local.values()), stdout
    assert "remote (concurrency 2): " in stdout
    assert "Traceback" not in stderr
    assert wait_until_session_empty(cli.pid) == []


def test_the_fault_hook_is_inert_without_its_variable(write_config):
    """The hook must never fire in a real run: no variable, no fault."""
    assert "ZODBSHOOTOUT_FAULT" not in os.environ
    config = write_config(TWO_SQLITE)
    done, left = run_cli_in_session(config, "-n", N, "-c", "2", "-r", "1", "-q", "cold")
    assert done.returncode == 0, done.stdout + done.stderr
    assert left == []


@pytest.fixture
def private_postgresql():
    """A PostgreSQL cluster of this test's own, which it may crash at will."""
    reason = privatepg.unavailable()
    if reason:
        pytest.skip(reason)
    pytest.importorskip("psycopg2")
    cluster = privatepg.PrivateCluster("zs_faults", "Faults-Pw-5Tq").start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.mark.postgresql
def test_a_postgresql_server_that_goes_down_mid_run_fails_only_its_database(
    write_config, private_postgresql
):
    config = write_config(
        textwrap.dedent(f"""
        <zodb pg>
          <relstorage>
            <postgresql>
              dsn {private_postgresql.dsn()}
            </postgresql>
          </relstorage>
        </zodb>
    """)
        + textwrap.dedent(TWO_SQLITE).split("<zodb bystander>")[0].replace("victim", "local")
    )
    cli, stdout, stderr = run_stopping_a_server(config, "pg", private_postgresql.crash)
    assert cli.returncode == 1, stderr
    pg, local = column(stdout, 0), column(stdout, 1)
    assert any(cell.startswith("n/a[") for cell in pg.values()), stdout
    assert all(is_number(cell) for cell in local.values()), stdout
    assert "pg (concurrency 2): " in stdout
    assert "Traceback" not in stderr
    assert "Faults-Pw-5Tq" not in stdout + stderr
    assert wait_until_session_empty(cli.pid) == []


def run_killing_at_populate(
    config: str, database: str, repetition: int, stop: Callable[[], None], saved: str
):
    """Run with -r 2; call *stop* while the runner pauses before *database*'s populate.

    The fault hook's ``pause`` holds the runner for a few seconds right after
    it reports the populate step, so the server dies exactly there.
    """
    cli = start_cli(
        config,
        *("-n", N, "-c", "1", "-r", "2", "--timeout", "60", "-o", saved),
        env={"ZODBSHOOTOUT_FAULT": f"{database}:populate:{repetition}:pause"},
    )
    try:
        assert cli.stderr is not None
        for line in cli.stderr:
            if line.startswith(f"{database}:") and f"repetition {repetition}/2: populate" in line:
                stop()
                break
        else:
            pytest.fail("the run never reached the populate step")
        stdout, stderr = cli.communicate(timeout=180)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.communicate()
    return cli, stdout, stderr


def assert_populate_failure_reported(cli, stdout, stderr, database, repetition, saved):
    assert cli.returncode == 1, stdout + stderr
    dead, local = column(stdout, 0), column(stdout, 1)
    # Every cell of the dead database fails, also those the warm-up (and
    # repetition 1) measured: no number from fewer samples than asked.
    assert all(cell.startswith("n/a[") for cell in dead.values()), stdout
    assert all(is_number(cell) for cell in local.values()), stdout
    assert f"{database} (concurrency 1): repetition {repetition} failed: " in stdout
    assert "not measured" not in stdout
    assert "Traceback" not in stderr
    failures = json.loads(pathlib.Path(saved).read_text())["failures"]
    assert {f["database"] for f in failures} == {database}
    assert all(f"repetition {repetition} failed" in f["reason"] for f in failures)
    assert wait_until_session_empty(cli.pid) == []


@pytest.mark.zeo
@pytest.mark.parametrize("repetition", [1, 2])
def test_a_zeo_server_killed_at_populate_fails_its_cells(
    write_config, zeo_server, tmp_path, repetition
):
    server, port = zeo_server
    config = write_config(zeo_config(port))
    saved = str(tmp_path / "run.json")

    def stop_server() -> None:
        server.send_signal(signal.SIGKILL)
        server.wait()

    outcome = run_killing_at_populate(config, "remote", repetition, stop_server, saved)
    assert_populate_failure_reported(*outcome, "remote", repetition, saved)


@pytest.mark.postgresql
def test_a_postgresql_server_killed_at_populate_fails_its_cells(
    write_config, private_postgresql, tmp_path
):
    config = write_config(
        textwrap.dedent(f"""
        <zodb pg>
          <relstorage>
            <postgresql>
              dsn {private_postgresql.dsn()}
            </postgresql>
          </relstorage>
        </zodb>
    """)
        + textwrap.dedent(TWO_SQLITE).split("<zodb bystander>")[0].replace("victim", "local")
    )
    saved = str(tmp_path / "run.json")
    outcome = run_killing_at_populate(config, "pg", 2, private_postgresql.crash, saved)
    assert_populate_failure_reported(*outcome, "pg", 2, saved)
    assert "Faults-Pw-5Tq" not in outcome[1] + outcome[2]


@pytest.fixture
def private_mariadb():
    """A MariaDB server of this test's own, which it may kill at will."""
    reason = privatemariadb.unavailable()
    if reason:
        pytest.skip(reason)
    pytest.importorskip("MySQLdb")
    server = privatemariadb.PrivateMariaDB("zs_faults", "Faults-Pw-5Tq").start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.mysql
def test_a_mariadb_server_killed_at_populate_fails_its_cells(
    write_config, private_mariadb, tmp_path
):
    mysql = textwrap.indent(private_mariadb.mysql_section(), " " * 10)
    config = write_config(
        f"""
<zodb maria>
  <relstorage>
    <mysql>
{mysql}
    </mysql>
  </relstorage>
</zodb>
"""
        + textwrap.dedent(TWO_SQLITE).split("<zodb bystander>")[0].replace("victim", "local")
    )
    saved = str(tmp_path / "run.json")
    outcome = run_killing_at_populate(config, "maria", 2, private_mariadb.crash, saved)
    assert_populate_failure_reported(*outcome, "maria", 2, saved)
    assert "Faults-Pw-5Tq" not in outcome[1] + outcome[2]
