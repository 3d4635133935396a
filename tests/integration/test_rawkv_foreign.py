"""A raw store the tool did not create is refused, one line, exit 2, and left byte-identical.

The same guard as for ZODB databases' foreign data: a user's SQLite
database, LMDB environment or LevelDB directory named in a ``<rawkv>``
section is never opened for writing (no table added, no WAL switched on,
no key written or removed).  A store the tool created carries its mark
(SQLite's application id, a marker file in a directory store) and is reused.
"""

from __future__ import annotations

import contextlib
import io

import pytest

from zodbshootout.cli import entry

from support.hostile import FOREIGN_STORES, checksum


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = entry.main(list(argv))
    return code, out.getvalue(), err.getvalue()


CASES = [(store.backend, store.make, store.says) for store in FOREIGN_STORES]
NEEDS = {store.make: store.needs for store in FOREIGN_STORES}


@pytest.mark.parametrize(("backend", "make", "says"), CASES)
def test_a_store_the_tool_did_not_create_is_refused_untouched(tmp_path, backend, make, says):
    if NEEDS[make]:
        pytest.importorskip(NEEDS[make])
    store = tmp_path / "theirs"
    make(store)
    before = checksum(store)
    config = tmp_path / "floor.conf"
    config.write_text(f"<rawkv floor>\n  backend {backend}\n  path {store}\n</rawkv>\n")
    code, _stdout, stderr = run_main(str(config), "-n", "10", "-c", "1", "-r", "1", "-q")
    assert code == 2, stderr
    assert stderr.startswith(f"zodbshootout: error: floor: {store} {says}; refusing to touch it")
    assert stderr.count("\n") == 1, stderr
    assert checksum(store) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["floor.conf", "theirs"]


@pytest.mark.parametrize("backend", ["sqlite", "lmdb", "leveldb"])
def test_a_store_the_tool_created_is_reused(tmp_path, backend):
    pytest.importorskip({"sqlite": "sqlite3", "lmdb": "lmdb", "leveldb": "plyvel"}[backend])
    config = tmp_path / "floor.conf"
    store = tmp_path / "ours"
    config.write_text(f"<rawkv floor>\n  backend {backend}\n  path {store}\n</rawkv>\n")
    for _ in range(2):
        code, stdout, stderr = run_main(str(config), "-n", "10", "-c", "1", "-r", "1", "-q", "add")
        assert code == 0, stdout + stderr
