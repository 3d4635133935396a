"""A real application nobody here wrote, recorded: zope.catalog indexing documents.

Two thousand generated documents are registered with zope.intid and
indexed by a zope.catalog Catalog (a field, a text and a keyword index)
into a FileStorage through the recorder, then searched; the analyzer's
operation mix and size distributions must equal what the storage itself
was asked, counted independently: by a FileStorage subclass beneath the
recorder (each load, store, new oid and commit it served, with its size)
and by the FileStorage's own records on disk (each data record's size).
"""

from __future__ import annotations

import collections
import json
import random

import pytest

pytest.importorskip("zope.catalog")

import persistent.interfaces
import transaction
import ZODB
import ZODB.interfaces
from BTrees.OOBTree import OOBTree
from persistent import Persistent
from ZODB.FileStorage import FileStorage
from zope.catalog.catalog import Catalog
from zope.catalog.field import FieldIndex
from zope.catalog.keyword import KeywordIndex
from zope.catalog.text import TextIndex
from zope.component import getGlobalSiteManager
from zope.interface import Attribute, Interface, implementer
from zope.intid import IntIds
from zope.keyreference.persistent import (
    KeyReferenceToPersistent,
    connectionOfPersistent,
)

from zodbshootout.recording import record
from zodbshootout.recording.analysis import Feed
from zodbshootout.recording.format import Op
from zodbshootout.recording.reader import open_trace
from zodbshootout.recording.stats import size_class, trace_stats
from zodbshootout.results.trace_analysis import TraceAnalysis

from conftest import run_cli
from support.traces import counts, recorded_config, setup_pid, traces_of

DOCUMENTS = 2000
WORDS = [f"word{i}" for i in range(500)]


class IDocument(Interface):
    title = Attribute("the title")
    body = Attribute("the text")
    tags = Attribute("keywords")


@implementer(IDocument)
class Document(Persistent):
    def __init__(self, title: str, body: str, tags: list[str]) -> None:
        self.title, self.body, self.tags = title, body, tags


class CountingFileStorage(FileStorage):
    """A FileStorage that counts what it served, beneath the recorder."""

    def __init__(self, *args, **kwargs):
        self.served = collections.Counter()
        self.load_sizes = collections.Counter()
        self.store_sizes = collections.Counter()
        super().__init__(*args, **kwargs)

    def loadBefore(self, oid, tid):
        result = super().loadBefore(oid, tid)
        if result is not None:
            self.served["load"] += 1
            self.load_sizes[len(result[0])] += 1
        return result

    def store(self, oid, serial, data, version, txn):
        self.served["store"] += 1
        self.store_sizes[len(data)] += 1
        return super().store(oid, serial, data, version, txn)

    def new_oid(self):
        self.served["new_oid"] += 1
        return super().new_oid()

    def tpc_finish(self, *args, **kwargs):
        self.served["commit"] += 1
        return super().tpc_finish(*args, **kwargs)


@pytest.fixture(scope="module")
def key_references():
    """zope.intid's adapters, registered as an application's configuration would."""
    registry = getGlobalSiteManager()
    adapters = [
        (KeyReferenceToPersistent, (persistent.interfaces.IPersistent,), None),
        (connectionOfPersistent, (persistent.interfaces.IPersistent,), ZODB.interfaces.IConnection),
    ]
    for factory, required, provided in adapters:
        registry.registerAdapter(factory, required, provided)
    yield
    for factory, required, provided in adapters:
        registry.unregisterAdapter(factory, required, provided)


