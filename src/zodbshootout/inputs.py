"""Read an input file (a configuration, a result file, a trace) only if it is one.

Every path the tool reads goes through :func:`open_input`: a device, FIFO,
socket or directory is refused before anything is read (``/dev/zero`` would
fill the memory, a FIFO would block forever), and so is a file larger than
what its kind can sensibly be.  The refusal is a :class:`UsageError`, one
line naming the path and what it is.

The file is opened without blocking and then checked with ``fstat``, so a
path swapped for a FIFO between a check and the open can't hang the tool.
Symbolic links to regular files are read as the files they point at.
"""

from __future__ import annotations

import io
import os
import stat
import sys
from typing import BinaryIO

from zodbshootout.errors import UsageError

#: What a path that is not a regular file is, for the refusal's message (a
#: symbolic link only as ``lstat`` sees it: outputfile's refusals).
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)

#: The largest configuration file (ZConfig) read, in bytes.  Real ones are a
#: few kilobytes; a megabyte leaves room for generated ones.
MAX_CONFIG_BYTES = 1 << 20
#: The largest result file read, in bytes: a run of 256 workers, 8 phases and
#: 20 repetitions at 3 counts is about 40 MB.
MAX_RESULT_BYTES = 256 << 20


def kind_of(mode: int, otherwise: str = "not a regular file") -> str:
    """What a file of this ``st_mode`` is, in words ("a FIFO"); *otherwise* for a regular file."""
    return next((name for test, name in _KINDS if test(mode)), otherwise)


def format_size(size_bytes: int) -> str:
    """A byte count for a message: ``1 MiB``, ``300 kB``-like, exact below 1024."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size_bytes >= 1 << shift:
            return f"{size_bytes / (1 << shift):.3g} {unit}"
    return f"{size_bytes} bytes"


def open_input(path: str, what: str, max_bytes: int) -> BinaryIO:
    """*path* opened for reading in binary, if it is a regular file of at most *max_bytes*.

    *what* names the input in messages ("the configuration", "result file").
    A missing or unreadable path, a non-regular file or a file that is too
    large is a UsageError; the caller closes the returned file.
    """
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        raise UsageError(f"cannot read {what} {path}: {e.strerror or e}") from None
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(
                f"refusing to read {what} {path}: it is {kind_of(info.st_mode)}, not a regular file"
            )
        check_size(info.st_size, path, what, max_bytes)
        os.set_blocking(handle, True)
        return os.fdopen(handle, "rb")
    except BaseException:
        os.close(handle)
        raise


def check_size(size_bytes: int, path: str, what: str, max_bytes: int) -> None:
    """A UsageError if *size_bytes* is over *max_bytes*."""
    if size_bytes > max_bytes:
        raise UsageError(
            f"refusing to read {what} {path}: {format_size(size_bytes)} is more than "
            f"{what} can be ({format_size(max_bytes)} at most)"
        )


def read_bytes(path: str, what: str, max_bytes: int) -> bytes:
    """The content of the regular file *path* (``-``: stdin), at most *max_bytes* of it.

    The file may grow after the size check; reading stops one byte past the
    bound and refuses, so the bound holds whatever the file does.
    """
    if path == "-":
        data = _read_bounded(sys.stdin.buffer, path, what, max_bytes)
        return data
    with open_input(path, what, max_bytes) as file:
        return _read_bounded(file, path, what, max_bytes)


def _read_bounded(file: BinaryIO | io.BufferedReader, path: str, what: str, limit: int) -> bytes:
    try:
        data = file.read(limit + 1)
    except OSError as e:
        raise UsageError(f"cannot read {what} {path}: {e.strerror or e}") from None
    if len(data) > limit:
        raise UsageError(
            f"refusing to read {what} {path}: it is more than {what} can be "
            f"({format_size(limit)} at most)"
        )
    return data


def read_text(path: str, what: str, max_bytes: int) -> str:
    """Like :func:`read_bytes`, decoded as UTF-8; undecodable text is a UsageError."""
    data = read_bytes(path, what, max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"{what} {path} is not UTF-8 text") from None
