"""--cache-trace's tracing of real client caches, and cachesim on what they wrote.

The traces are written in ZEO's format by the libraries' own tracers (ZEO's
ClientCache records, RelStorage's ZEOTracer) and replayed through ZEO's
simulation, RelStorage's own cache and an LRU.
"""

from __future__ import annotations

import bz2
import contextlib
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest
import transaction

from zodbshootout.cachesim.policies import POLICIES
from zodbshootout.cachesim.records import read_trace
from zodbshootout.config.loader import load_config
from zodbshootout.database.open import open_database
from zodbshootout.probes.cache_trace import trace_on_open, trace_path
from zodbshootout.storages.zeo.server import ServerRequest, ZEOServerProcess
from zodbshootout.workload.objects import BenchmarkObject
from zodbshootout.workload.root import container_of, populate

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
    path = write_config(section)
    start_only = trace_path(str(tmp_path / "db-n0-c1-r1"), "read", 0)
    with _traced_database(load_config(path, str(tmp_path)), "db", start_only):
        pass  # opening and closing alone writes the start record
    assert os.path.getsize(start_only) > 0
    config = load_config(path, str(tmp_path))
    trace = trace_path(str(tmp_path / "db-n200-c1-r1"), "read", 0)
    with _traced_database(config, "db", trace) as db:
        _write_then_read(db, rounds=3)
    assert os.path.getsize(trace) > os.path.getsize(start_only)
    read = read_trace(trace)
    actual = read.traced
    assert actual is not None
    assert actual.kind == ("zeo" if "zeo" in section else "relstorage")
    assert actual.cache_size_bytes is not None
    assert actual.cache_size_bytes > 1 << 20
    # Three reads of N objects, each of which the client cache answered.
    assert actual.loads >= 3 * N
    assert actual.hits >= 3 * N
    for policy in POLICIES.values():
        small, large = policy.replay(read.accesses, 16 << 10), policy.replay(read.accesses, 4 << 20)
        assert small.loads == large.loads == actual.loads
        # A 16 KiB cache can't hold N objects of 100 bytes and their records; 4 MiB can.
        assert small.hits < large.hits, policy.name
        assert large.hits >= 3 * N, policy.name


@pytest.mark.zeo
def test_cachesim_prints_hit_rates_per_size_and_policy(write_config, tmp_path):
    config = load_config(write_config(configs.embedded_zeo("db")), str(tmp_path))
    trace_dir = tmp_path / "traces"
    trace_dir.mkdir()
    with _traced_database(config, "db", trace_path(str(trace_dir / "db"), "read", 0)) as db:
        _write_then_read(db, rounds=2)
    done = run_cli("cachesim", str(trace_dir), "--sizes", "16KB,32KB,4MB", "--format", "csv")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    rows = done.stdout.splitlines()[1:]
    assert [row.split(",")[1] for row in rows] == ["actual", "simulated", "simulated", "simulated"]
    assert [int(row.split(",")[2]) for row in rows[1:]] == [16 << 10, 32 << 10, 4 << 20]
    assert int(rows[0].split(",")[2]) >= 1 << 20  # the traced cache's own size
    for column in (4, 5, 6):  # zeo, relstorage, lru: more hits in a larger cache
        rates = [float(row.split(",")[column]) for row in rows[1:]]
        assert rates == sorted(rates)
        assert rates[0] < rates[-1]


def test_cachesim_refuses_a_file_that_is_no_trace(write_config, tmp_path):
    not_a_trace = write_config("<zodb x>\n</zodb>\n")
    done = run_cli("cachesim", not_a_trace)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"zodbshootout cachesim: error: {not_a_trace} is neither a ZEO cache trace "
        "(written with --cache-trace) nor an SPC trace (asu,lba,size,opcode,timestamp)"
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
    assert done.stderr.startswith(f"zodbshootout cachesim: error: {damaged}: record 2 is damaged")
    assert len(done.stderr.splitlines()) == 1


def _small_trace(path: pathlib.Path) -> None:
    """A ZEO-format trace with the tool's marker: 50 objects read twice."""
    from zodbshootout.cachesim.records import RECORD, marker_record

    def record(code: int, oid: int, dlen: int = 0) -> bytes:
        return RECORD.pack(1700000000, (dlen << 8) | code, 8, bytes(8), bytes(8)) + oid.to_bytes(
            8, "big"
        )

    body = b"".join(record(0x20, i) + record(0x52, i, 100) for i in range(50))
    body += b"".join(record(0x22, i, 100) for i in range(50))
    path.write_bytes(marker_record(1700000000, kind="zeo", cache_size_bytes=1 << 20) + body)


