"""RelStorage with memcached as a shared cache: what each phase does to memcached.

Facts measured against RelStorage 4.3 (and asserted here, so a release that
changes them makes this test fail and the documentation get revisited):
writers store every committed object in memcached; a fresh reader process
does not read memcached for objects it has not seen change (its warm reads
go to the database); cold and prefetch empty memcached before reading.
"""

from __future__ import annotations

import socket

import pytest

from zodbshootout.config.loader import load_config
from zodbshootout.options.run import RunOptions
from zodbshootout.run.runner import Runner

from conftest import MYSQL_HOST, MYSQL_PORT
from support.local import memcached

pytestmark = [pytest.mark.memcached, pytest.mark.mysql]

N = 30
CONCURRENCY = 2


@pytest.fixture(scope="module")
def memcached_port():
    """This module's own memcached: its statistics move only with these tests."""
    with memcached() as port:
        yield port


def memcached_stats(port: int) -> dict[str, int]:
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"stats\r\n")
        data = b""
        while not data.endswith(b"END\r\n"):
            data += s.recv(65536)
    stats = {}
    for line in data.decode().splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2].isdigit():
            stats[parts[1]] = int(parts[2])
    return stats


@pytest.fixture
def mysql_mc_config(write_config, mysql_database, memcached_port):
    pytest.importorskip("pylibmc", reason="pylibmc is not installed")
    path = write_config(f"""
        <zodb mysql_mc>
          <relstorage>
            cache-servers 127.0.0.1:{memcached_port}
            cache-module-name relstorage.pylibmc_wrapper
            cache-prefix {mysql_database}
            <mysql>
              driver PyMySQL
              host {MYSQL_HOST}
              port {MYSQL_PORT}
              user root
              db {mysql_database}
            </mysql>
          </relstorage>
        </zodb>
    """)
    return path, memcached_port


def run_phases(config: tuple[str, int], data_dir: str, *phases: str) -> dict[str, int]:
    """Run the phases; return how memcached's counters moved meanwhile."""
    config_path, port = config
    before = memcached_stats(port)
    options = RunOptions(
        object_counts=(N,), concurrencies=(CONCURRENCY,), repetitions=1, phases=phases
    )
    result = Runner(load_config(config_path, data_dir), options).run()
    assert not result.failures, result.failures
    after = memcached_stats(port)
    return {key: after[key] - before.get(key, 0) for key in after}


def test_writes_fill_memcached_and_fresh_readers_do_not_read_it(mysql_mc_config, data_dir):
    moved = run_phases(mysql_mc_config, data_dir, "add", "update", "warm")
    # Every committed object state went to memcached, for both writes.
    assert moved["cmd_set"] >= 2 * N * CONCURRENCY
    # RelStorage 4.3: no lookups for objects a fresh process has not seen change.
    assert moved["cmd_get"] == 0
    assert moved["cmd_flush"] == 0  # warm clears nothing


def test_cold_and_prefetch_empty_memcached(mysql_mc_config, data_dir):
    moved = run_phases(mysql_mc_config, data_dir, "cold", "prefetch")
    # Each worker empties every cache, the shared one included, before each
    # phase, in the warm-up and in the repetition.
    assert moved["cmd_flush"] == 2 * 2 * CONCURRENCY


def test_table_explains_what_memcached_can_do(mysql_mc_config, data_dir):
    options = RunOptions(object_counts=(N,), concurrencies=(1,), repetitions=1, phases=("warm",))
    result = Runner(load_config(mysql_mc_config[0], data_dir), options).run()
    assert any("shared cache" in note and "warm" in note for note in result.notes)


def test_worker_0_counts_memcached_gets_per_phase(mysql_mc_config, data_dir):
    from zodbshootout.render.insight import SHARED_CACHE_HIT_RATE, insight_rows

    config_path, port = mysql_mc_config
    before = memcached_stats(port)
    options = RunOptions(
        object_counts=(N,), concurrencies=(CONCURRENCY,), repetitions=1, phases=("cold", "hot")
    )
    result = Runner(load_config(config_path, data_dir), options).run()
    assert not result.failures, result.failures
    after = memcached_stats(port)
    counted = [
        m.timing
        for m in result.measurements
        if m.timing.shared_cache_hits is not None and not m.warmup
    ]
    # Worker 0 of each timed read phase, not the others.
    assert sorted((t.phase, t.worker) for t in counted) == [("cold", 0), ("hot", 0)]
    # Server-wide counts over the phases only: within the whole run's.
    gets = sum(t.shared_cache_hits + t.shared_cache_misses for t in counted)
    assert 0 <= gets <= after["cmd_get"] - before["cmd_get"]
    rows = [r for r in insight_rows(result, CONCURRENCY, {}, []) if r.kind == SHARED_CACHE_HIT_RATE]
    assert [row.phase for row in rows] == ["cold", "hot"]
    # RelStorage 4.3 doesn't read memcached for these reads (see the first test).
    assert [row.cells[0].text for row in rows] == ["no gets", "no gets"]


def test_threads_sharing_one_client_still_read_memcacheds_counts(
    write_config, mysql_database, memcached_port, data_dir
):
    """--threads: the workers share the storage's pylibmc client; the tool's own
    statistics call must not use it (pylibmc clients are not thread-safe:
    'error 19 from get_stats: SERVER HAS FAILED')."""
    pytest.importorskip("pylibmc", reason="pylibmc is not installed")
    pytest.importorskip("MySQLdb", reason="mysqlclient is not installed")
    path = write_config(f"""
        <zodb mysql_mc>
          <relstorage>
            cache-servers 127.0.0.1:{memcached_port}
            cache-module-name relstorage.pylibmc_wrapper
            cache-prefix {mysql_database}t
            <mysql>
              driver MySQLdb
              host {MYSQL_HOST}
              port {MYSQL_PORT}
              user root
              db {mysql_database}
            </mysql>
          </relstorage>
        </zodb>
    """)
    options = RunOptions(
        object_counts=(N,),
        concurrencies=(4,),
        repetitions=1,
        mode="threads",
        phases=("add", "cold", "hot"),
    )
    result = Runner(load_config(path, data_dir), options).run()
    assert not result.failures, result.failures
    counted = [m.timing for m in result.measurements if m.timing.shared_cache_hits is not None]
    assert counted  # worker 0 read the counts in every timed phase


def test_a_shared_cache_that_only_took_writes_is_noted(mysql_mc_config, data_dir):
    options = RunOptions(
        object_counts=(N,), concurrencies=(1,), repetitions=1, phases=("add", "update", "warm")
    )
    result = Runner(load_config(mysql_mc_config[0], data_dir), options).run()
    assert not result.failures, result.failures
    sets = sum(m.timing.shared_cache_sets or 0 for m in result.measurements if not m.warmup)
    assert sets >= 2 * N  # every committed state, add and update
    from zodbshootout.render.notes import derived_notes

    noted = derived_notes(result)
    notes = [note for note in noted if "took" in note and "served no reads" in note]
    assert len(notes) == 1, noted
    assert f"{sets:,} writes" in notes[0]
