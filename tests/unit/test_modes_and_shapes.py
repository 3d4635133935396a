"""Concurrency modes and object shapes: options, containers, blob caches, per-thread counts.

Fast: no worker processes, no servers; databases are in memory.
"""

from __future__ import annotations

import contextlib
import io
import os
import threading

import pytest
import transaction
import ZODB
from BTrees.IOBTree import IOBTree
from BTrees.OOBTree import OOBTree
from persistent.mapping import PersistentMapping
from ZODB.MappingStorage import MappingStorage

from zodbshootout import concurrency, storages
from zodbshootout.cli import entry as cli
from zodbshootout.cli.arguments import build_parser
from zodbshootout.cli.measure import options_from_args
from zodbshootout.concurrency import thread_counting, threads
from zodbshootout.config.loader import ConfigSource, parse_source
from zodbshootout.options.run import RunOptions
from zodbshootout.workload import blobs
from zodbshootout.workload import containers as workload
from zodbshootout.workload.objects import BenchmarkObject
from zodbshootout.workload.root import ROOT_KEY, populate


def options_for(*argv: str) -> RunOptions:
    args = build_parser().parse_args(["x.conf", *argv])
    return options_from_args(args)


def run_main(*argv: str) -> tuple[int, str]:
    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, err.getvalue()


# -- options --


def test_processes_are_the_default_mode():
    options = options_for()
    assert (options.mode, options.btrees, options.blobs) == ("processes", None, False)


def test_threads_without_a_value_share_one_db():
    assert (options_for("--threads").mode, options_for("--threads").sharing) == (
        "threads",
        "shared",
    )
    assert options_for("--threads", "unique").sharing == "unique"


def test_gevent_implies_threads_and_keeps_the_sharing():
    pytest.importorskip("gevent", reason="the gevent extra is not installed")
    assert (options_for("--gevent").mode, options_for("--gevent").sharing) == (
        "gevent",
        "shared",
    )
    assert options_for("--gevent", "--threads", "unique").sharing == "unique"


def test_btrees_without_a_value_means_iobtree():
    assert options_for("--btrees").btrees == "IO"
    assert options_for("--btrees", "OO").btrees == "OO"
    assert options_for("--blobs").blobs is True


def test_an_unknown_sharing_is_a_one_line_usage_error():
    code, err = run_main("x.conf", "--threads", "private")
    assert code == 2
    assert "invalid choice: 'private'" in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("mode", "fibers", "unknown concurrency mode 'fibers'"),
        ("sharing", "some", "--threads takes shared or unique"),
        ("btrees", "LL", "--btrees takes IO or OO"),
    ],
)
def test_run_options_refuse_unknown_modes_and_shapes(field, value, message):
    with pytest.raises(ValueError, match=message):
        RunOptions(**{field: value})


# -- containers --


def test_container_kinds():
    assert workload.container_factory(None) is PersistentMapping
    assert workload.container_factory("IO") is IOBTree
    assert workload.container_factory("OO") is OOBTree
    assert workload.describe_container("OO") == "OOBTree"


@pytest.mark.parametrize("kind", ["IO", "OO"])
def test_populate_gives_each_worker_a_btree(kind):
    db = ZODB.DB(MappingStorage())
    try:
        populate(db, 3, workload.container_factory(kind))
        with db.transaction() as conn:
            top = conn.root()[ROOT_KEY]
            assert [type(top[w]).__name__ for w in range(3)] == [f"{kind}BTree"] * 3
    finally:
        db.close()


# -- blob caches --


class _FakeZEOClient:
    """Looks like ZEO's ClientStorage to blobs.client_blob_cache_dir."""

    def __init__(self, blob_dir, shared):
        self.blob_dir = blob_dir
        self.shared_blob_dir = shared


_FakeZEOClient.__module__ = "ZEO.ClientStorage"


def test_only_a_client_blob_cache_is_emptied(tmp_path):
    cache = tmp_path / "cache"
    (cache / "0x00" / "0x01").mkdir(parents=True)
    (cache / "0x00" / "0x01" / "0x03.blob").write_bytes(b"x")
    (cache / "0x00" / "0x02.blob").write_bytes(b"y")
    (cache / ".layout").write_text("zeocache")
    assert blobs.clear_blob_cache(_FakeZEOClient(str(cache), shared=False)) == 2
    assert sorted(p.name for p in cache.rglob("*") if p.is_file()) == [".layout"]
    # A shared blob directory holds the only copy: never touched.
    (cache / "0x00" / "0x02.blob").write_bytes(b"y")
    assert blobs.clear_blob_cache(_FakeZEOClient(str(cache), shared=True)) == 0
    assert (cache / "0x00" / "0x02.blob").exists()


