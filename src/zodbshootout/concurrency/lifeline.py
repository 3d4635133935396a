"""A worker process's lifeline: the process exits as soon as the runner is gone.

A worker is a child of the fork server, not of the runner, and the fork
server outlives the runner as long as any of its children lives: if the
runner is killed (SIGKILL, the OOM killer), nothing else would stop a
worker waiting at a barrier.  So each worker holds a descriptor whose other
end only the runner holds, and on which the runner never writes; when that
end closes, the descriptor reads EOF, and the kernel tells the process with
a signal (``O_ASYNC``: SIGIO to the owner), whose handler exits
(:func:`zodbshootout.children.when_closed`, which an embedded ZEO server
uses on its input too).

Not a thread blocked on the descriptor, as it was: one more thread in a
worker, even one that never wakes, made the timed ZODB work slower, since
every system call then releases and retakes the GIL the long way.
FileStorage's update of 1,000 objects (3,000 system calls) took 3 to 4 %
longer in a fresh process with one waiting thread than without (14 runs
each), and benchmarks/floor.py read its update at 0.96 of the bare loop.
The progress channel sends without a thread for the same reason
(:class:`zodbshootout.concurrency.processes.ProgressPipe`).

The kernel sends SIGIO to one owner per open file description, so each
process needs a descriptor of its own: a shared one would signal only the
last process that armed it.
"""

from __future__ import annotations

import os
from typing import Any

from zodbshootout.children import when_closed


def hold(end: Any) -> None:
    """Exit this process (status 1) as soon as the other side of *end* closes.

    *end*: a multiprocessing Connection whose peer never sends to it (a
    pipe's reading end, or this process's end of a socket pair that it
    only writes to).  Call it once, in the process's main thread, before
    any other thread starts: the signal's handler runs in the main thread.
    """
    when_closed(end.fileno(), lambda: os._exit(1))
