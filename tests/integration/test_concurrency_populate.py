"""Populate in a process of its own (concurrency.processes.ProcessSession.populate).

The value comes back, an error keeps its type, a process that dies is the
cell's error and leaves nothing behind, and the load's memory leaves with the
process: the caller's resident memory (read from /proc) barely moves where the
same load in the caller grows it by megabytes.
"""

from __future__ import annotations

import multiprocessing
import subprocess
import sys
from functools import partial

import pytest

from zodbshootout.concurrency.processes import ProcessSession
from zodbshootout.concurrency.session import SessionSpec
from zodbshootout.config.loader import load_config
from zodbshootout.database.open import open_database
from zodbshootout.errors import CellError
from zodbshootout.faults import Fault
from zodbshootout.mix.runner import guard_database, load_dataset, versions_added
from zodbshootout.workload.root import ForeignDataError

SQLITE = """%import relstorage
<zodb {name}>
  <relstorage>
    keep-history false
    <sqlite3>
      driver sqlite3
      data-dir {path}
    </sqlite3>
  </relstorage>
</zodb>
"""


def _session(tmp_path, name="db"):
    data = tmp_path / name
    data.mkdir()
    path = tmp_path / f"{name}.conf"
    path.write_text(SQLITE.format(name=name, path=data))
    config = load_config(str(path), str(tmp_path))
    return config, ProcessSession(SessionSpec(config.source, name, (), 1))


def test_the_fills_value_comes_back_and_the_database_holds_its_work(tmp_path):
    config, session = _session(tmp_path)
    assert session.populate(guard_database) is None
    loaded = session.populate(partial(load_dataset, (300, 64), None, "db"))
    assert loaded == {"present": 300, "written": 300, "versions": 0}
    # Read here, in this process: the other one committed them.
    db = open_database(config.source, "db", [], client_label="check")
    try:
        with db.transaction() as conn:
            assert len(conn.root()["zodbshootout"]["mix"]) == 300
    finally:
        db.close()
    assert multiprocessing.active_children() == []  # each one ended and was joined


def test_an_error_keeps_its_type_and_a_death_is_the_cells_error(tmp_path):
    config, session = _session(tmp_path)
    db = open_database(config.source, "db", [], client_label="foreign")
    try:
        with db.transaction() as conn:
            conn.root()["someone else's"] = 1
    finally:
        db.close()
    with pytest.raises(ForeignDataError):
        session.populate(guard_database)
    killed = Fault("db", "readback", 0, "kill")
    with pytest.raises(CellError, match=r"the populating process died \(killed by SIGKILL\)"):
        session.populate(partial(versions_added, killed, "db", 0))
    assert multiprocessing.active_children() == []  # each one ended and was joined


MEMORY_SCRIPT = """
import sys
from functools import partial
from zodbshootout import storages
from zodbshootout.concurrency.processes import ProcessSession
from zodbshootout.concurrency.session import SessionSpec
from zodbshootout.concurrency.threads import ThreadSession
from zodbshootout.config.loader import load_config
from zodbshootout.mix.runner import guard_database, load_dataset

def rss_kb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

config = load_config(sys.argv[1], sys.argv[2])
grown = []
for name, here in (("there", False), ("here", True)):
    spec = SessionSpec(config.source, name, (), 1, "threads" if here else "processes")
    populate = (ThreadSession if here else ProcessSession)(spec).populate
    populate(guard_database)
    storages.before_repetition(config.databases[name])
    before = rss_kb()
    populate(partial(load_dataset, (50_000, 128), None, name))
    grown.append(rss_kb() - before)
print(*grown)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_the_loads_memory_leaves_with_its_process(tmp_path):
    text = ""
    for name in ("there", "here"):
        (tmp_path / name).mkdir()
        text += SQLITE.format(name=name, path=tmp_path / name).replace("%import relstorage\n", "")
    path = tmp_path / "two.conf"
    path.write_text("%import relstorage\n" + text)
    done = subprocess.run(
        [sys.executable, "-c", MEMORY_SCRIPT, str(path), str(tmp_path)],
        capture_output=True, text=True, timeout=240, check=True,
    )  # fmt: skip
    there, here = (int(word) for word in done.stdout.split())
    # Loaded here, the caller kept megabytes (RelStorage's and SQLite's, past
    # malloc_trim's reach); loaded in a process of its own, a fraction of that.
    assert here > 4_000, (there, here)
    assert there < here / 4, (there, here)
