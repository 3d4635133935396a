"""Run mix --work's counting pass on a ZEO server, reading the server's own count of loads
and stores at each barrier (the test's independent count).

Usage::

    python mix_work_child.py CONFIG DATA_DIR PORT OBJECTS K

loads the dataset (untimed, as a mix run does), then runs the counting
pass of a read-and-update workload with uniform keys and prints JSON: per
operation and cache state, the pass's own counts and what the ZEO server's
``server_status`` counted between the barrier waits around each counted
transaction.
"""

from __future__ import annotations

import json
import sys

from work_child import ReadingBarrier, zeo_reader

from zodbshootout.concurrency.task import WorkerContext
from zodbshootout.config.loader import load_config
from zodbshootout.database.open import open_database
from zodbshootout.mix.counting import STATES, MixWorkTask
from zodbshootout.mix.operations import Shape
from zodbshootout.mix.runner import ensure_dataset
from zodbshootout.mix.worker import MixPlan
from zodbshootout.mix.workloads import Workload
from zodbshootout.workload.root import populate


def main(config_path: str, data_dir: str, port: int, objects: int, k: int) -> None:
    config = load_config(config_path, data_dir)
    name = next(iter(config.databases))
    db = open_database(config.source, name, [], client_label="fill")
    populate(db, 0)
    ensure_dataset(db, objects, 128)
    db.close()
    workload = Workload("read-update", (("read", 1.0), ("update", 1.0)), "uniform")
    plan = MixPlan(workload, objects, Shape(k, 10, 128), 1.0, 0.0, seed=3)
    task = MixWorkTask(config.source, name, (), plan, 30.0)
    barrier = ReadingBarrier(zeo_reader(port))
    (report,) = task.execute(barrier, WorkerContext())
    # The waits come in pairs, one pair per counted run, in the pass's order.
    pairs = iter(zip(barrier.readings[::2], barrier.readings[1::2], strict=True))
    server: dict[str, dict[str, dict[str, int]]] = {}
    for operation in workload.operations:
        server[operation] = {state: {"loads": 0, "stores": 0} for state in STATES}
        for _ in range(task.transactions):
            for state in STATES:
                before, after = next(pairs)
                for key in ("loads", "stores"):
                    server[operation][state][key] += after[key] - before[key]
    assert next(pairs, None) is None, "more counted runs than expected"
    print(json.dumps({"work": report, "server": server, "transactions": task.transactions}))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
