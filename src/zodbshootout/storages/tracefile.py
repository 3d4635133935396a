"""The file a client cache's trace goes to (``--cache-trace``), written so it can't hurt the run.

ZEO's and RelStorage's tracers write straight to a file and, when a write
fails (a full disk), ZEO prints the record's ids on stdout and RelStorage
logs a traceback for every record, and both raise into the load they were
tracing.  Their records go through a :class:`TraceFile` instead: the first
failed write closes it, one warning names the file and the error, and
every later record is dropped, so a full disk costs the trace's end and
nothing else.  The warning is logged as an error, so a plain run shows it.

Each file is created new (never appended to: a second run into the same
file would double every record) and starts with the tool's marker record
(see :mod:`zodbshootout.cachesim.records`), which names the storage kind
and its cache's size.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import BinaryIO

from zodbshootout.cachesim.records import marker_record

logger = logging.getLogger("zodbshootout.cache_trace")

#: The trace files open in this process (a worker process traces one storage).
_open_files: list[TraceFile] = []

#: Records are buffered: a write system call per record would sit in the timed region.
_BUFFER_BYTES = 1 << 16


class TraceFile:
    """A binary file that takes records until a write fails, then drops them, warning once."""

    def __init__(self, path: str, kind: str, cache_size_bytes: int) -> None:
        self.path = path
        self.error: OSError | None = None
        #: Called first by close(): a tracer that holds records writes them.
        self.before_close: Callable[[], None] | None = None
        # "x": a file already there is an error, never appended to.
        self._file: BinaryIO | None = open(path, "xb", buffering=_BUFFER_BYTES)  # noqa: SIM115
        self.write(marker_record(int(time.time()), kind=kind, cache_size_bytes=cache_size_bytes))
        _open_files.append(self)

    def write(self, data: bytes) -> int:
        """Write *data*; after a failure, drop it."""
        if self._file is None:
            return 0
        try:
            return self._file.write(data)
        except OSError as e:
            self._fail(e)
            return 0

    def close(self) -> None:
        if self.before_close is not None:
            before_close, self.before_close = self.before_close, None
            before_close()
        if self in _open_files:
            _open_files.remove(self)
        if self._file is None:
            return
        file, self._file = self._file, None
        try:
            file.close()
        except OSError as e:
            self._fail(e)

    def _fail(self, error: OSError) -> None:
        file, self._file = self._file, None
        if file is not None:
            try:
                file.close()  # closes the descriptor even when the flush fails again
            except OSError:
                pass
        if self.error is None:
            self.error = error
            # An error, not a warning: a plain run's stderr shows errors only.
            logger.error(
                "--cache-trace: cannot write %s (%s); the trace ends here",
                self.path,
                error.strerror or error,
            )


def mark_phase(phase: str | None) -> None:
    """Write a phase's start (its name) or end (None) into every trace open in this process.

    Written outside the timed region (before a phase's first barrier and
    after its second), so cachesim can count the traced cache's hits of
    each phase's own loads, as the run's hit-rate row does.
    """
    if not _open_files:
        return
    record = marker_record(int(time.time()), phase=phase)
    for file in list(_open_files):
        file.write(record)
