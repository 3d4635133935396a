"""--work: each phase's work per transaction, counted exactly in the untimed warm-up.

Checked against what each phase must do (a cold read loads its N objects and
the 3 above them, one by one; prefetch asks for the N in one batch) and
against a ZEO server's own statistics (loads and stores it served), and the
gate of ``compare --fail-if-more-work`` against a run whose application
never prefetches.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

from zodbshootout.config.loader import load_config
from zodbshootout.options.run import RunOptions
from zodbshootout.results.work import counted_cells
from zodbshootout.run.runner import Runner

from conftest import run_cli
from support import configs
from support.local import runzeo

N = 40
# Objects a read loads besides the N measured ones: root, the tool's mapping,
# the worker's container.
OVERHEAD = 3
SUPPORT = pathlib.Path(__file__).parent.parent / "support"

EMBEDDED = {
    "filestorage": configs.filestorage("db"),
    "zeo": configs.embedded_zeo("db"),
    "sqlite": configs.sqlite("db"),
}


def work_run(config_path: str, data_dir: str):
    config = load_config(config_path, data_dir)
    options = RunOptions(
        object_counts=(N,),
        concurrencies=(1,),
        repetitions=1,
        work=True,
        phases=("cold", "prefetch", "hot", "steamin"),
    )
    result = Runner(config, options).run()
    assert not result.failures, result.failures
    return result


@pytest.mark.parametrize("kind", sorted(EMBEDDED))
def test_cold_loads_each_object_and_prefetch_batches_where_a_server_is(
    kind, write_config, data_dir
):
    result = work_run(write_config(EMBEDDED[kind]), data_dir)
    cells = {key.phase: work for key, work in counted_cells(result).items()}
    cold, prefetch, hot, steamin = (cells[p] for p in ("cold", "prefetch", "hot", "steamin"))
    for read in (cold, prefetch):
        assert read.transactions == 1
        assert read.totals["loads"] == N + OVERHEAD
        assert read.totals["server_loads"] == N + OVERHEAD
        assert read.totals["bytes_read"] > N * 128  # each state holds its 128-byte payload
        assert read.totals["stores"] == 0
    assert cold.totals["prefetch_calls"] == 0
    assert (prefetch.totals["prefetch_calls"], prefetch.totals["prefetched_objects"]) == (1, N)
    if kind == "filestorage":  # no server: no round trip to save
        assert cold.totals["round_trips"] == prefetch.totals["round_trips"] == 0
    elif kind == "zeo":  # one request per object, against one batch and the 3 above
        assert cold.totals["round_trips"] == N + OVERHEAD
        assert prefetch.totals["round_trips"] == OVERHEAD + 1
    else:  # SQLite: statements; prefetch reads the N states in one
        assert cold.totals["round_trips"] >= N + OVERHEAD
        assert prefetch.totals["round_trips"] < cold.totals["round_trips"] - N / 2
    # hot: the client cache (or the file) answers; steamin: the pickle cache.
    assert hot.totals["loads"] == N + OVERHEAD
    assert hot.totals["round_trips"] == 0
    assert steamin.totals["loads"] == steamin.totals["round_trips"] == 0
    # Only the counting pass counted: the timed repetition carries nothing.
    timed = [m.timing for m in result.measurements if not m.warmup]
    assert all(t.work is None for t in timed)
    if kind == "sqlite":  # no statement counter was on in the timed workers
        assert all(t.statements is None for t in timed)
    assert all(m.timing.work is not None for m in result.measurements if m.warmup)


def counted_by_the_server(config: str, data_dir: str, *where: str) -> dict[str, dict]:
    """Each timed phase's work and the server's own count (see support/work_child.py)."""
    command = [sys.executable, str(SUPPORT / "work_child.py"), config, data_dir, str(N), *where]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    records = {r["phase"]: r for r in json.loads(done.stdout)}
    assert set(records) == {"add", "update", "cold", "prefetch", "hot", "steamin", "open"}
    return records


def test_each_count_equals_the_zeo_servers_own(tmp_path, write_config, data_dir):
    with runzeo(tmp_path / "served.fs") as (_process, port):
        config = write_config(configs.zeo_client("zeo", port))
        records = counted_by_the_server(config, data_dir, "zeo", str(port))
    for phase, record in records.items():
        work, server = record["work"], record["server"]
        assert work["server_loads"] == server["loads"], (phase, record)
        assert work["stores"] == server["stores"], (phase, record)
    assert records["add"]["server"]["stores"] == N + 1  # the N objects and their container
    assert records["update"]["server"]["commits"] == 1
    assert records["cold"]["server"]["loads"] == N + OVERHEAD
    assert records["prefetch"]["server"]["loads"] == N + OVERHEAD
    assert records["prefetch"]["work"]["round_trips"] < records["cold"]["work"]["round_trips"]
    assert records["hot"]["server"]["loads"] == records["steamin"]["server"]["loads"] == 0


@pytest.mark.postgresql
@pytest.mark.slow
def test_round_trips_are_the_statements_postgresql_logs(write_config, data_dir):
    from support import privatepg

    reason = privatepg.unavailable()
    if reason:
        pytest.skip(reason)
    settings = {"log_statement": "all", "log_line_prefix": "%d|"}
    cluster = privatepg.PrivateCluster("zs_work", "Work-Pw-5Qz", settings).start()
    try:
        config = write_config(
            "%import relstorage\n<zodb pg>\n<relstorage>\n"
            f"<postgresql>\n dsn {cluster.dsn()}\n</postgresql>\n</relstorage>\n</zodb>\n"
        )
        records = counted_by_the_server(config, data_dir, "pglog", str(cluster.log), "zs_work")
    finally:
        cluster.stop()
    for phase in ("add", "update", "cold", "prefetch"):
        record = records[phase]
        assert record["work"]["round_trips"] == record["server"]["statements"], record
    # A looped phase opens and closes its connection between the barriers but
    # outside its clock: the server saw those statements, --work doesn't count them.
    for phase in ("hot", "steamin", "open"):
        record = records[phase]
        assert record["work"]["round_trips"] < record["server"]["statements"], record
    assert records["open"]["work"]["round_trips"] == 2  # psycopg2's BEGIN and the poll
    assert records["cold"]["work"]["server_loads"] == N + OVERHEAD
    assert records["prefetch"]["work"]["round_trips"] < records["cold"]["work"]["round_trips"]
    assert records["hot"]["work"]["round_trips"] == records["steamin"]["work"]["round_trips"] == 0


NEVER_PREFETCHES = """\
# An application that never prefetches: Connection.prefetch does nothing.
from ZODB.Connection import Connection

