"""Concurrency modes: processes, --threads shared|unique and --gevent, on every embedded storage.

The truth of each phase must hold whatever runs the workers: cold and
prefetch fetch all N objects from the storage, hot makes no server request,
steamin no load at all — per worker, also when the workers are threads that
share one DB and one storage client.
"""

from __future__ import annotations

import pytest

from zodbshootout.config.loader import load_config
from zodbshootout.options.run import RunOptions
from zodbshootout.phases.classic import PHASES
from zodbshootout.run.runner import Runner

from conftest import run_cli
from support import configs

N = 30
C = 2

# FileStorage opened directly, ZEO over loopback, RelStorage on SQLite.  The
# SQLite section names gevent's driver: the plain one is refused with --gevent.
STORAGES = """
    %import zodbshootout
    %import relstorage
    <zodb fs>
      <filestorage>
        path $(ZODBSHOOTOUT_DATA)/fs.fs
      </filestorage>
    </zodb>
    <zodb zeo>
      <embeddedzeo>
        <filestorage>
          path $(ZODBSHOOTOUT_DATA)/zeo.fs
        </filestorage>
      </embeddedzeo>
    </zodb>
    <zodb sqlite>
      <relstorage>
        <sqlite3>
          driver gevent sqlite3
          data-dir $(ZODBSHOOTOUT_DATA)/sqlite
        </sqlite3>
      </relstorage>
    </zodb>
"""

# (mode, sharing) → what RunResult.metadata records.
MODES = {
    ("processes", "shared"): "processes",
    ("threads", "shared"): "threads:shared",
    ("threads", "unique"): "threads:unique",
    ("gevent", "shared"): "gevent:shared",
    ("gevent", "unique"): "gevent:unique",
}


def run(config_path: str, data_dir: str, mode: str, sharing: str, concurrency: int = C):
    config = load_config(config_path, data_dir)
    options = RunOptions(
        object_counts=(N,),
        concurrencies=(concurrency,),
        repetitions=1,
        mode=mode,
        sharing=sharing,
        timeout_seconds=120,
        counters=True,  # storage loads are counted only with --counters
    )
    return Runner(config, options).run()


def timings_of(result, database):
    by_phase: dict[str, list] = {}
    for m in result.measurements:
        if m.database == database and not m.warmup:
            by_phase.setdefault(m.phase, []).append(m.timing)
    return by_phase


def assert_phases_are_true(result, database: str, workers: int, where: str) -> None:
    assert not [f for f in result.failures if f.database == database], result.failures
    by_phase = timings_of(result, database)
    assert sorted(by_phase) == sorted(PHASES), where
    for phase, timings in by_phase.items():
        assert sorted(t.worker for t in timings) == list(range(workers)), (where, phase)
        assert all(t.seconds > 0 for t in timings)
    for phase in ("cold", "prefetch"):
        for t in by_phase[phase]:
            assert t.loads >= N, (where, phase, t)
            assert t.storage_loads is not None, (where, phase, t)
            assert t.storage_loads >= N, (where, phase, t)
    for t in by_phase["hot"]:
        assert t.loads >= N, (where, t)
        if database == "fs":
            # No client cache: every load reads the file.
            assert t.storage_loads == t.loads, (where, t)
        else:
            assert t.storage_loads == 0, (where, t)
    for t in by_phase["steamin"]:
        assert t.loads == 0, (where, t)
        assert t.storage_loads == 0, (where, t)


# Combinations that can't run with several workers, and why (the footnote).
ONE_WORKER_ONLY = {
    ("fs", "processes", "shared"): "FileStorage can be opened by only one process",
    ("zeo", "gevent", "unique"): "use --gevent with --threads shared",
}


@pytest.mark.zeo
@pytest.mark.parametrize(("mode", "sharing"), list(MODES), ids=list(MODES.values()))
def test_every_phase_is_true_in_every_mode(write_config, data_dir, mode, sharing):
    if mode == "gevent":
        pytest.importorskip("gevent", reason="the gevent extra is not installed")
    path = write_config(STORAGES)
    result = run(path, data_dir, mode, sharing)
    assert result.metadata["concurrency_mode"] == MODES[(mode, sharing)]
    for database in ("fs", "zeo", "sqlite"):
        where = f"{database} in {MODES[(mode, sharing)]}"
        reason = ONE_WORKER_ONLY.get((database, mode, sharing))
        if reason is None:
            assert_phases_are_true(result, database, C, where)
            continue
        reasons = [f.reason for f in result.failures if f.database == database]
        assert reasons, result.failures
        assert reason in reasons[0]
        # With one worker it is measured, and true.
        single = write_config(_only(database), name=f"{database}.conf")
        alone = run(single, data_dir, mode, sharing, concurrency=1)
        assert_phases_are_true(alone, database, 1, f"{where}, -c 1")