def index_and_search(db: ZODB.DB) -> int:
    """The application: a catalog, documents indexed in batches, then searches."""
    rng = random.Random(1)
    with db.transaction() as conn:
        root = conn.root()
        root["documents"] = OOBTree()
        root["intids"] = IntIds()
        catalog = root["catalog"] = Catalog()
        catalog["title"] = FieldIndex("title", IDocument)
        catalog["body"] = TextIndex("body", IDocument)
        catalog["tags"] = KeywordIndex("tags", IDocument)
    for batch in range(DOCUMENTS // 200):
        with db.transaction() as conn:
            root = conn.root()
            for n in range(batch * 200, batch * 200 + 200):
                body = " ".join(rng.choices(WORDS, k=30))
                document = Document(f"document {n}", body, rng.sample("abcde", 2))
                root["documents"][n] = document
                conn.add(document)
                root["catalog"].index_doc(root["intids"].register(document), document)
    found = 0
    with db.transaction() as conn:
        conn.cacheMinimize()  # the searches load from the storage
        catalog, intids = conn.root()["catalog"], conn.root()["intids"]
        for _ in range(30):
            for docid in catalog.apply({"body": rng.choice(WORDS)}):
                found += bool(intids.getObject(docid).title)
    return found


@pytest.fixture(scope="module")
def application(tmp_path_factory, key_references):
    """The application run once through the recorder: (its storage, its trace files, its dir)."""
    tmp_path = tmp_path_factory.mktemp("catalog")
    storage = CountingFileStorage(str(tmp_path / "Data.fs"))
    recorded = record(storage, str(tmp_path / "app"))
    db = ZODB.DB(recorded)
    try:
        assert index_and_search(db) > 100
    finally:
        db.close()
        transaction.abort()
    return storage, list(recorded.recording.files_written), tmp_path


def test_the_analyzer_counts_what_a_catalog_application_asked_of_its_storage(application):
    storage, files, tmp_path = application
    traces = [open_trace(path) for path in files]
    analysis = TraceAnalysis()
    stats = trace_stats(traces, Feed(analysis, traces))
    summary = analysis.summary()

    # The operation mix, as the storage beneath counted it.
    served = storage.served
    assert stats.calls[Op.LOAD] == summary.loads == served["load"] > 1000
    assert stats.calls[Op.STORE] == summary.stores == served["store"] > DOCUMENTS
    assert stats.calls[Op.NEW_OID] == served["new_oid"]
    assert stats.calls[Op.TPC_FINISH] == stats.committed == served["commit"]
    # The only failed call: the root's load in the new database.
    assert dict(stats.errors) == {Op.LOAD: 1}

    # The size distributions, exactly.
    assert analysis.load_sizes == storage.load_sizes
    assert analysis.store_sizes == storage.store_sizes
    # ... and the stored sizes as the FileStorage's records on disk have them.
    on_disk = collections.Counter()
    reopened = FileStorage(str(tmp_path / "Data.fs"), read_only=True)
    try:
        for txn in reopened.iterator():
            for data_record in txn:
                on_disk[len(data_record.data)] += 1
    finally:
        reopened.close()
    assert analysis.store_sizes == on_disk
    classes = collections.Counter()
    for size, count in on_disk.items():
        classes[size_class(size)] += count
    assert {size: entry[0] for size, entry in stats.store_sizes.items()} == classes
    assert summary.store_sizes.max == max(on_disk)


def test_the_catalog_trace_replays_on_sqlite_and_zeo_call_for_call(application, tmp_path):
    """Replayed on two other storages, each itself recorded: the same stores and commits.

    Loads equal the recording's plus the re-reads the replay reports apart
    (an object another connection changed, read again before it is written).
    """
    _storage, files, _app_dir = application
    replayed = tmp_path / "replayed"
    replayed.mkdir()
    config = recorded_config(tmp_path / "replay.conf", replayed, ["sqlite", "zeo_fs"])
    result = tmp_path / "replay.json"
    done = run_cli("replay", *files, config, "-q", "-o", str(result), timeout=240)
    assert done.returncode == 0, done.stderr
    recorded = counts(files)
    assert recorded["stores"] > DOCUMENTS
    saved = json.loads(result.read_text())
    assert {r["database"] for r in saved["mix"]} == {"sqlite", "zeo_fs"}
    for entry in saved["mix"]:
        name = entry["database"]
        # The runner's set-up process writes the dataset: its calls are not the replay's.
        issued = counts(traces_of(str(replayed), name, but_pid=setup_pid(str(replayed), name)))
        reloads = entry["replay"]["reloads"]
        assert issued == {**recorded, "loads": recorded["loads"] + reloads}, name
