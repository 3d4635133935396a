"""How close are zodbshootout's numbers to the same ZODB work done by a bare loop?

Not a test: a measurement of the tool against a floor, to run by hand and to
paste into a report.  For each storage and object count it alternates, in
rounds, between

- the tool: ``zodbshootout CONF -c 1 -n N -r R add update cold hot steamin``;
- a bare loop doing the same ZODB work with ZODB's public API only (nothing of
  zodbshootout is imported for it): per repetition, a writer process (an empty
  container under the root, then the timed ``add`` and ``update``: a
  ``TransactionManager()``, ``db.open()``, the container, N objects,
  ``tm.commit()``, ``conn.close()``) and a fresh reader process (``cold``: the
  same around N reads; ``hot`` and ``steamin``: the reads on a connection
  opened beforehand, looped to at least 50 ms per sample, ``hot`` with the
  pickle cache emptied between two timed reads);

both on the same configuration (cache sizes written out, so the tool keeps
them), each on a database of its own.  Within a round the two sides take
turns of two repetitions each (``--chunk``), in the order ABBA, each turn
after a warm-up repetition of its own.  A ZEO run's speed on a shared
machine drops by 20 % for seconds at a time, and with each side's ten
repetitions in one go a round's ratio depended on which side such a
stretch fell on (the tool's samples come back to back, the bare loop's a
process each): one round read ZEO's add anywhere from 0.78 to 1.21, and
the median of 20 rounds 0.95; in turns of two, 0.95 to 0.99 over 8
rounds.  It prints, per storage, N and phase, tool rate ÷ bare-loop rate
(each the median of its repetitions' objects/s): the median and range over
the rounds, and the load average around each round.  1.00 means the
tool's number is the database's; below 1, the harness costs something
inside the timed region.

Usage (from a checkout, in the venv that has zodbshootout installed)::

    python benchmarks/floor.py                                # N=1000, 4 rounds
    python benchmarks/floor.py -n 1000 -n 100000 --rounds 2 -r 3
    python benchmarks/floor.py --kinds sqlite,zeo -r 5
    python benchmarks/floor.py --tool-option=--work          # with --work's counting
    python benchmarks/floor.py -n 100000 --chunk 0           # each side in one go

Kinds: filestorage, zeo (a ZEO server process: ``<embeddedzeo>`` for the
tool, ``python -m ZEO.runzeo`` for the bare loop), sqlite, postgresql
(127.0.0.1:5432, or ``--postgresql-port``, user postgres; skipped when
unreachable, and at an N whose commits need more locks than its lock table
holds: RelStorage takes one per object, and the default table holds 6,400, so
``-n 100000`` needs a server with ``max_locks_per_transaction`` of at least
1024) and mysql (MariaDB
127.0.0.1:3306, user root; only when named: RelStorage 4.3 needs the tool's
MariaDB adjustments there, which a bare loop doesn't have).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

PHASES = ("add", "update", "cold", "hot", "steamin")
DEFAULT_KINDS = ("filestorage", "zeo", "sqlite", "postgresql")
ALL_KINDS = (*DEFAULT_KINDS, "mysql")
OBJECT_BYTES = 128  # the tool's default object size (-s)
SAMPLE_SECONDS = 0.05  # looped phases last at least this long, like the tool's
ROOT_KEY = "floor"
MIB = 1024 * 1024
#: The PostgreSQL server's port on 127.0.0.1 (--postgresql-port).
POSTGRESQL = {"port": 5432}
#: More options for the tool's runs (--tool-option), e.g. --work.
TOOL_OPTIONS: list[str] = []


# -- configurations (the same text for the tool and the bare loop) --


def zodb_section(kind: str, n: int, where: str, name: str = "") -> str:
    """A ``<zodb>`` section for *kind* at *where* (a path, or a database name)."""
    header = f"<zodb {name}>" if name else "<zodb>"
    # What the tool would raise the caches to (see docs/phases.rst), written out,
    # with its margins, so that it has no note to make about them.
    pickle_cache = n + n // 10 + 100
    client_bytes = max(20 * MIB, 2 * (OBJECT_BYTES + 256) * n)
    object_max = max(16384, 64 * n + 1024)
    relstorage = (
        f"cache-local-mb {-(-client_bytes // MIB)}\n    cache-local-object-max {object_max}\n"
    )
    body = {
        "filestorage": f"<filestorage>\n    path {where}.fs\n  </filestorage>",
        "sqlite": f"<relstorage>\n    {relstorage}    <sqlite3>\n      driver sqlite3\n"
        f"      data-dir {where}\n    </sqlite3>\n  </relstorage>",
        "postgresql": f"<relstorage>\n    {relstorage}    <postgresql>\n      driver psycopg2\n"
        f"      dsn dbname={where} host=127.0.0.1 port={POSTGRESQL['port']} user=postgres\n"
        "    </postgresql>\n  </relstorage>",
        "mysql": f"<relstorage>\n    {relstorage}    <mysql>\n      driver MySQLdb\n"
        f"      host 127.0.0.1\n      user root\n      db {where}\n"
        "    </mysql>\n  </relstorage>",
    }
    if kind == "zeo":
        if name:  # the tool: its own server process
            inner = (
                f"<embeddedzeo>\n    cache-size {client_bytes}\n    <filestorage>\n"
                f"      path {where}.fs\n    </filestorage>\n  </embeddedzeo>"
            )
        else:  # the bare loop: a server at *where* (host:port)
            inner = (
                f"<zeoclient>\n    server {where}\n    cache-size {client_bytes}\n  </zeoclient>"
            )
    else:
        inner = body[kind]
    return f"{header}\n  cache-size {pickle_cache}\n  {inner}\n</zodb>\n"


def config_text(kind: str, n: int, where: str, name: str = "") -> str:
    imports = "%import relstorage\n" if kind in ("sqlite", "postgresql", "mysql") else ""
    if name and kind == "zeo":
        imports += "%import zodbshootout\n"
    return imports + zodb_section(kind, n, where, name)


# -- the bare loop (child processes; ZODB's public API only) --


def open_db(config: str) -> Any:
    import ZODB.config

    return ZODB.config.databaseFromString(config)


def bare_write(config: str, n: int) -> dict[str, float]:
    """Untimed: a new empty container.  Timed: add, then update."""
    import transaction
    from bare_loop_floor_workload_objs import BenchmarkObject
    from persistent.mapping import PersistentMapping

    db = open_db(config)
    try:
        with db.transaction() as conn:
            conn.root()[ROOT_KEY] = PersistentMapping({0: PersistentMapping()})
        added = [payload(i, 0) for i in range(n)]
        updated = [payload(i, 1) for i in range(n)]
        times = {}

        def add() -> None:
            tm = transaction.TransactionManager()
            conn = db.open(tm)
            container = conn.root()[ROOT_KEY][0]
            for index, data in enumerate(added):
                container[index] = BenchmarkObject(data)
            tm.commit()
            conn.close()

        def update() -> None:
            tm = transaction.TransactionManager()
            conn = db.open(tm)
            container = conn.root()[ROOT_KEY][0]
            for index, data in enumerate(updated):
                container[index].payload = data
            tm.commit()
            conn.close()

        times["add"] = timed(add)
        times["update"] = timed(update)
        return times
    finally:
        db.close()


def bare_read(config: str, n: int, loops: dict[str, int]) -> dict[str, Any]:
    """A fresh process: cold, then hot and steamin looped (calibrated when *loops* is empty)."""
    import transaction

    db = open_db(config)
    try:
        times: dict[str, Any] = {}
        read: list[bytes] = []

        def cold() -> None:
            tm = transaction.TransactionManager()
            conn = db.open(tm)
            container = conn.root()[ROOT_KEY][0]
            read[:] = [container[i].payload for i in range(n)]
            tm.commit()
            conn.close()

        times["cold"] = timed(cold)
        check(read, n)
        tm = transaction.TransactionManager()
        conn = db.open(tm)

        def read_all() -> None:
            container = conn.root()[ROOT_KEY][0]
            read[:] = [container[i].payload for i in range(n)]

        for phase, empty_first in (("hot", True), ("steamin", False)):
            count = loops.get(phase) or calibrate(read_all, conn if empty_first else None)
            gc.collect()
            seconds = 0.0
            if empty_first:
                for _ in range(count):
                    conn.cacheMinimize()
                    start = time.perf_counter()
                    read_all()
                    seconds += time.perf_counter() - start
            else:
                start = time.perf_counter()
                for _ in range(count):
                    read_all()
                seconds = time.perf_counter() - start
            check(read, n)
            times[phase] = seconds / count
            times[f"{phase}_loops"] = count
        tm.abort()
        conn.close()
        return times
    finally:
        db.close()


def timed(work: Callable[[], None]) -> float:
    gc.collect()
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def calibrate(read_all: Callable[[], None], conn: Any) -> int:
    """The smallest power of two of reads that lasts SAMPLE_SECONDS (untimed)."""
    if conn is not None:
        conn.cacheMinimize()
    start = time.perf_counter()
    read_all()
    once = max(time.perf_counter() - start, 1e-7)
    loops = 1
    while loops * once < SAMPLE_SECONDS:
        loops *= 2
    return loops


def payload(index: int, generation: int) -> bytes:
    label = f"0:{index}:{generation};".encode()
    return (label * (-(-OBJECT_BYTES // len(label))))[:OBJECT_BYTES]


def check(read: list[bytes], n: int) -> None:
    if read != [payload(i, 1) for i in range(n)]:
        raise SystemExit("the bare loop read something else than it wrote")


def child(argv: list[str]) -> None:
    """``floor.py --child write|read CONFIG_FILE N [LOOPS_JSON]``: one bare process."""
    role, config_file, n = argv[0], argv[1], int(argv[2])
    with open(config_file, encoding="utf-8") as f:
        config = f.read()
    if role == "write":
        print(json.dumps(bare_write(config, n)))
    else:
        print(json.dumps(bare_read(config, n, json.loads(argv[3]))))


# -- the parent: databases, servers, rounds --


def run_child(args: list[str], workdir: str) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=workdir + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", *args],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(done.stderr.strip().splitlines()[-1] if done.stderr else "failed")
    result: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return result


def bare_repetitions(config_file: str, n: int, repetitions: int, workdir: str) -> dict:
    """A warm-up repetition (calibrates the loops), then *repetitions*: seconds per phase."""
    samples: dict[str, list[float]] = {phase: [] for phase in PHASES}
    loops: dict[str, int] = {}
    for repetition in range(repetitions + 1):
        written = run_child(["write", config_file, str(n)], workdir)
        read = run_child(["read", config_file, str(n), json.dumps(loops)], workdir)
        if repetition == 0:
            loops = {phase: read[f"{phase}_loops"] for phase in ("hot", "steamin")}
            continue
        for phase in PHASES:
            samples[phase].append({**written, **read}[phase])
    return samples


def tool_repetitions(config_file: str, n: int, repetitions: int, out: str) -> dict:
    """zodbshootout's own samples: seconds per object-set per phase (one loop)."""
    command = [sys.executable, "-m", "zodbshootout", config_file, "-c", "1", "-n", str(n)]
    command += ["-r", str(repetitions), "-q", "-o", out, *TOOL_OPTIONS, *PHASES]
    if os.path.exists(out):
        os.remove(out)  # a failed run must not read the turn before's file
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    document: dict[str, Any] = {}
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            document = json.load(f)
    if done.returncode != 0:
        # -q: a cell's failure is in the result file, not on stderr.
        reasons = [f.get("reason", "") for f in document.get("failures", [])]
        lines = done.stderr.strip().splitlines()
        raise RuntimeError("; ".join(reasons) or (lines[-1] if lines else "failed"))
    samples: dict[str, list[float]] = {phase: [] for phase in PHASES}
    for m in document["measurements"]:
        if not m.get("warmup") and m["phase"] in samples:
            samples[m["phase"]].append(m["seconds"] / (m.get("loops") or 1))
    return samples