def _only(database: str) -> str:
    """The STORAGES section of *database* alone."""
    body = STORAGES.split(f"<zodb {database}>")[1].split("</zodb>")[0]
    return f"%import zodbshootout\n%import relstorage\n<zodb {database}>{body}</zodb>\n"


@pytest.mark.zeo
def test_shared_zeo_client_requests_are_split_not_repeated(write_config, data_dir):
    """With one shared ZEO client, the workers' counts add up to what was sent.

    Each worker counts the requests for its own objects (container + N); the
    root and the tool's mapping, which every worker loads, count once.
    """
    path = write_config(STORAGES)
    result = run(path, data_dir, "threads", "shared")
    cold = timings_of(result, "zeo")["cold"]
    assert sum(t.storage_loads for t in cold) == C * (N + 1) + 2
    # The shared client cache's hits are one total, kept by worker 0 only.
    hits = {t.worker: t.cache_hits for t in timings_of(result, "zeo")["hot"]}
    assert hits[1] is None
    assert hits[0] >= C * N


def test_filestorage_with_threads_and_two_workers_is_measured(write_config):
    path = write_config(configs.filestorage("fs"))
    done = run_cli(path, "-n", "20", "-c", "2", "-r", "1", "-q", "--threads")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    rows = done.stdout.splitlines()[1:8]
    assert len(rows) == 7
    for row in rows:
        assert int(row.split(",")[-1]) > 0, row
    assert "[1]" not in done.stdout
    # The table says what its warm row measured.
    assert "Note: workers ran as threads sharing one DB: warm read through" in done.stdout
    # Worker processes can't share it: there the cells say why.
    done = run_cli(path, "-n", "20", "-c", "2", "-r", "1", "-q")
    assert done.returncode == 1
    assert "FileStorage can be opened by only one process" in done.stdout


def test_unique_threads_give_each_worker_its_own_filestorage_db(write_config, data_dir):
    """One DB per thread over one FileStorage: each worker's writes are seen by the others."""
    path = write_config(STORAGES.split("<zodb zeo>")[0].replace("%import zodbshootout", ""))
    result = run(path, data_dir, "threads", "unique", concurrency=3)
    assert not result.failures, result.failures
    cold = timings_of(result, "fs")["cold"]
    assert sorted(t.worker for t in cold) == [0, 1, 2]


def test_gevent_refuses_a_driver_that_blocks_the_event_loop(write_config):
    pytest.importorskip("gevent", reason="the gevent extra is not installed")
    path = write_config("""
        %import relstorage
        <zodb sqlite>
          <relstorage>
            <sqlite3>
              driver sqlite3
              data-dir $(ZODBSHOOTOUT_DATA)/sqlite
            </sqlite3>
          </relstorage>
        </zodb>
    """)
    done = run_cli(path, "-n", "10", "-c", "1", "-r", "1", "-q", "--gevent")
    # Its only database could not be measured at all: nothing was run.
    assert done.returncode == 2, f"{done.stdout}\n{done.stderr}"
    assert "'sqlite3' blocks gevent's event loop" in done.stderr
    assert "driver gevent sqlite3" in done.stderr
    assert "Traceback" not in done.stderr


def test_gevent_leaves_the_runner_unpatched(write_config, data_dir):
    """Monkey-patching happens in the child: this (test) process keeps real threads."""
    pytest.importorskip("gevent", reason="the gevent extra is not installed")
    from gevent import monkey

    path = write_config(STORAGES.split("<zodb zeo>")[0].replace("%import zodbshootout", ""))
    result = run(path, data_dir, "gevent", "shared", concurrency=1)
    assert not result.failures, result.failures
    assert not monkey.is_module_patched("socket")
    assert not monkey.is_module_patched("threading")
