"""The fork server's last preload: freeze the heap its preloads built.

Every worker process is forked from the fork server, after it imported
ZODB, RelStorage, ZEO and the drivers (concurrency.processes._PRELOAD).
Left in the collector's generations, those objects made each worker's
timed ZODB work slower than the same work in a fresh process: FileStorage's
update of 1,000 objects by 3.3 to 4.6 %, its add by 2.8 % (a forked child
against a fresh one, each collecting before its timing, 12 pairs; forked
from a parent that imported only ZODB: no difference), and
benchmarks/floor.py's FileStorage update read 0.93 of the bare loop.
Frozen after one collection (``gc.freeze()``, what Python's gc documentation
advises before forking), the inherited objects stay out of every worker's
collections and pages: the forked child ran at 0.99 to 1.00 of a fresh one.

The freeze happens only in the fork server, on import from
``multiprocessing.forkserver.main``; imported anywhere else (the
architecture test imports every module) this module does nothing.
"""

from __future__ import annotations

import gc
import sys
from multiprocessing import forkserver
from types import FrameType


def imported_by_the_fork_server() -> bool:
    """Whether ``multiprocessing.forkserver.main`` is importing this module now."""
    frame: FrameType | None = sys._getframe(1)
    while frame is not None:
        if frame.f_code is forkserver.main.__code__:
            return True
        frame = frame.f_back
    return False


if imported_by_the_fork_server():
    gc.collect()
    gc.freeze()