def test_cachesim_skips_fifos_and_non_traces_in_a_directory(tmp_path):
    _small_trace(tmp_path / "db-n50-c1-r1-read-w0.trace")
    os.mkfifo(tmp_path / "fifo.trace")
    (tmp_path / "notes.trace").write_text("not a trace\n")
    done = run_cli("cachesim", str(tmp_path), "--sizes", "64KB", "--format", "json", timeout=60)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    document = json.loads(done.stdout)
    assert [row["source"] for row in document["rows"]] == ["actual", "simulated"]
    assert document["rows"][0]["hit_rate"]["zeo"] == 0.5
    assert document["rows"][1]["hit_rate"] == {"zeo": 0.5, "relstorage": 0.5, "lru": 0.5}
    warnings = done.stderr.splitlines()
    assert len(warnings) == 2
    assert "fifo.trace: refusing to read trace" in warnings[0]
    assert "it is a FIFO" in warnings[0]
    assert "notes.trace is neither a ZEO cache trace" in warnings[1]


def test_cachesim_refuses_a_fifo_named_as_a_trace_in_one_line(tmp_path):
    fifo = tmp_path / "x.trace"
    os.mkfifo(fifo)
    done = run_cli("cachesim", str(fifo), timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"zodbshootout cachesim: error: refusing to read trace {fifo}: it is a FIFO, "
        "not a regular file"
    )


def test_cachesim_refuses_a_cache_too_small_to_simulate_without_blaming_the_trace(tmp_path):
    _small_trace(tmp_path / "t.trace")
    done = run_cli("cachesim", str(tmp_path / "t.trace"), "--sizes", "1KB")
    assert done.returncode == 2
    assert len(done.stderr.splitlines()) == 1
    assert "'1KB' is too small to simulate: a cache needs at least 16KB" in done.stderr
    assert "trace" not in done.stderr.split("error:")[1].split("(see")[0]


def test_cache_trace_refuses_a_directory_that_holds_anything(write_config, tmp_path):
    traces = tmp_path / "traces"
    traces.mkdir()
    (traces / "old.trace").write_bytes(b"an earlier run")
    config = write_config(configs.sqlite("db"))
    done = run_cli(config, "-n", "10", "-c", "1", "-r", "1", "--cache-trace", str(traces))
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"zodbshootout: error: --cache-trace {traces}: the directory is not empty (1 entries); "
        "give a new or empty directory, so that its traces are this run's alone"
    )
    assert (traces / "old.trace").read_bytes() == b"an earlier run"


@pytest.mark.zeo
@pytest.mark.slow
@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare"
)
def test_a_full_disk_under_cache_trace_keeps_stdout_clean(write_config, tmp_path):
    """The traces go to an 8 KiB tmpfs (in a mount namespace of the run's own): ENOSPC early."""
    traces = tmp_path / "traces"
    traces.mkdir()
    config = write_config(configs.embedded_zeo("zeo") + configs.sqlite("sqlite"))
    data = tmp_path / "data"
    data.mkdir()
    command = (
        f"mount -t tmpfs -o size=8k tmpfs {traces} && exec {sys.executable} -m zodbshootout "
        f"{config} -n 300 -c 1 -r 1 -q --cache-trace {traces} -o - add cold hot"
    )
    env = dict(os.environ, ZODBSHOOTOUT_DATA=str(data))
    done = subprocess.run(
        ["unshare", "--mount", "sh", "-c", command],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    document = json.loads(done.stdout)  # stdout is the result file, nothing else
    assert {m["database"] for m in document["measurements"]} == {"zeo", "sqlite"}
    lines = [line for line in done.stderr.splitlines() if "machine was busy" not in line]
    assert lines, "the cut traces are reported"
    assert all("--cache-trace: cannot write" in line for line in lines), lines
    assert all("No space left on device" in line for line in lines), lines
    assert len(lines) <= 4  # one per trace file at most


def test_cachesim_of_an_spc_trace_prints_markdown_and_draws_the_chart(tmp_path):
    """docs/insight.rst's SPC command, on a generated trace of that name: hot set, scan, hot set."""
    pytest.importorskip("matplotlib")
    lines = [f"0,{key},8192,r,{i}.0" for i in range(20) for key in range(64)]
    lines += [f"0,{10_000 + key},8192,r,{key}.5" for key in range(2000)]
    lines += [f"0,{key},8192,r,99.0" for key in range(64)]
    trace = tmp_path / "WebSearch1.spc.bz2"
    trace.write_bytes(bz2.compress(("\n".join(lines) + "\n").encode()))
    done = run_cli(
        "cachesim", "WebSearch1.spc.bz2", "--sizes", "100MB,512MB,1GB",
        "--format", "markdown", "--plot", "websearch.png", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    table = done.stdout.splitlines()
    assert table[0].startswith("| Trace | Cache size | Loads | Hits zeo | Hits relstorage |")
    assert [row.split(" | ")[1] for row in table[2:5]] == ["100 MiB", "512 MiB", "1 GiB"]
    # Every size holds the whole trace (17 MiB): only first reads miss, in every policy.
    hit_rate = f"{100 * (19 * 64 + 64) / len(lines):.1f} %"
    assert all(row.count(f" {hit_rate} ") == 3 for row in table[2:5]), (hit_rate, table)
    assert (tmp_path / "websearch.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert done.stderr == "zodbshootout: wrote websearch.png\n"
