"""Does forking from a process full of imports slow a worker's ZODB work?

Not a test: the measurement behind concurrency/forkserver_heap.py, to run by
hand.  It times the same work (a FileStorage add of N objects, then their
update, each after a collection) in pairs: once in a fresh interpreter, once
in a child forked from this process, which first imported what the fork
server preloads (ZODB, RelStorage, ZEO, the drivers), or only ZODB
(``--parent light``), and froze that heap or not (``--freeze``).  It prints
the forked child's time ÷ the fresh one's, per phase: the median over the
pairs and its range, with the load average.

Usage (from a checkout, in the venv that has zodbshootout installed)::

    python benchmarks/fork_heap.py                    # preloads, not frozen
    python benchmarks/fork_heap.py --freeze           # preloads, frozen
    python benchmarks/fork_heap.py --parent light -p 20
    python benchmarks/fork_heap.py --freeze --storage zeo   # a ZEO client's work
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

PHASES = ("add", "update")


def work(path: str, n: int) -> dict[str, float]:
    """Seconds of an add of *n* objects, then of their update, on a FileStorage at *path*.

    A *path* of ``zeo:HOST:PORT`` is a ZEO server's address instead.  Beside
    each phase's seconds: its page faults (``PHASE_faults``) and context
    switches (``PHASE_switches``), from getrusage around the timed region.
    """
    import resource

    import transaction
    import ZODB.config
    from persistent.mapping import PersistentMapping

    from zodbshootout.workload.objects import BenchmarkObject, make_payloads

    config = f"<zodb>\n  cache-size {n + n // 10 + 100}\n"
    if path.startswith("zeo:"):
        config += f"  <zeoclient>\n    server {path[4:]}\n  </zeoclient>\n</zodb>\n"
    else:
        config += f"  <filestorage>\n    path {path}\n  </filestorage>\n</zodb>\n"
    db = ZODB.config.databaseFromString(config)
    try:
        with db.transaction() as conn:
            conn.root()["fork_heap"] = PersistentMapping()
        added, updated = make_payloads(0, n, 0, 128), make_payloads(0, n, 1, 128)

        def add() -> None:
            tm = transaction.TransactionManager()
            conn = db.open(tm)
            container = conn.root()["fork_heap"]
            for index, payload in enumerate(added):
                container[index] = BenchmarkObject(payload)
            tm.commit()
            conn.close()

        def update() -> None:
            tm = transaction.TransactionManager()
            conn = db.open(tm)
            container = conn.root()["fork_heap"]
            for index, payload in enumerate(updated):
                container[index].payload = payload
            tm.commit()
            conn.close()

        measured: dict[str, float] = {}
        for phase, run in (("add", add), ("update", update)):
            gc.collect()
            usage = resource.getrusage(resource.RUSAGE_SELF)
            start = time.perf_counter()
            run()
            measured[phase] = time.perf_counter() - start
            used = resource.getrusage(resource.RUSAGE_SELF)
            measured[f"{phase}_faults"] = used.ru_minflt - usage.ru_minflt
            measured[f"{phase}_switches"] = (used.ru_nvcsw + used.ru_nivcsw) - (
                usage.ru_nvcsw + usage.ru_nivcsw
            )
        return measured
    finally:
        db.close()


def fresh(path: str, n: int) -> dict[str, float]:
    command = [sys.executable, os.path.abspath(__file__), "--child", path, "-n", str(n)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    result: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return result


def forked(path: str, n: int) -> dict[str, float]:
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: work, answer, leave without the parent's cleanup
        os.close(reader)
        status = 1
        try:
            os.write(writer, json.dumps(work(path, n)).encode())
            status = 0
        finally:
            os._exit(status)
    os.close(writer)
    with os.fdopen(reader, "rb") as answer:
        data = answer.read()
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise SystemExit(f"the forked child failed (status {status})")
    result: dict[str, float] = json.loads(data)
    return result


def load_parent(parent: str, freeze: bool) -> int:
    """Import what the parent holds; freeze it if asked.  The objects the collector tracks."""
    import importlib

    import ZODB  # noqa: F401

    if parent == "preloads":
        from zodbshootout import storages

        for module in ["zodbshootout.concurrency.processes", *storages.preload_modules()]:
            importlib.import_module(module)
    gc.collect()
    if freeze:
        gc.freeze()
    return len(gc.get_objects()) + gc.get_freeze_count()


def pairs(storage: str, n: int, count: int) -> tuple[dict[str, list[float]], dict]:
    """*count* pairs, fresh then forked: ratios per phase, and both sides' faults and switches."""
    workdir = tempfile.mkdtemp(prefix="fork-heap-")
    ratios: dict[str, list[float]] = {phase: [] for phase in PHASES}
    counts: dict[str, list[float]] = {}
    servers = []
    try:
        where = {side: os.path.join(workdir, f"{side}.fs") for side in ("fresh", "forked")}
        if storage == "zeo":
            from floor import ZEOServer  # the bare loop's server, beside this script

            for side in where:  # one server per side, so neither side's data slows the other
                servers.append(ZEOServer(where[side]))
                where[side] = f"zeo:127.0.0.1:{servers[-1].port}"
        for _ in range(count):
            one = fresh(where["fresh"], n)
            other = forked(where["forked"], n)
            for phase in PHASES:
                ratios[phase].append(other[phase] / one[phase])
            for key in (key for key in one if key not in PHASES):
                counts.setdefault(f"{key} fresh", []).append(one[key])
                counts.setdefault(f"{key} forked", []).append(other[key])
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    return ratios, counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-n", type=int, default=1000, help="objects (default 1000)")
    parser.add_argument("-p", "--pairs", type=int, default=12, help="pairs (default 12)")
    parser.add_argument("--parent", choices=("preloads", "light"), default="preloads")
    parser.add_argument("--freeze", action="store_true", help="freeze the parent's heap")
    parser.add_argument(
        "--storage",
        choices=("filestorage", "zeo"),
        default="filestorage",
        help="where the work goes: a FileStorage, or a ZEO server (python -m ZEO.runzeo)",
    )
    parser.add_argument("--child", metavar="PATH", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(work(args.child, args.n)))
        return 0
    objects = load_parent(args.parent, args.freeze)
    before = os.getloadavg()
    ratios, counts = pairs(args.storage, args.n, args.pairs)
    after = os.getloadavg()
    frozen = "frozen" if args.freeze else "not frozen"
    print(f"parent: {args.parent} ({objects} objects, {frozen}); N = {args.n}; {args.pairs} pairs")
    for phase in PHASES:
        values = ratios[phase]
        print(
            f"{phase:>7}: forked ÷ fresh {statistics.median(values):.3f} "
            f"[{min(values):.3f} – {max(values):.3f}]"
        )
    for key, values in sorted(counts.items()):
        low, high = min(values), max(values)
        print(f"{key:>24}: median {statistics.median(values):g} [{low:g} – {high:g}]")
    print(f"load average {before[0]:.2f} before, {after[0]:.2f} after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
