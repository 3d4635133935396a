"""``maintain --operations first-transaction-cold,first-transaction-warm`` (relstorage#513):
the warm run opens with the persistent cache it was given, the cold one without."""

from __future__ import annotations

import json

import pytest

from conftest import run_cli
from support import configs

pytestmark = [pytest.mark.slow]


def test_a_warm_persistent_cache_holds_the_objects_loaded_into_it(tmp_path):
    data = tmp_path / "data"
    env = {"ZODBSHOOTOUT_DATA": str(data)}
    config = tmp_path / "zeo.conf"
    config.write_text(
        "%import zodbshootout\n%import relstorage\n"
        + configs.embedded_zeo("zeo", client="cache")
        + configs.sqlite("sqlite").replace(
            "<relstorage>", "<relstorage>\n    cache-local-dir $(ZODBSHOOTOUT_DATA)"
        )
    )
    filled = run_cli("fill", str(config), "-n", "2000", env=env)
    assert filled.returncode == 0, filled.stderr
    out = tmp_path / "first.json"
    operations = ("--operations", "first-transaction-cold,first-transaction-warm")
    done = run_cli(
        "maintain", str(config), *operations, "--cache-objects", "500", "-o", str(out), env=env
    )
    assert done.returncode == 0, done.stderr
    records = {
        (r["database"], r["operation"]): r for r in json.loads(out.read_text())["maintenance"]
    }
    cold = records["zeo", "first-transaction-cold"]
    warm = records["zeo", "first-transaction-warm"]
    assert warm["cache_warmed"] == 500
    # The 500 objects, and the tree's nodes and the root on their way (a few dozen).
    assert 500 <= warm["cache_objects"] < 600
    assert cold["cache_objects"] < 10  # nothing persisted: at most the root and the tool's key
    assert cold["seconds"] > 0
    assert warm["seconds"] > 0
    assert "zeo first-transaction-warm at 2,000 objects: " in done.stdout
    # RelStorage on SQLite ignores cache-local-dir: a footnote, not a number.
    sqlite = records["sqlite", "first-transaction-warm"]
    assert sqlite["seconds"] is None
    assert "RelStorage on SQLite ignores cache-local-dir" in sqlite["reason"]


def test_relstorage_on_postgresql_opens_with_its_cache_local_dir(tmp_path, postgresql_dsn):
    # relstorage#513's own case: RelStorage's persistent cache, read back and checked at start.
    data = tmp_path / "data"
    config = tmp_path / "pg.conf"
    config.write_text(
        "%import relstorage\n<zodb pg>\n <relstorage>\n"
        f"  cache-local-dir {tmp_path / 'cache'}\n"
        f"  <postgresql>\n   dsn {postgresql_dsn}\n  </postgresql>\n"
        " </relstorage>\n</zodb>\n"
    )
    (tmp_path / "cache").mkdir()
    env = {"ZODBSHOOTOUT_DATA": str(data)}
    filled = run_cli("fill", str(config), "-n", "1000", env=env)
    assert filled.returncode == 0, filled.stderr
    out = tmp_path / "pg.json"
    operations = ("--operations", "first-transaction-cold,first-transaction-warm")
    done = run_cli("maintain", str(config), *operations, "-o", str(out), env=env)
    assert done.returncode == 0, done.stderr
    cold, warm = json.loads(out.read_text())["maintenance"]
    assert warm["cache_warmed"] == 1000
    assert warm["cache_objects"] >= 1000  # read back from the cache files at open
    assert cold["cache_objects"] < 10
