"""Hardening against hostile or unlucky input, each case as a real process runs it.

Every output target is made inside tmp_path (a FIFO, a symlink, a directory,
a socket, a device node): no test names a system path, since as root a tool
that replaced /dev/null would break the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import stat
import time

import pytest

from conftest import ROOT, run_cli
from support import configs

IN_MEMORY = """
<zodb mem>
  <mappingstorage/>
</zodb>
"""

# A run that measures something in one process: one thread, one phase.
QUICK = ("-n", "5", "-c", "1", "-r", "1", "-q", "--threads", "add")
QUICK_PROCESSES = ("-n", "5", "-c", "1", "-r", "1", "-q", "add")


# --- 1. -o and --pyperf never replace what is not a regular file ---------------------


def make_target(tmp_path, kind: str) -> tuple[str, contextlib.ExitStack]:
    """A path of *kind* inside tmp_path, and what keeps it alive (a listening socket)."""
    keep = contextlib.ExitStack()
    path = tmp_path / kind
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "symlink":
        (tmp_path / "pointed-at.json").write_text("the user's file\n")
        path.symlink_to(tmp_path / "pointed-at.json")
    elif kind == "dangling-symlink":
        path.symlink_to(tmp_path / "nowhere.json")
    elif kind == "socket":
        server = keep.enter_context(socket.socket(socket.AF_UNIX))
        server.bind(str(path))
    elif kind == "device":
        try:
            os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        except PermissionError:
            pytest.skip("making a device node needs root")
    return str(path), keep


def file_type(path: str) -> int:
    return stat.S_IFMT(os.lstat(path).st_mode)


KINDS = ("fifo", "directory", "symlink", "dangling-symlink", "socket", "device")


@pytest.mark.parametrize("option", ["-o", "--pyperf"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_non_regular_target_is_refused_and_left_as_it_was(tmp_path, write_config, option, kind):
    config = write_config(IN_MEMORY)
    target, keep = make_target(tmp_path, kind)
    with keep:
        before = file_type(target)
        started = time.monotonic()
        # A real process: a tool that opened the FIFO would block, not fail.
        done = run_cli(config, *QUICK, option, target, timeout=60)
        elapsed = time.monotonic() - started
        assert done.returncode == 2, f"{done.stdout}\n{done.stderr}"
        assert done.stdout == ""
        assert done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.startswith(f"zodbshootout: error: refusing to write {target}: ")
        assert "- for stdout" in done.stderr
        assert file_type(target) == before
        assert elapsed < 30
    if kind == "symlink":
        assert (tmp_path / "pointed-at.json").read_text() == "the user's file\n"
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []


def test_a_parent_that_is_a_file_is_refused_before_the_run(tmp_path, write_config):
    config = write_config(IN_MEMORY)
    (tmp_path / "plain").write_text("x")
    target = tmp_path / "plain" / "run.json"
    done = run_cli(config, *QUICK, "-o", str(target), timeout=60)
    assert done.returncode == 2, f"{done.stdout}\n{done.stderr}"
    assert done.stderr.count("\n") == 1, done.stderr
    assert f"the directory {tmp_path / 'plain'} is not a directory" in done.stderr


# --- 4. An embedded ZEO server that cannot start says why ----------------------------


@pytest.mark.zeo
def test_an_embedded_server_that_cannot_start_shows_its_own_error(tmp_path, write_config):
    data = tmp_path / "data"
    data.mkdir()
    (data / "zeo.fs").write_text("not a FileStorage\n")
    config = write_config(configs.embedded_zeo("zeo"))
    done = run_cli(config, *QUICK_PROCESSES, env={"ZODBSHOOTOUT_DATA": str(data)}, timeout=120)
    assert done.returncode == 2, f"{done.stdout}\n{done.stderr}"
    assert "seek of closed file" not in done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "zodbshootout: error: zeo: the embedded ZEO server did not start: " in done.stderr
    # FileStorage's own complaint about the file, as the server printed it.
    assert "zeo.fs" in done.stderr
    assert "FileStorageFormatError" in done.stderr
    assert (data / "zeo.fs").read_text() == "not a FileStorage\n"


@pytest.mark.zeo
@pytest.mark.parametrize("kind", ["fifo", "socket", "directory", "device"])
def test_a_served_filestorage_path_that_is_no_regular_file_is_refused_creating_nothing(
    tmp_path, write_config, kind
):
    """As a plain <filestorage> path is: before the server creates PATH.lock beside it."""
    devices = tmp_path / "devices"
    devices.mkdir()
    path, keep = make_target(devices, kind)
    config = write_config(
        f"<zodb zfs>\n  <embeddedzeo>\n    <filestorage>\n      path {path}\n"
        "    </filestorage>\n  </embeddedzeo>\n</zodb>\n"
    )
    with keep:
        done = run_cli(config, *QUICK_PROCESSES, timeout=120)
    assert (done.returncode, done.stdout) == (2, ""), f"{done.stdout}\n{done.stderr}"
    described = {"fifo": "a FIFO", "socket": "a socket", "directory": "a directory"}
    assert done.stderr == (
        f"zodbshootout: error: zfs: the FileStorage path {path} is "
        f"{described.get(kind, 'a character device')}, not a regular file; "
        "name a new file or an existing FileStorage\n"
    )
    assert [p.name for p in devices.iterdir()] == [kind]


# --- 5. --timeout covers starting the workers ---------------------------------------


def test_the_timeout_covers_starting_the_worker_processes(write_config, data_dir, monkeypatch):
    """Starting workers that takes longer than --timeout is a timeout, not a wait.

    Each start is made slow (as with hundreds of workers on a busy machine);
    the stage would run well within the timeout once they all had started.
    """
    from zodbshootout.concurrency import processes
    from zodbshootout.concurrency.worker import StageTask
    from zodbshootout.config.loader import load_config
    from zodbshootout.database.open import open_database
    from zodbshootout.phases.classic import plan_stages
    from zodbshootout.workload.root import populate

    config = load_config(write_config(configs.sqlite("db")), data_dir)
    db = open_database(config.source, "db", [], client_label="populate", config=config)
    populate(db, 4)
    db.close()
    process_class = processes._process_context().Process
    start = process_class.start

    def slow_start(self):
        time.sleep(1.0)
        start(self)

    monkeypatch.setattr(process_class, "start", slow_start)
    (write, _read) = plan_stages(["add"])
    tasks = [
        StageTask(
            source=config.source,
            database="db",
            server_addresses=(),
            worker=worker,
            object_count=1,
            object_size_bytes=128,
            steps=tuple(write),
            barrier_timeout_seconds=2.0,
        )
        for worker in range(4)
    ]
    started = time.monotonic()
    outcome = processes.run_stage_in_processes(tasks, 2.0)
    elapsed = time.monotonic() - started
    assert outcome.error is not None
    assert outcome.error.startswith("timed out: the 4 workers did not start within 2 s")
    assert outcome.timings == []
    # Gave up when the time was up, without starting the rest.
    assert elapsed < 4 * 1.0


# --- 7. Passwords are masked in their fields, not as words ----------------------------


@pytest.mark.postgresql
def test_a_password_equal_to_ordinary_words_masks_only_the_password(tmp_path, write_config):
    from conftest import POSTGRESQL_HOST, POSTGRESQL_PORT, require_server

    require_server("postgresql")
    pytest.importorskip("psycopg2")
    # No such database: the server names it in its error, which must stay readable.
    where = f"host={POSTGRESQL_HOST} port={POSTGRESQL_PORT}"
    config = write_config(f"""
        <zodb pg>
          <relstorage>
            <postgresql>
              driver psycopg2
              dsn dbname=zodbshootout_eco user=zodbshootout password=zodbshootout {where}
            </postgresql>
          </relstorage>
        </zodb>
        {configs.sqlite("local")}
    """)
    saved = tmp_path / "run.json"
    done = run_cli(config, *QUICK_PROCESSES, "-o", str(saved), timeout=120)
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    assert 'database "zodbshootout_eco" does not exist' in done.stdout
    assert "***" not in done.stdout
    recorded = json.loads(saved.read_text())["metadata"]["config"]["text"]
    assert "dbname=zodbshootout_eco user=zodbshootout password=*** host" in recorded


# --- 8. Smaller: SIGTERM cleans up; memory-only configs; the missing driver's extra ---------


def test_sigterm_before_the_run_leaves_no_temporary_data_directory(tmp_path):
    """SIGTERM early in the run (held by the fault hook's pause before the first populate).

    A FIFO as the configuration used to hold it while reading; it is now
    refused at once (see zodbshootout.inputs).
    """
    from support.processes import start_cli

    temporary = tmp_path / "own-tmp"
    temporary.mkdir()
    config = tmp_path / "local.conf"
    config.write_text(configs.sqlite("local"))
    cli = start_cli(
        str(config),
        *("-q", "-n", "5", "-c", "1", "-r", "1"),
        env={"TMPDIR": str(temporary), "ZODBSHOOTOUT_FAULT": "local:populate:0:pause"},
    )
    try:
        deadline = time.monotonic() + 30
        while not any(temporary.iterdir()):
            assert time.monotonic() < deadline, "the data directory was never made"
            assert cli.poll() is None, cli.communicate()
            time.sleep(0.05)
        cli.send_signal(signal.SIGTERM)
        _stdout, stderr = cli.communicate(timeout=30)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.communicate()
    assert cli.returncode == 143, stderr
    assert "Traceback" not in stderr
    assert list(temporary.iterdir()) == []


@pytest.mark.parametrize("storage", ["<mappingstorage/>", "<demostorage/>"])
def test_a_configuration_of_memory_storages_only_is_a_usage_error(write_config, storage):
    config = write_config(f"<zodb mem>\n  {storage}\n</zodb>\n")
    started = time.monotonic()
    done = run_cli(config, "-n", "5", "-r", "1", timeout=60)
    assert done.returncode == 2, f"{done.stdout}\n{done.stderr}"
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("zodbshootout: error: nothing can be measured: mem: ")
    assert "--threads" in done.stderr
    assert time.monotonic() - started < 30
    # With threads the same configuration is measured.
    assert run_cli(config, *QUICK, timeout=60).returncode == 0


# Run the command in an interpreter where the given modules can't be imported,
# as on an install without the extra that provides them.
_WITHOUT_MODULES = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
from zodbshootout.cli.entry import main
sys.exit(main(sys.argv[2:]))
"""


def test_a_missing_postgresql_driver_names_the_extra_to_install(write_config):
    import subprocess
    import sys

    config = write_config("""
        <zodb pg>
          <relstorage>
            <postgresql>
              dsn dbname=never host=127.0.0.1 port=1
            </postgresql>
          </relstorage>
        </zodb>
    """)
    done = subprocess.run(
        [sys.executable, "-c", _WITHOUT_MODULES, "psycopg2,pg8000,psycopg2cffi", config, "-q"],
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, f"{done.stdout}\n{done.stderr}"
    assert "'auto'" not in done.stderr
    assert done.stderr == (
        "zodbshootout: error: pg: no PostgreSQL driver is installed: pip install "
        "'.[postgresql]' in the zodbshootout checkout, or name an installed driver in "
        "the section\n"
    )


# --- 6. --pack never deletes or replaces a file the tool did not make ----------------


@pytest.mark.zeo
@pytest.mark.parametrize("leftover", ["zeo_pcache.fs.old", "zeo_pcache.fs.pack"])
def test_pack_leaves_a_users_files_in_a_chosen_data_directory_alone(
    tmp_path, write_config, leftover
):
    """The user set ZODBSHOOTOUT_DATA: files there are the user's, not the tool's."""
    data = tmp_path / "chosen"
    data.mkdir()
    (data / leftover).write_text("the user's backup\n")
    config = write_config(configs.embedded_zeo("zeo_pcache"))
    env = {"ZODBSHOOTOUT_DATA": str(data)}
    args = ("-n", "5", "-c", "1", "-r", "1", "-q", "add", "--pack", "--min-objects", "20")
    first = run_cli(config, *args, env=env, timeout=120)
    assert first.returncode == 0, f"{first.stdout}\n{first.stderr}"
    assert (data / leftover).read_text() == "the user's backup\n"
    assert f"zeo_pcache: not packed: packing would replace {data / leftover}" in first.stdout


@pytest.mark.zeo
def test_pack_can_pack_again_what_it_packed_before(tmp_path, write_config):
    """The backup a pack makes is the tool's: it is removed, so the next run packs too."""
    data = tmp_path / "chosen"
    data.mkdir()
    config = write_config(configs.embedded_zeo("zeo_fs"))
    env = {"ZODBSHOOTOUT_DATA": str(data)}
    args = ("-n", "5", "-c", "1", "-r", "1", "-q", "add", "--pack", "--min-objects", "20")
    for _ in range(2):
        done = run_cli(config, *args, env=env, timeout=120)
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
        assert "not packed" not in done.stdout
        assert not (data / "zeo_fs.fs.old").exists()


# --- 3. No traceback when a server dies mid-run ---------------------------------------


@pytest.mark.zeo
def test_a_zeo_server_that_dies_while_packing_costs_one_line(tmp_path, write_config):
    """ZODB logs the failed pack with its exception: one line, not a traceback."""
    from support.local import runzeo
    from support.processes import start_cli, wait_until_session_empty

    with runzeo(tmp_path / "server.fs") as (server, port):
        config = write_config(configs.zeo_client("remote", port))
        cli = start_cli(config, "-n", "5", "-c", "1", "-r", "1", "--pack", "--min-objects", "20000")
        try:
            assert cli.stderr is not None
            for line in cli.stderr:
                if "packing (--pack)" in line:
                    server.kill()
                    server.wait()
                    break
            stdout, stderr = cli.communicate(timeout=120)
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.communicate()
    assert cli.returncode in (1, 2), stderr
    assert "Traceback" not in stderr
    assert "remote" in stdout + stderr
    assert wait_until_session_empty(cli.pid) == []


# --- A reader that goes away: `zodbshootout show run.json | head` -------------------


def test_a_reader_that_closes_the_pipe_gets_no_traceback():
    import subprocess
    import sys

    saved = ROOT / "docs" / "examples" / "local.json"  # a real saved run
    show = subprocess.Popen(
        [sys.executable, "-m", "zodbshootout", "show", str(saved)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    # Close our end before the child has imported anything, so its first
    # write meets a pipe with no reader (EPIPE), as `| head` does.
    show.stdout.close()
    _out, err = show.communicate(timeout=120)
    assert b"Traceback" not in err, err.decode()
    assert b"internal error" not in err, err.decode()
    assert show.returncode == 1