def rate(n: int, seconds: list[float]) -> float:
    return n / statistics.median(seconds)


def reachable(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return True
    except OSError:
        return False


def make_database(kind: str, name: str) -> None:
    """An empty SQL database *name* (dropped first if it exists)."""
    if kind == "postgresql":
        conn = postgresql_admin()
        conn.autocommit = True
        with conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name}")
            cursor.execute(f"CREATE DATABASE {name}")
        conn.close()
    elif kind == "mysql":
        import MySQLdb

        conn = MySQLdb.connect(host="127.0.0.1", user="root")
        cursor = conn.cursor()
        cursor.execute(f"DROP DATABASE IF EXISTS {name}")
        cursor.execute(f"CREATE DATABASE {name}")
        conn.close()


def postgresql_admin() -> Any:
    import psycopg2

    return psycopg2.connect(
        host="127.0.0.1", port=POSTGRESQL["port"], user="postgres", dbname="postgres"
    )


def postgresql_lock_shortfall(n: int) -> str | None:
    """Why a PostgreSQL cell at *n* would fail: RelStorage's lock per committed object.

    The parent only (the bare loop imports nothing of zodbshootout): the
    tool's own arithmetic of the server's lock table.
    """
    from zodbshootout.storages.relstorage import locks

    conn = postgresql_admin()
    try:
        with conn.cursor() as cursor:
            settings = locks.read_lock_table(cursor)
    finally:
        conn.close()
    if locks.needed(n, 1) <= locks.capacity(settings):
        return None
    return f"{locks.advice(settings, n, 1)}; or use another server (--postgresql-port)"


