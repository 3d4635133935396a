"""A default run times nothing it wasn't asked for: no per-load or per-statement counter.

The counters of ``--counters`` wrap classes (RelStorage's drivers and mover,
ZEO's client protocol, ZODB's Connection.setstate) for the whole process, so
each case runs a worker's stages in a fresh Python process, with a clock
that, each time the timed region starts or stops, looks at what those
classes are at that moment. With ``--counters`` the same look finds the
wrappers: the look itself can fail.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from support import configs
from support.local import runzeo

# Runs in a fresh process: argv = config path, data dir, database, counters (0|1).
WORKER = r"""
import json, sys, threading
import relstorage.adapters.drivers as drivers
import relstorage.adapters.mover as mover
from relstorage.adapters.sqlite.drivers import Sqlite3Driver
from ZEO.asyncio.client import Protocol
from ZODB.Connection import Connection
from zodbshootout.concurrency.worker import StageTask, execute_stage
from zodbshootout.config.loader import load_config
from zodbshootout.database.open import open_database
from zodbshootout.workload.root import populate
from zodbshootout.phases.classic import plan_stages

path, data_dir, database, counters = sys.argv[1:]
config = load_config(path, data_dir)
db = open_database(config.source, database, [], client_label="populate", config=config)
populate(db, 1)
db.close()

def movers(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from movers(sub)

def ours():
    found = set()
    places = [(Connection, "setstate"), (Protocol, "load_before")]
    places += [(Sqlite3Driver, "connect_to_file")]
    places += [(drivers.AbstractModuleDriver, n) for n in ("cursor", "commit", "rollback")]
    for cls in movers(mover.AbstractObjectMover):
        places += [(cls, "load_current"), (cls, "load_currents")]
    for cls, name in places:
        if getattr(getattr(cls, name), "__module__", "").startswith("zodbshootout"):
            found.add(f"{cls.__name__}.{name}")
    return found

seen = set()
def clock():
    seen.update(ours())
    return 0.0

timings = []
for steps in plan_stages(["add", "update", "cold", "hot", "steamin"]):
    task = StageTask(
        source=config.source, database=database, server_addresses=(), worker=0,
        object_count=20, object_size_bytes=32, steps=tuple(steps),
        barrier_timeout_seconds=30, counters=counters == "1",
    )
    timings += execute_stage(task, threading.Barrier(1), clock=clock)
print(json.dumps({
    "wrapped": sorted(seen),
    "timings": {t.phase: [t.loads, t.storage_loads, t.statements] for t in timings},
}))
"""


def run_worker(config_path: str, data_dir: str, database: str, counters: bool) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", WORKER, config_path, data_dir, database, str(int(counters))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    return json.loads(done.stdout.splitlines()[-1])


def test_sqlite_statements_are_not_counted_by_default(write_config, data_dir):
    path = write_config(configs.sqlite("sqlite"))
    default = run_worker(path, data_dir, "sqlite", counters=False)
    assert default["wrapped"] == []
    loads, storage_loads, statements = default["timings"]["cold"]
    assert loads == 23
    assert storage_loads is None
    assert statements is None
    counted = run_worker(path, data_dir, "sqlite", counters=True)
    assert "Sqlite3Driver.connect_to_file" in counted["wrapped"]
    assert any(name.endswith(".load_currents") for name in counted["wrapped"])
    loads, storage_loads, statements = counted["timings"]["cold"]
    assert loads == storage_loads == 23
    assert statements > 0


@pytest.mark.zeo
def test_zeo_client_protocol_is_not_wrapped_by_default(write_config, data_dir, tmp_path):
    with runzeo(tmp_path / "served.fs") as (_process, port):
        path = write_config(configs.zeo_client("zeo", port))
        default = run_worker(path, data_dir, "zeo", counters=False)
        counted = run_worker(path, data_dir, "zeo", counters=True)
    assert default["wrapped"] == []
    # ZEO's cache counts what the server sent it: known without --counters.
    assert default["timings"]["cold"][:2] == [23, 23]
    assert counted["wrapped"] == ["Protocol.load_before"]
    assert counted["timings"]["cold"][:2] == [23, 23]