def test_filestorage_blob_dir_is_not_a_cache(tmp_path):
    from ZODB.FileStorage import FileStorage

    storage = FileStorage(str(tmp_path / "a.fs"), blob_dir=str(tmp_path / "blobs"))
    try:
        assert blobs.client_blob_cache_dir(storage) is None
    finally:
        storage.close()


# -- modes --

FILESTORAGE_TEXT = """
<zodb fs>
  <filestorage>
    path {path}
  </filestorage>
</zodb>
"""


def test_only_processes_refuse_a_filestorage_with_several_workers(tmp_path):
    text = FILESTORAGE_TEXT.format(path=tmp_path / "fs.fs")
    factory = parse_source(ConfigSource(text, (tmp_path / "t.conf").as_uri(), "")).databases["fs"]
    assert "only one process" in concurrency.mode_problem("processes", "shared", 2, factory)
    assert concurrency.mode_problem("processes", "shared", 1, factory) is None
    assert concurrency.mode_problem("threads", "shared", 2, factory) is None
    assert concurrency.mode_problem("threads", "unique", 2, factory) is None


def test_a_worker_gets_its_own_connection_back_from_a_shared_pool():
    db = ZODB.DB(MappingStorage())
    try:
        mine = threads._OwnConnectionView(db)
        other = threads._OwnConnectionView(db)
        first = mine.open(transaction.TransactionManager())
        theirs = other.open(transaction.TransactionManager())
        first.close()
        theirs.close()  # now on top of the pool: DB.open would hand it out
        assert mine.open(transaction.TransactionManager()) is first
        assert db.open() is theirs
    finally:
        db.close()


def test_unique_dbs_over_one_storage_see_each_others_commits(tmp_path):
    """--threads unique on a FileStorage: one storage, one DB per worker, invalidations shared."""
    text = FILESTORAGE_TEXT.format(path=tmp_path / "fs.fs")
    source = ConfigSource(text, (tmp_path / "t.conf").as_uri(), str(tmp_path))
    session = concurrency.ThreadSession(
        concurrency.SessionSpec(source, "fs", (), 2, "threads", "unique")
    )
    try:
        session.populate(lambda db: populate(db, 2))
        one = session._open("0")
        two = session._open("1")
        c2 = two.open(transaction.TransactionManager())
        assert len(c2.root()[ROOT_KEY][0]) == 0  # cached in two's connection
        c2.transaction_manager.abort()
        c2.close()
        with one.transaction() as c1:
            c1.root()[ROOT_KEY][0][0] = BenchmarkObject(b"written by one")
        c2 = two.open(transaction.TransactionManager())
        assert c2.root()[ROOT_KEY][0][0].payload == b"written by one"
        c2.transaction_manager.abort()
        c2.close()
        one.close()
        two.close()
        assert os.path.exists(tmp_path / "fs.fs.lock")  # the storage is still open
    finally:
        session.close()


@pytest.mark.parametrize("counters", [True, False], ids=["setstate", "transfer-counts"])
def test_thread_meters_count_each_threads_loads_apart(counters):
    """With --counters each thread's loads are counted as they happen; without,
    from ZODB's own per-connection load counts of the connections it used."""
    thread_counting.install()
    storages.count_requests(counters)
    db = ZODB.DB(MappingStorage())
    try:
        populate(db, 2)
        with db.transaction() as conn:
            for worker, count in ((0, 5), (1, 9)):
                for index in range(count):
                    conn.root()[ROOT_KEY][worker][index] = BenchmarkObject(b"p")
        db.cacheMinimize()
        counted = {}
        # Both hold a connection at once, so each loads into its own.
        both_open = threading.Barrier(2)

        def read(worker, count):
            own: list = []
            meter = thread_counting.ThreadMeter(db, worker, True, frozenset(), lambda: own)
            meter.start()
            conn = db.open(transaction.TransactionManager())
            own.append(conn)
            both_open.wait(10)
            container = conn.root()[ROOT_KEY][worker]
            for index in range(count):
                container[index].payload  # noqa: B018 (the load is the point)
            conn.close()
            counted[worker] = meter.stop()

        threads = [threading.Thread(target=read, args=a) for a in ((0, 5), (1, 9))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # Each thread: root, the tool's mapping, its container, its objects.
        assert counted[0].loads == 3 + 5
        assert counted[1].loads == 3 + 9
        assert counted[1].storage_loads == counted[1].loads  # memory: every load hits it
    finally:
        storages.count_requests(False)
        db.close()


def test_gevent_without_gevent_installed_is_a_usage_error(monkeypatch):
    from zodbshootout.concurrency import gevent as gevent_host

    real_find_spec = gevent_host.importlib.util.find_spec
    monkeypatch.setattr(
        gevent_host.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "gevent" else real_find_spec(name, *a),
    )
    code, err = run_main("x.conf", "--gevent")
    assert code == 2
    assert err.strip() == (
        "zodbshootout: error: --gevent needs gevent: pip install '.[gevent]' in the zodbshootout "
        "checkout"
    )
