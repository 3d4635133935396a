"""Shared test helpers: paths, running the real command, reaching servers.

Server-backed tests read their hosts from the environment (defaults: the
local servers CI provisions) and skip with the reason when a server can't be
reached; CI provisions every server, so there nothing is skipped.

The tests create and drop databases on a PostgreSQL or MariaDB they did not
start only when asked to (``ZODBSHOOTOUT_TEST_SERVERS=1``, which .ci/run
sets): on an operator's machine the README's test command leaves those
servers alone, and their tests skip saying so.  Tests that start private
instances of their own (support.privatepg, support.privatemariadb) run
either way.
"""

from __future__ import annotations

import gc
import os
import pathlib
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
from unittest import mock

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
ETC = ROOT / "etc"

POSTGRESQL_HOST = os.environ.get("ZODBSHOOTOUT_PG_HOST", "127.0.0.1")
POSTGRESQL_PORT = int(os.environ.get("ZODBSHOOTOUT_PG_PORT", "5432"))
MYSQL_HOST = os.environ.get("ZODBSHOOTOUT_MYSQL_HOST", "127.0.0.1")
MYSQL_PORT = int(os.environ.get("ZODBSHOOTOUT_MYSQL_PORT", "3306"))
MEMCACHED_HOST = os.environ.get("ZODBSHOOTOUT_MEMCACHED_HOST", "127.0.0.1")
# The benchmark's own memcached (etc/provision.sh, etc/sample.conf), not the default port.
MEMCACHED_PORT = int(os.environ.get("ZODBSHOOTOUT_MEMCACHED_PORT", "24004"))


#: Set to 1 to run the tests marked ``alone``: they judge a run's drift over
#: tens of seconds, which the suite's other tests, starting and stopping
#: beside them, would make a busier machine; .ci/run runs them after the suite.
ALONE_VARIABLE = "ZODBSHOOTOUT_ALONE"


def pytest_configure(config):
    """Bytecode kept, as Python keeps it by default, and the package's compiled once.

    Some machines set PYTHONDONTWRITEBYTECODE for every process.  Then none
    of the hundreds of processes the tests start (commands, workers, servers,
    gateways, the runs in ``versions`` environments) keeps what it compiled,
    and each compiles its modules again: a third of a second of CPU per
    process; and every xdist worker rewrites and compiles every test module
    again.  The variable is dropped for this session and what it starts (xdist
    workers start after this hook).  The controller then compiles the package
    before the first process, so that concurrent first imports don't all
    compile it.
    """
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sys.dont_write_bytecode = False
    if hasattr(config, "workerinput"):
        return
    import compileall

    compileall.compile_dir(str(ROOT / "src" / "zodbshootout"), quiet=1)


def pytest_xdist_auto_num_workers(config):
    """``-n auto``: one worker more than the cores this process may use.

    The tests spend part of their time waiting (servers starting, fixed
    durations, sockets): with one worker per core, a fifth of the CPU stood
    idle.  An extra worker fills it; ``--maxprocesses`` still caps the count
    (the tests share the database servers).
    """
    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # xdist's own hook reads it
    return len(os.sched_getaffinity(0)) + 1


def pytest_sessionstart(session):
    """matplotlib's font list, built before any test (in each xdist worker).

    On a machine that never ran matplotlib, its first use runs ``fc-list`` to
    build the list (~/.cache/matplotlib): inside a unit test, the guard
    against processes (support/no_processes.py) would fail the test, which
    depends then on which test came first.
    """
    try:
        import matplotlib.font_manager  # noqa: F401  (builds or loads the list)
    except ImportError:
        pass  # no plots without it: those tests skip


def pytest_collection_modifyitems(config, items):
    if os.environ.get(ALONE_VARIABLE):
        return
    skip = pytest.mark.skip(
        reason=f"judges a drift over time: runs by itself ({ALONE_VARIABLE}=1, as .ci/run does)"
    )
    for item in items:
        if item.get_closest_marker("alone"):
            item.add_marker(skip)


#: Set to 1 to let the tests create databases on the servers above (.ci/run does).
SHARED_SERVERS_VARIABLE = "ZODBSHOOTOUT_TEST_SERVERS"
#: The servers whose data the tests change; memcached here is etc/provision.sh's own.
SHARED_KINDS = ("postgresql", "mysql")