def drop_database(kind: str, name: str) -> None:
    if kind == "postgresql":
        conn = postgresql_admin()
        conn.autocommit = True
        with conn.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        conn.close()
    elif kind == "mysql":
        import MySQLdb

        conn = MySQLdb.connect(host="127.0.0.1", user="root")
        conn.cursor().execute(f"DROP DATABASE IF EXISTS {name}")
        conn.close()


class ZEOServer:
    """``python -m ZEO.runzeo`` on a port of 127.0.0.1 (the bare loop's server)."""

    def __init__(self, path: str) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ZEO.runzeo", "-a", f"127.0.0.1:{self.port}", "-f", path],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while not reachable(self.port):
            if time.monotonic() > deadline or self.process.poll() is not None:
                self.stop()
                raise RuntimeError("the ZEO server did not start")
            time.sleep(0.1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def measure_cell(
    kind: str, n: int, repetitions: int, workdir: str, tool_first: bool, chunk: int = 2
) -> tuple[dict[str, float], tuple[int, int]]:
    """One round of one storage and N: tool rate ÷ bare rate per phase (fresh databases).

    Also how many samples of a phase each side took (tool, bare).

    *tool_first*: which of the two runs first (the rounds alternate, so that
    a drift in the machine's speed within a round favours neither).
    *chunk*: the repetitions run in turns of this many per side (the tool a
    command of ``-r CHUNK`` each turn), so that both sides' samples are
    spread alike over the round; 0 runs each side's repetitions in one go.
    """
    cell = os.path.join(workdir, f"{kind}-{n}")
    shutil.rmtree(cell, ignore_errors=True)
    os.makedirs(cell)
    sql = kind in ("postgresql", "mysql")
    tool_where = "zodbshootout_floor_tool" if sql else os.path.join(cell, "tool")
    bare_where = "zodbshootout_floor_bare" if sql else os.path.join(cell, "bare")
    server = None
    try:
        if sql:
            make_database(kind, tool_where)
            make_database(kind, bare_where)
        if kind == "zeo":
            server = ZEOServer(bare_where + ".fs")
            bare_where = f"127.0.0.1:{server.port}"
        tool_conf = os.path.join(cell, "tool.conf")
        bare_conf = os.path.join(cell, "bare.conf")
        with open(tool_conf, "w", encoding="utf-8") as f:
            f.write(config_text(kind, n, tool_where, name=kind))
        with open(bare_conf, "w", encoding="utf-8") as f:
            f.write(config_text(kind, n, bare_where))
        out = os.path.join(cell, "tool.json")
        tool: dict[str, list[float]] = {phase: [] for phase in PHASES}
        bare: dict[str, list[float]] = {phase: [] for phase in PHASES}
        sides = {
            "tool": (tool, lambda count: tool_repetitions(tool_conf, n, count, out)),
            "bare": (bare, lambda count: bare_repetitions(bare_conf, n, count, workdir)),
        }
        order = ["tool", "bare"] if tool_first else ["bare", "tool"]
        for count in turns(repetitions, chunk):
            for side in order:
                samples, run = sides[side]
                settle(kind)
                for phase, seconds in run(count).items():
                    samples[phase].extend(seconds)
            order.reverse()  # ABBA...: a drift within the round favours neither side
    finally:
        if server is not None:
            server.stop()
        if sql:
            drop_database(kind, tool_where)
            drop_database(kind, bare_where)
        shutil.rmtree(cell, ignore_errors=True)
    ratios = {phase: rate(n, tool[phase]) / rate(n, bare[phase]) for phase in PHASES}
    return ratios, (len(tool["add"]), len(bare["add"]))


def turns(repetitions: int, chunk: int) -> list[int]:
    """How many repetitions each turn of a side runs: *chunk* at a time, the rest last."""
    if chunk <= 0 or chunk >= repetitions:
        return [repetitions]
    whole, rest = divmod(repetitions, chunk)
    return [chunk] * whole + ([rest] if rest else [])


def settle(kind: str) -> None:
    """Let the writes of the side that ran before land, so the next side doesn't pay for them.

    At N = 100000 the side that ran second was 5-15 % slower whichever it
    was: the kernel was still writing back the first side's files, and
    PostgreSQL checkpointing its WAL.
    """
    os.sync()
    if kind == "postgresql":
        conn = postgresql_admin()
        conn.autocommit = True
        with conn.cursor() as cursor:
            cursor.execute("CHECKPOINT")
        conn.close()
    time.sleep(1)


def available(kinds: list[str]) -> list[str]:
    ports = {"postgresql": POSTGRESQL["port"], "mysql": 3306}
    found = []
    for kind in kinds:
        if kind in ports and not reachable(ports[kind]):
            print(f"# {kind}: nothing listens on 127.0.0.1:{ports[kind]}, skipped")
            continue
        found.append(kind)
    return found


def uptime() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f}, {five:.2f}, {fifteen:.2f}"