Connection.prefetch = lambda self, *args: None
"""


def test_compare_fails_when_a_run_does_more_round_trips(tmp_path, write_config):
    config = write_config(configs.embedded_zeo("db"))
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "sitecustomize.py").write_text(NEVER_PREFETCHES)

    def run(name: str, **env: str) -> str:
        data = tmp_path / f"data-{name}"
        data.mkdir()
        output = str(tmp_path / f"{name}.json")
        command = [sys.executable, "-m", "zodbshootout", config, "-n", str(N), "-c", "1"]
        command += ["-r", "1", "--work", "-q", "-o", output, "cold", "prefetch"]
        environment = {**os.environ, "ZODBSHOOTOUT_DATA": str(data), **env}
        done = subprocess.run(command, capture_output=True, text=True, env=environment)
        assert done.returncode == 0, done.stderr
        return output

    def compare(base: str, changed: str) -> subprocess.CompletedProcess[str]:
        return run_cli("compare", base, changed, "--fail-if-more-work", "round_trips")

    base = run("base")
    # The same workload again, while another process keeps a core busy.
    burner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        again = run("again")
    finally:
        burner.kill()
        burner.wait()
    skipped = run("skipped", PYTHONPATH=str(shim))
    assert compare(base, again).returncode == 0
    failed = compare(base, skipped)
    assert failed.returncode == 1, failed.stderr
    assert f"db, prefetch, {N} objects, concurrency 1: {OVERHEAD + 1} -> {N + OVERHEAD}" in (
        failed.stderr
    )
    # A run without counts can't be gated on them: one line, exit 2.
    document = json.loads(pathlib.Path(base).read_text())
    for row in document["measurements"]:
        row["work"] = None
    uncounted = tmp_path / "uncounted.json"
    uncounted.write_text(json.dumps(document))
    refused = compare(base, str(uncounted))
    assert refused.returncode == 2
    assert "uncounted.json has no work counts; make both runs with --work" in refused.stderr