def shared_servers_refusal(kind: str) -> str | None:
    """Why the tests may not write to the *kind* server they did not start, or None."""
    if kind not in SHARED_KINDS or os.environ.get(SHARED_SERVERS_VARIABLE) == "1":
        return None
    host, port = _SERVERS[kind]
    return (
        f"left the {kind} server at {host}:{port} alone: "
        f"{SHARED_SERVERS_VARIABLE}=1 lets the tests create databases on it (.ci/run sets it)"
    )


def reachable(host: str, port: int, timeout: float = 1.0) -> str | None:
    """None when something listens at host:port, else the reason it doesn't."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as e:
        return f"nothing reachable at {host}:{port} ({e.strerror or e})"


_SERVERS = {
    "postgresql": (POSTGRESQL_HOST, POSTGRESQL_PORT),
    "mysql": (MYSQL_HOST, MYSQL_PORT),
    "memcached": (MEMCACHED_HOST, MEMCACHED_PORT),
}


def require_server(kind: str) -> None:
    """Skip the calling test, with the reason, unless the *kind* server answers and may be used."""
    refusal = shared_servers_refusal(kind)
    if refusal:
        pytest.skip(refusal)
    host, port = _SERVERS[kind]
    reason = reachable(host, port)
    if reason:
        pytest.skip(f"{kind} server not available: {reason}")


def run_cli(
    *args: str,
    timeout: float = 300,
    env: dict | None = None,
    input_text: str | None = None,
    cwd: str | os.PathLike | None = None,
    own_process: bool = False,
) -> subprocess.CompletedProcess:
    """Run the command with ARGS as a user would; capture its output.

    In this process (support.inprocess: real workers and servers, started
    from here), unless the test needs the command's own: *own_process* (to
    read what its children print), or an *env*, *input_text* or *cwd*.
    """
    if not (own_process or env or input_text is not None or cwd is not None):
        from support.inprocess import run_main

        with mock.patch.dict(os.environ):
            # As for a command of its own: a data directory of the run's own.
            os.environ.pop("ZODBSHOOTOUT_DATA", None)
            code, stdout, stderr = run_main(*args, timeout=timeout)
        return subprocess.CompletedProcess(["zodbshootout", *args], code, stdout, stderr)
    full_env = dict(os.environ)
    full_env.pop("ZODBSHOOTOUT_DATA", None)
    if env:
        full_env.update(env)
    return subprocess.run(
        [sys.executable, "-m", "zodbshootout", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        input=input_text,
        stdin=None if input_text is not None else subprocess.DEVNULL,
        cwd=cwd,
    )


def table_rows(stdout: str) -> dict[str, list[str]]:
    """The classic csv table of *stdout* as {row label: [cell, ...]}."""
    table = {}
    for line in stdout.splitlines():
        if line.startswith('"') and not line.startswith('"Transaction"'):
            label, _, rest = line.partition('",')
            table[label.strip('"')] = [cell.strip() for cell in rest.split(",")]
    return table


def without_busy_warning(stderr: str) -> str:
    """*stderr* without the busy-machine warning, which depends on what else runs here."""
    return "".join(
        line for line in stderr.splitlines(keepends=True) if "machine was busy" not in line
    )


@pytest.fixture(autouse=True)
def _temporary_files_of_the_test(monkeypatch):
    """The processes a test starts make their temporary files in a directory of its own.

    It is removed after the test, with whatever a command killed with
    SIGKILL could not remove (its temporary data directory).  Short, under
    the system's temporary directory: a Unix socket's path (chromium's) has
    a small limit, too small for a path below tmp_path.
    """
    # This process keeps the system's: tempfile reads TMPDIR once, on first use,
    # and e.g. a private PostgreSQL's directory must be one its user can enter.
    scratch = tempfile.mkdtemp(prefix="zs-test-")
    monkeypatch.setenv("TMPDIR", scratch)
    yield
    shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(autouse=True, scope="session")
def _shared_temporary_files_removed():
    """What the processes shared by in-process runs left (support.inprocess), at the end."""
    yield
    from support.inprocess import remove_shared_temporary_directory

    remove_shared_temporary_directory()


UNIT_TESTS = ROOT / "tests" / "unit"


@pytest.fixture(autouse=True)
def _no_process_in_the_unit_run(request, monkeypatch):
    """tests/unit starts no process (support/no_processes.py): the quick run stays quick."""
    if request.node.path.is_relative_to(UNIT_TESTS):
        from support.no_processes import refuse_process_starts

        refuse_process_starts(monkeypatch)


INTEGRATION_TESTS = ROOT / "tests" / "integration"


@pytest.fixture(autouse=True)
def _the_test_process_heap_frozen(request):
    """What lives before an integration test is left out of the collector's walks.

    The worker loop collects garbage before every step (outside the timed
    region); run in threads inside this process, each collection would walk
    pytest's heap of a million objects — most of a threaded test's time.  A
    command's own process has no such heap; freezing it here gives the
    in-process runs a heap of their own size.
    """
    if request.node.path.is_relative_to(INTEGRATION_TESTS):
        gc.collect()
        gc.freeze()


@pytest.fixture
def write_config(tmp_path):
    """Write a configuration text to a file and return its path."""

    def write(text: str, name: str = "test.conf") -> str:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text))
        return str(path)

    return write


@pytest.fixture
def data_dir(tmp_path, monkeypatch):
    """A private $ZODBSHOOTOUT_DATA for in-process runs."""
    path = tmp_path / "data"
    path.mkdir()
    monkeypatch.setenv("ZODBSHOOTOUT_DATA", str(path))
    return str(path)


def postgresql_admin():
    """An autocommit connection as the superuser; skips when there is no server or driver."""
    require_server("postgresql")
    psycopg2 = pytest.importorskip("psycopg2", reason="psycopg2 is not installed")
    admin = psycopg2.connect(
        host=POSTGRESQL_HOST, port=POSTGRESQL_PORT, user="postgres", dbname="postgres"
    )
    admin.autocommit = True
    return admin


@pytest.fixture
def postgresql_dsn():
    """A DSN of a fresh PostgreSQL database for this test, dropped afterwards."""
    name = f"zodbshootout_t{os.getpid()}"
    admin = postgresql_admin()
    with admin.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {name}")
        cursor.execute(f"CREATE DATABASE {name}")
    try:
        yield f"dbname={name} user=postgres host={POSTGRESQL_HOST} port={POSTGRESQL_PORT}"
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.close()


@pytest.fixture
def mysql_database():
    """The name of a fresh MySQL/MariaDB database for this test, dropped afterwards."""
    require_server("mysql")
    pymysql = pytest.importorskip("pymysql", reason="PyMySQL is not installed")
    name = f"zodbshootout_t{os.getpid()}"
    admin = pymysql.connect(host=MYSQL_HOST, port=MYSQL_PORT, user="root", password="")
    with admin.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {name}")
        cursor.execute(f"CREATE DATABASE {name}")
    try:
        yield name
    finally:
        with admin.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.close()


#: A PostgreSQL advisory lock of the two-key form (RelStorage takes one-key ones).
PROVISIONED_LOCK = (0x7A6F6462, 1)  # "zodb", the provisioned databases


@pytest.fixture
def provisioned_databases():
    """etc/provision.sh's databases and memcached, the calling test's alone while it runs.

    Runs of etc/sample.conf and etc/remote-sample.conf write to the same
    databases, and two at once would replace each other's containers: an
    advisory lock in zodbshootout_pg, held until the test ends, makes them
    take turns across pytest-xdist's workers and test sessions.  Skips with
    the reason when a server, a driver or the provisioning is missing.
    """
    for kind in ("postgresql", "mysql", "memcached"):
        require_server(kind)
    drivers = (("psycopg2", "postgresql"), ("MySQLdb", "mysql"), ("pylibmc", "memcache"))
    for module, extra in drivers:
        try:
            __import__(module)
        except ImportError:
            pytest.skip(f"{module} is not installed (pip install '.[{extra}]')")
    import psycopg2

    try:
        connection = psycopg2.connect(
            host=POSTGRESQL_HOST,
            port=POSTGRESQL_PORT,
            dbname="zodbshootout_pg",
            user="zodbshootout",
            password="zodbshootout",
        )
    except psycopg2.Error as e:
        pytest.skip(f"run etc/provision.sh first ({' '.join(str(e).split())})")
    connection.autocommit = True
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_lock(%s, %s)", PROVISIONED_LOCK)
        yield
    finally:
        connection.close()  # and with it the lock
