"""--cache-trace's tracing of real client caches, and cachesim on what they wrote.

The traces are written by the libraries' own tracers (ZEO's ClientCache,
RelStorage's ZEOTracer) and read by ZEO's own scripts.
"""

from __future__ import annotations

import contextlib
import os
import pathlib

import pytest
import transaction

from zodbshootout.cachesim import observed, simulate
from zodbshootout.cachetrace import trace_on_open, trace_path
from zodbshootout.config import load_config
from zodbshootout.database import container_of, open_database, populate
from zodbshootout.objects import BenchmarkObject
from zodbshootout.zeo_server import ServerRequest, ZEOServerProcess

from conftest import run_cli
from support import configs

N = 200


@contextlib.contextmanager
def _traced_database(config, name, path):
    factory = config.databases[name]
    with contextlib.ExitStack() as stack:
        addresses = []
        if "embeddedzeo" in config.source.text:
            server = ZEOServerProcess(ServerRequest(config.source, name, 0))
            stack.callback(server.stop)
            addresses.append(server.address)
        trace_on_open(factory, path)
        db = open_database(config.source, name, addresses, "0", config=config)
        try:
            yield db
        finally:
            db.close()


def _write_then_read(db, rounds):
    """Add N objects, then read them *rounds* times with only the pickle cache emptied."""
    populate(db, 1)
    tm = transaction.TransactionManager()
    conn = db.open(transaction_manager=tm)
    container = container_of(conn, 0)
    for index in range(N):
        container[index] = BenchmarkObject(b"p" * 100)
    tm.commit()
    conn.close()
    for _ in range(rounds):
        db.cacheMinimize()
        conn = db.open(transaction_manager=tm)
        assert [container_of(conn, 0)[i].payload for i in range(N)] == [b"p" * 100] * N
        tm.commit()
        conn.close()


@pytest.mark.zeo
@pytest.mark.parametrize(
    "section", [configs.embedded_zeo("db"), configs.sqlite("db")], ids=["zeo", "sqlite"]
)
def test_a_non_persistent_cache_is_traced_and_replayed(section, write_config, tmp_path):
    config = load_config(write_config(section), str(tmp_path))
    start_only = trace_path(str(tmp_path / "db-n0-c1-r1"), "read", 0)
    with _traced_database(config, "db", start_only):
        pass  # opening and closing alone writes the start record
    assert os.path.getsize(start_only) > 0
    trace = trace_path(str(tmp_path / "db-n200-c1-r1"), "read", 0)
    with _traced_database(config, "db", trace) as db:
        _write_then_read(db, rounds=3)
    assert os.path.getsize(trace) > os.path.getsize(start_only)
    actual = observed(trace)
    assert actual is not None
    # Three reads of N objects, each of which the client cache answered.
    assert actual.loads >= 3 * N
    assert actual.hits >= 3 * N
    small, large = simulate(trace, 16 << 10), simulate(trace, 4 << 20)
    assert small.loads == large.loads == actual.loads
    # A 16 KiB cache can't hold N objects of 100 bytes and their records; 4 MiB can.
    assert small.hits < large.hits
    assert large.hits >= 3 * N


@pytest.mark.zeo
def test_cachesim_prints_hit_rates_per_size_from_zeos_tools(write_config, tmp_path):
    config = load_config(write_config(configs.embedded_zeo("db")), str(tmp_path))
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    with _traced_database(config, "db", trace_path(str(trace_dir / "db"), "read", 0)) as db:
        _write_then_read(db, rounds=2)
    done = run_cli("cachesim", str(trace_dir), "--sizes", "8KB,32KB,4MB")
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines()[2:]]
    assert [" ".join(row[1:-4]) for row in rows] == ["actual", "8 KiB", "32 KiB", "4 MiB"]
    rates = [float(row[-2]) for row in rows[1:]]
    assert rates == sorted(rates)
    assert rates[0] < rates[-1]


def test_cachesim_refuses_a_file_that_is_no_trace(write_config, tmp_path):
    not_a_trace = write_config("<zodb x>\n</zodb>\n")
    done = run_cli("cachesim", not_a_trace)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"zodbshootout cachesim: error: {not_a_trace} is not a ZEO cache trace "
        "(written with --cache-trace)"
    )


@pytest.mark.zeo
def test_cachesim_reports_a_damaged_trace_in_one_line(write_config, tmp_path):
    config = load_config(write_config(configs.embedded_zeo("db")), str(tmp_path))
    trace = trace_path(str(tmp_path / "db"), "read", 0)
    with _traced_database(config, "db", trace) as db:
        _write_then_read(db, rounds=1)
    damaged = tmp_path / "damaged.trace"
    # The start record, then bytes that are no trace records.
    damaged.write_bytes(pathlib.Path(trace).read_bytes()[:26] + bytes(range(256)) * 8)
    done = run_cli("cachesim", str(damaged), "--sizes", "64KB,1MB,4MB")
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"zodbshootout cachesim: error: {damaged} is not a readable ZEO cache trace ("
    )
    assert len(done.stderr.splitlines()) == 1
