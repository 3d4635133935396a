"""Recorded traces in tests: configurations that record, and counts read back from the files.

A database wrapped in ``<recording>`` writes every call made of it to trace
files of its own; reading those back counts what a run issued, independently
of what the run says it did.
"""

from __future__ import annotations

import os

from zodbshootout.recording.format import FLAG_ERROR, Op
from zodbshootout.recording.reader import open_trace

#: Storage sections of etc/local.conf's databases, by name.
DATABASES = {
    "zeo_fs": "<embeddedzeo>\n<filestorage>\npath $(ZODBSHOOTOUT_DATA)/zeo_fs.fs\n"
    "</filestorage>\n</embeddedzeo>",
    "sqlite": "<relstorage>\n<sqlite3>\ndriver sqlite3\ndata-dir $(ZODBSHOOTOUT_DATA)/sqlite\n"
    "</sqlite3>\n</relstorage>",
    "zeo_pcache": "<embeddedzeo>\nclient pcache\n<filestorage>\n"
    "path $(ZODBSHOOTOUT_DATA)/zeo_pcache.fs\n</filestorage>\n</embeddedzeo>",
}


def recorded_config(path, traces, names) -> str:
    """etc/local.conf's databases *names*, each inside a <recording> into *traces*/NAME."""
    sections = [
        f"<zodb {name}>\n<recording>\npath {traces}/{name}\nflush-interval 0.05\n"
        f"{DATABASES[name]}\n</recording>\n</zodb>"
        for name in names
    ]
    path.write_text("%import zodbshootout\n%import relstorage\n" + "\n".join(sections) + "\n")
    return str(path)


def counts(paths) -> dict[str, int]:
    """Loads, stores and commits in trace files, straight from their records."""
    found = {"loads": 0, "stores": 0, "commits": 0}
    for path in paths:
        for record in open_trace(path).records():
            if record.op in (Op.LOAD, Op.LOAD_BEFORE, Op.LOAD_SERIAL):
                found["loads"] += 1
            elif record.op in (Op.STORE, Op.STORE_BLOB):
                found["stores"] += 1
            elif record.op is Op.TPC_FINISH and not record.flags & FLAG_ERROR:
                found["commits"] += 1
    return found


def setup_pid(directory, name) -> int:
    """The process that wrote *name*'s first trace: the runner's untimed set-up (the
    replay's dataset, in a process of its own), which ends before any worker opens."""
    headers = [open_trace(path).header for path in traces_of(directory, name)]
    return min(headers, key=lambda header: header.base_monotonic_ns).pid


def traces_of(directory, name, but_pid=None) -> list[str]:
    """The trace files database *name* wrote in *directory*, but process *but_pid*'s."""
    return sorted(
        os.path.join(directory, f)
        for f in os.listdir(directory)
        if f.startswith(f"{name}.") and f".{but_pid}." not in f
    )
