"""ZEO's load counts agree with ZEO's own: its cache's counters and its server's.

Two flaws of issue 35: the hot phase reported one cache hit more than loads
per loop (1,004 / 1,003), because ``Connection.root()`` loaded the root from
the storage once to learn its class when the pickle cache had dropped it;
and ``storage_loads`` was null without ``--counters``, though ZEO's cache
counts every object the server sends it (``getStats()[0]``, its adds).

Each case runs one worker's stages in a fresh process against a ZEO server of
the test's own, reading the server's own count of loads (``server_status``)
around each read phase from the phase's clock: the clock is the test's.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from support import configs
from support.local import runzeo

pytestmark = pytest.mark.zeo

OBJECTS = 20

# Runs in a fresh process: argv = config path, data dir, counters (0|1), objects.
WORKER = r"""
import json, sys, threading
from zodbshootout.concurrency.worker import StageTask, execute_stage
from zodbshootout.config.loader import load_config
from zodbshootout.database.open import open_database
from zodbshootout.phases.classic import plan_stages
from zodbshootout.workload.root import populate

path, data_dir, counters, objects = sys.argv[1:]
config = load_config(path, data_dir)
db = open_database(config.source, "zeo", [], client_label="populate", config=config)
populate(db, 1)
observer = db.storage  # a client of its own: it loads nothing while the worker runs

server_loads = []  # the server's count at each start and stop of a timed region
def clock():
    server_loads.append(observer.server_status()["loads"])
    return 0.0

timings = []
for steps in plan_stages(["cold", "prefetch", "hot"]):
    task = StageTask(
        source=config.source, database="zeo", server_addresses=(), worker=0,
        object_count=int(objects), object_size_bytes=32, steps=tuple(steps),
        barrier_timeout_seconds=30, counters=counters == "1",
        loops=(("hot", 4),),
    )
    timings += execute_stage(task, threading.Barrier(1), clock=clock)
db.close()
print(json.dumps({
    "timings": {t.phase: [t.loads, t.storage_loads, t.cache_hits, t.loops] for t in timings},
    "server_loads": server_loads,
}))
"""


def run_worker(config_path: str, data_dir: str, counters: bool) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", WORKER, config_path, data_dir, str(int(counters)), str(OBJECTS)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_zeo_hot_hits_equal_loads_and_storage_loads_are_the_servers(
    write_config, data_dir, tmp_path
):
    with runzeo(tmp_path / "served.fs") as (_process, port):
        path = write_config(configs.zeo_client("zeo", port))
        default = run_worker(path, data_dir, counters=False)
        counted = run_worker(path, data_dir, counters=True)
    loads_of_a_read = OBJECTS + 3  # the root, the tool's mapping, the container
    for run in (default, counted):
        timings = run["timings"]
        loads, storage_loads, hits, loops = timings["hot"]
        assert loops == 4
        # Every load of a hot read is one hit of ZEO's cache, and no more.
        assert (loads, hits, storage_loads) == (loads_of_a_read * loops, loads, 0)
        for phase in ("cold", "prefetch"):
            loads, storage_loads, _hits, _loops = timings[phase]
            assert loads == loads_of_a_read
            # Every object came from the server (by default, as ZEO's cache
            # counts what it took in; with --counters, the requests sent).
            assert storage_loads == loads_of_a_read, phase
    # Without --counters, the cache's count of what it took from the server
    # equals the requests --counters counts, phase by phase.
    for phase in ("cold", "prefetch", "hot"):
        assert default["timings"][phase][1] == counted["timings"][phase][1], phase
    # And the server's own count of loads inside the timed regions, in all.
    for run in (default, counted):
        marks = run["server_loads"]
        served = sum(stop - start for start, stop in zip(marks[::2], marks[1::2], strict=True))
        timed = sum(t[1] for p, t in run["timings"].items() if p in ("cold", "prefetch", "hot"))
        assert served == timed
