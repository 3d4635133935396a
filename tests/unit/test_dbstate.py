"""--zap, --pack and --min-objects: parsing, confirmation, and their effect on a database.

Storages here are in-process (MappingStorage, FileStorage in tmp_path); the
integration tests drive the same code through the command and the embedded
storages.
"""

from __future__ import annotations

import pytest
import transaction
import ZODB
from ZODB.FileStorage import FileStorage
from ZODB.MappingStorage import MappingStorage

from zodbshootout import storages
from zodbshootout.config.loader import ConfigSource, parse_source
from zodbshootout.database import state as dbstate
from zodbshootout.errors import UsageError
from zodbshootout.workload.root import ROOT_KEY, ForeignDataError, populate

DATABASES = ["zeo_fs", "sqlite", "zeo_pcache"]


def commit_root(db, **items):
    tm = transaction.TransactionManager()
    conn = db.open(transaction_manager=tm)
    conn.root().update(items)
    tm.commit()
    conn.close()


def root_keys(db):
    conn = db.open()
    try:
        return sorted(conn.root().keys())
    finally:
        conn.close()


# -- the --zap value and its confirmation --


@pytest.mark.parametrize(
    ("value", "names", "force"),
    [
        ("", None, False),
        ("force", None, True),
        ("sqlite,zeo_fs", ("sqlite", "zeo_fs"), False),
        ("force,sqlite", ("sqlite",), True),
        ("sqlite, force ,sqlite", ("sqlite",), True),
    ],
)
def test_zap_values_parse(value, names, force):
    assert dbstate.parse_zap_option(value) == dbstate.ZapRequest(names, force)


def test_zap_alone_asks_about_every_database_in_file_order():
    asked = []
    chosen = dbstate.databases_to_zap(
        dbstate.parse_zap_option(""), DATABASES, lambda n: asked.append(n) or n == "sqlite"
    )
    assert asked == DATABASES
    assert chosen == ("sqlite",)


def test_zap_names_asks_about_those_only():
    asked = []
    chosen = dbstate.databases_to_zap(
        dbstate.parse_zap_option("zeo_pcache,zeo_fs"),
        DATABASES,
        lambda n: asked.append(n) or True,
    )
    assert asked == ["zeo_fs", "zeo_pcache"]
    assert chosen == ("zeo_fs", "zeo_pcache")


def test_zap_force_asks_nothing():
    def never(name):
        raise AssertionError(f"asked about {name}")

    assert dbstate.databases_to_zap(dbstate.parse_zap_option("force"), DATABASES, never) == tuple(
        DATABASES
    )
    assert dbstate.databases_to_zap(
        dbstate.parse_zap_option("force,zeo_pcache"), DATABASES, never
    ) == ("zeo_pcache",)


def test_zap_of_an_unknown_database_is_a_usage_error():
    with pytest.raises(UsageError, match="--zap names 'sqlit', which is not a database"):
        dbstate.databases_to_zap(dbstate.parse_zap_option("sqlit"), DATABASES, lambda n: True)


def test_no_zap_option_zaps_nothing():
    assert dbstate.databases_to_zap(None, DATABASES, lambda n: True) == ()


@pytest.mark.parametrize(
    ("answer", "yes"),
    [
        (None, False),
        ("", False),
        ("\n", False),
        ("n\n", False),
        ("no", False),
        ("yess", False),
        ("y\n", True),
        ("YES\n", True),
        (" yes ", True),
    ],
)
def test_only_an_explicit_yes_confirms(answer, yes):
    assert dbstate.is_yes(answer) is yes


# -- zap --


def test_zap_empties_a_filestorage_and_packs_the_old_records_away(tmp_path):
    path = str(tmp_path / "data.fs")
    db = ZODB.DB(FileStorage(path))
    commit_root(db, precious="x" * 10000)
    how = dbstate.zap(db)
    assert how == "emptied its root and packed"
    assert root_keys(db) == []
    db.close()
    # After the pack the record is gone from the file (kept only in .old).
    with open(path, "rb") as file:
        assert b"x" * 100 not in file.read()
    assert (tmp_path / "data.fs.old").exists()