def report(ratios: dict[tuple[str, int], list[dict[str, float]]]) -> None:
    print()
    print("tool ÷ bare loop (rate ratio; median [min – max] over rounds)")
    print(f"{'storage':<12} {'N':>7}  " + "  ".join(f"{p:>20}" for p in PHASES))
    for (kind, n), rounds in sorted(ratios.items()):
        cells = []
        for phase in PHASES:
            values = [r[phase] for r in rounds]
            median = statistics.median(values)
            cells.append(f"{median:.2f} [{min(values):.2f} – {max(values):.2f}]")
        print(f"{kind:<12} {n:>7}  " + "  ".join(f"{c:>20}" for c in cells))


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default=",".join(DEFAULT_KINDS), help="comma-separated")
    parser.add_argument("-n", type=int, action="append", help="object counts (default 1000)")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("-r", "--repetitions", type=int, default=10)
    parser.add_argument(
        "--chunk",
        type=int,
        default=2,
        metavar="K",
        help="each round runs the repetitions in turns of K per side, ABBA (default 2; "
        "0: each side's in one go)",
    )
    parser.add_argument("--postgresql-port", type=int, default=5432, help="on 127.0.0.1")
    parser.add_argument(
        "--tool-option",
        action="append",
        default=[],
        metavar="OPTION",
        help="one more option for the tool's runs, e.g. --tool-option=--work (repeatable)",
    )
    args = parser.parse_args()
    POSTGRESQL["port"] = args.postgresql_port
    TOOL_OPTIONS.extend(args.tool_option)
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = set(kinds) - set(ALL_KINDS)
    if unknown:
        parser.error(f"unknown kinds: {', '.join(sorted(unknown))} (known: {', '.join(ALL_KINDS)})")
    counts = args.n or [1000]
    kinds = available(kinds)
    options = f", tool options {' '.join(TOOL_OPTIONS)}" if TOOL_OPTIONS else ""
    turns_said = f" in turns of {args.chunk}" if 0 < args.chunk < args.repetitions else ""
    print(
        f"# start: {uptime()}; {args.rounds} rounds, -r {args.repetitions}{turns_said}, "
        f"N = {counts}{options}"
    )
    ratios: dict[tuple[str, int], list[dict[str, float]]] = {}
    workdir = tempfile.mkdtemp(prefix="zodbshootout-floor-")
    try:
        with open(os.path.join(workdir, f"{BARE_MODULE}.py"), "w", encoding="utf-8") as f:
            f.write(OBJECTS_MODULE)
        check_record_sizes(workdir)
        for round_number in range(1, args.rounds + 1):
            for n in counts:
                for kind in kinds:
                    shortfall = postgresql_lock_shortfall(n) if kind == "postgresql" else None
                    if shortfall:
                        print(f"# round {round_number} {kind} n={n}: skipped: {shortfall}")
                        continue
                    before = uptime()
                    try:
                        cell, samples = measure_cell(
                            kind, n, args.repetitions, workdir, round_number % 2 == 1, args.chunk
                        )
                    except RuntimeError as e:
                        print(f"# round {round_number} {kind} n={n}: failed: {e}")
                        continue
                    ratios.setdefault((kind, n), []).append(cell)
                    shown = " ".join(f"{p} {cell[p]:.2f}" for p in PHASES)
                    taken = f"{samples[0]} + {samples[1]} samples"
                    print(
                        f"# round {round_number} {kind} n={n}: {shown} ({taken}; {before})",
                        flush=True,
                    )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    report(ratios)
    print(f"# end: {uptime()}")
    return 0


