"""The recorder in real application processes on etc/local.conf's storages.

A small application (tests/support/recording_app.py) runs a classic-like loop
on a configuration whose storage is a ``<recording>`` of a FileStorage, a ZEO
client (a server of the test's own) or RelStorage on SQLite; several of its
processes at once each write their own trace.  What the trace says the loop
did is checked against what others counted: ZODB's activity monitor (loads,
stores), the application's commits, the ZEO server's ``server_status()``, and
the transactions in the FileStorage itself.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest
from ZODB.FileStorage import FileStorage

from zodbshootout.recording import open_trace
from zodbshootout.recording.format import FLAG_ERROR, Op

from conftest import ROOT, run_cli
from support import local

pytestmark = [pytest.mark.zeo]

APP = ROOT / "tests" / "support" / "recording_app.py"

SECTIONS = {
    "filestorage": "<filestorage>\n  path {data}/Data.fs\n</filestorage>",
    "zeo": "<zeoclient>\n  server 127.0.0.1:{port}\n</zeoclient>",
    "sqlite": "%import relstorage\n"
    "<relstorage>\n  <sqlite3>\n    driver sqlite3\n    data-dir {data}/sqlite\n"
    "  </sqlite3>\n</relstorage>",
}


def configuration(tmp_path, kind, port=None, flush="0.05"):
    section = SECTIONS[kind].format(data=tmp_path, port=port)
    imports = "\n".join(line for line in section.splitlines() if line.startswith("%"))
    body = "\n".join(line for line in section.splitlines() if not line.startswith("%"))
    text = (
        f"%import zodbshootout\n{imports}\n<zodb>\n  <recording>\n"
        f"    path {tmp_path}/traces/app\n    flush-interval {flush}\n"
        f"{textwrap.indent(body, '    ')}\n  </recording>\n</zodb>\n"
    )
    (tmp_path / "traces").mkdir(exist_ok=True)
    path = tmp_path / f"{kind}.conf"
    path.write_text(text)
    return path


def start_app(config, *options):
    return subprocess.Popen(
        [sys.executable, str(APP), str(config), *options],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(process):
    out, err = process.communicate(timeout=300)
    assert process.returncode == 0, err
    return json.loads(out.splitlines()[0]), err


def in_loop(pid, report, prefix):
    """The successful calls of process *pid* that started within its loop."""
    found = []
    for path in sorted(glob.glob(f"{prefix}.{pid}.*.zodbtrace")):
        trace = open_trace(path)
        base = trace.header.base_monotonic_ns
        found += [
            r
            for r in trace.records()
            if report["start_ns"] <= base + r.time_ns <= report["end_ns"]
            and not r.flags & FLAG_ERROR
        ]
    return found


def all_records(prefix):
    return [r for path in glob.glob(f"{prefix}.*.zodbtrace") for r in open_trace(path).records()]


def check_counts(records, report):
    ops = [r.op for r in records]
    assert ops.count(Op.LOAD) == report["loads"] > 0
    assert ops.count(Op.STORE) == report["stores"] > 0
    assert ops.count(Op.TPC_FINISH) == report["commits"] > 0
    return ops


def committed_in(path):
    storage = FileStorage(str(path), read_only=True)
    try:
        transactions = records = 0
        for committed in storage.iterator():
            transactions += 1
            records += len(list(committed))
        return transactions, records
    finally:
        storage.close()


def test_filestorage_trace_counts_what_the_database_did(tmp_path):
    config = configuration(tmp_path, "filestorage")
    app = start_app(config, "--transactions", "60")
    report, _ = finish(app)
    check_counts(in_loop(app.pid, report, tmp_path / "traces" / "app"), report)
    # The whole trace (the database's creation and the dataset too) against the file.
    ops = [r.op for r in all_records(tmp_path / "traces" / "app") if not r.flags & FLAG_ERROR]
    assert (ops.count(Op.TPC_FINISH), ops.count(Op.STORE)) == committed_in(tmp_path / "Data.fs")


def test_zeo_trace_counts_what_the_server_saw(tmp_path):
    with local.runzeo(tmp_path / "zeo.fs") as (server, port):
        config = configuration(tmp_path, "zeo", port)
        pids = []
        for seed in ("1", "2"):  # one after the other: the server's counts are each one's
            app = start_app(config, "--transactions", "60", "--seed", seed)
            report, _ = finish(app)
            pids.append(app.pid)
            ops = check_counts(in_loop(app.pid, report, tmp_path / "traces" / "app"), report)
            before, after = report["server_before"], report["server_after"]
            assert ops.count(Op.STORE) == after["stores"] - before["stores"]
            assert ops.count(Op.TPC_FINISH) == after["commits"] - before["commits"]
        server.terminate()
        server.wait()
    names = os.listdir(tmp_path / "traces")
    assert {int(name.split(".")[1]) for name in names} == set(pids)  # a file per process
    ops = [r.op for r in all_records(tmp_path / "traces" / "app") if not r.flags & FLAG_ERROR]
    assert (ops.count(Op.TPC_FINISH), ops.count(Op.STORE)) == committed_in(tmp_path / "zeo.fs")


def test_sqlite_processes_at_once_each_write_their_own_trace(tmp_path):
    config = configuration(tmp_path, "sqlite")
    finish(start_app(config, "--transactions", "0"))  # the dataset, made once
    # Each changes objects of its own: the three at once must not conflict.
    own = [("--seed", str(n), "--own", f"{n}/3") for n in range(3)]
    apps = [start_app(config, "--transactions", "60", *options) for options in own]
    reports = [finish(app)[0] for app in apps]
    for app, report in zip(apps, reports, strict=True):
        check_counts(in_loop(app.pid, report, tmp_path / "traces" / "app"), report)
    pids = {int(name.split(".")[1]) for name in os.listdir(tmp_path / "traces")}
    assert {app.pid for app in apps} < pids


def test_a_killed_process_leaves_a_trace_readable_up_to_its_last_flush(tmp_path):
    config = configuration(tmp_path, "filestorage", flush="60")
    app = start_app(config, "--transactions", "40", "--hold")
    report = json.loads(app.stdout.readline())
    assert app.stdout.readline().strip() == "flushed"
    app.send_signal(signal.SIGKILL)
    app.wait()
    assert app.returncode == -signal.SIGKILL
    (path,) = glob.glob(f"{tmp_path}/traces/app.{app.pid}.*.zodbtrace")
    assert open_trace(path).partial_tail_bytes == 0
    check_counts(in_loop(app.pid, report, tmp_path / "traces" / "app"), report)
    done = run_cli("trace-stats", str(tmp_path / "traces"))
    assert done.returncode == 0, done.stderr
    finished = [r.op for r in all_records(tmp_path / "traces" / "app")].count(Op.TPC_FINISH)
    assert f"({finished} committed, 0 aborted)" in done.stdout


FORKING = """
import os, sys, ZODB, transaction
from ZODB.MappingStorage import MappingStorage
from zodbshootout.recording import record
db = ZODB.DB(record(MappingStorage(), sys.argv[1], flush_interval=0.01))
with db.transaction() as conn:
    conn.root()["who"] = "parent"
pid = os.fork()
if pid == 0:
    for n in range(5):
        with db.transaction() as conn:
            conn.root()["n"] = n
    db.storage.recording.flush()
    os._exit(0)
os.waitpid(pid, 0)
print(pid)
db.close()
"""


def test_a_forked_child_records_into_its_own_file(tmp_path):
    done = subprocess.run(
        [sys.executable, "-c", FORKING, str(tmp_path / "app")],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    child = int(done.stdout.split()[0])
    by_pid = {}
    for path in glob.glob(f"{tmp_path}/app.*.zodbtrace"):
        trace = open_trace(path)
        by_pid[trace.header.pid] = [r.op for r in trace.records()]
    assert set(by_pid) == {child, next(p for p in by_pid if p != child)}
    parent = next(p for p in by_pid if p != child)
    assert by_pid[child].count(Op.TPC_FINISH) == 5
    assert by_pid[parent].count(Op.TPC_FINISH) == 2  # the root's creation and "parent"