def test_zap_uses_zap_all_where_the_storage_has_it():
    class ZappableStorage(MappingStorage):
        zapped = False

        def zap_all(self):
            self.zapped = True

    storage = ZappableStorage()
    db = ZODB.DB(storage)
    assert dbstate.zap(db) == "emptied its tables (zap_all)"
    assert storage.zapped
    db.close()


def test_foreign_data_is_refused_and_ours_is_not():
    db = ZODB.DB(MappingStorage())
    populate(db, 1)
    dbstate.refuse_foreign_data(db)  # only the tool's key: fine
    commit_root(db, precious=1)
    with pytest.raises(ForeignDataError, match="'precious'"):
        dbstate.refuse_foreign_data(db)
    db.close()


# -- min-objects --


def test_filler_is_written_in_batches_once_and_topped_up():
    db = ZODB.DB(MappingStorage())
    populate(db, 2)
    batches = []
    assert (
        dbstate.ensure_filler(db, 25, 16, batch=10, on_batch=lambda w, n: batches.append(w)) == 25
    )
    assert batches == [10, 20, 25]
    assert dbstate.filler_count(db) == 25
    assert dbstate.ensure_filler(db, 25, 16, batch=10) == 0
    assert dbstate.ensure_filler(db, 30, 16, batch=10) == 5
    assert dbstate.filler_count(db) == 30
    # populate keeps the filler and the workers' containers apart.
    populate(db, 1)
    conn = db.open()
    try:
        assert sorted(conn.root()[ROOT_KEY].keys(), key=str) == [0, dbstate.FILLER_KEY]
    finally:
        conn.close()
    assert dbstate.filler_count(db) == 30
    db.close()


# -- pack --


def test_pack_removes_old_revisions(tmp_path):
    path = str(tmp_path / "data.fs")
    db = ZODB.DB(FileStorage(path))
    populate(db, 1)
    for _ in range(5):
        populate(db, 1)
    revisions_before = len(db.history(db.open().root()[ROOT_KEY]._p_oid, size=100))
    assert dbstate.pack(db) is None
    revisions_after = len(db.history(db.open().root()[ROOT_KEY]._p_oid, size=100))
    assert revisions_before > 1
    assert revisions_after == 1
    db.close()


def test_pack_says_why_a_storage_cannot_pack():
    class Unpackable(MappingStorage):
        def pack(self, t, referencesf, gc=True):
            raise NotImplementedError("no packing here")

    db = ZODB.DB(Unpackable())
    assert dbstate.pack(db) == "Unpackable could not pack: NotImplementedError: no packing here"
    db.close()


def test_pack_would_replace_no_existing_file_in_any_directory(tmp_path):
    """Not even in the data directory: a user may have chosen it (ZODBSHOOTOUT_DATA)."""
    mine, theirs = tmp_path / "data", tmp_path / "elsewhere"
    mine.mkdir()
    theirs.mkdir()
    (mine / "db.fs.old").write_text("backup")
    (theirs / "db.fs.pack").write_text("half a pack")
    (theirs / "blobs.old").mkdir()
    text = f"""
    %import zodbshootout
    <zodb inside>
      <embeddedzeo>
        <filestorage>
          path {mine}/db.fs
        </filestorage>
      </embeddedzeo>
    </zodb>
    <zodb outside>
      <filestorage>
        path {theirs}/db.fs
        blob-dir {theirs}/blobs
      </filestorage>
    </zodb>
    """
    config = parse_source(ConfigSource(text, (tmp_path / "x.conf").as_uri(), str(mine)))
    assert storages.pack_backups(config.databases["inside"]) == [
        f"{mine}/db.fs.old",
        f"{mine}/db.fs.pack",
    ]
    assert dbstate.pack_would_replace(config.databases["inside"]) == [f"{mine}/db.fs.old"]
    assert dbstate.pack_would_replace(config.databases["outside"]) == [
        f"{theirs}/db.fs.pack",
        f"{theirs}/blobs.old",
    ]