#: The bare loop's persistent class, in a module of its own so that the
#: writer and the reader unpickle the same class (written to the work dir).
#: The bare loop's class: every ZODB record names its class, so the bare
#: loop's module and class names are as long as the tool's
#: (zodbshootout.workload.objects.BenchmarkObject) and its records exactly as
#: large; with a shorter name they were 28 bytes (16 %) smaller, which
#: FileStorage's add and update wrote that much faster.
BARE_MODULE = "bare_loop_floor_workload_objs"
OBJECTS_MODULE = """
from persistent import Persistent


class BenchmarkObject(Persistent):
    def __init__(self, payload):
        self.payload = payload
"""


def check_record_sizes(workdir: str) -> None:
    """Exit unless the bare loop's object records are as large as the tool's (untimed, once)."""
    import importlib

    import transaction
    import ZODB

    from zodbshootout.workload.objects import BenchmarkObject

    sys.path.insert(0, workdir)
    try:
        bare = importlib.import_module(BARE_MODULE).BenchmarkObject
    finally:
        sys.path.remove(workdir)
    db = ZODB.DB(None)
    try:
        tm = transaction.TransactionManager()
        conn = db.open(tm)
        objects = [cls(payload(7, 0)) for cls in (BenchmarkObject, bare)]
        conn.root()["objects"] = objects
        tm.commit()
        sizes = {len(db.storage.load(o._p_oid)[0]) for o in objects}
        conn.close()
    finally:
        db.close()
    if len(sizes) != 1:
        raise SystemExit(f"the bare loop's records differ in size from the tool's: {sizes}")


if __name__ == "__main__":
    sys.exit(main())
