"""Write an output file (a result, a pyperf suite, a chart) without harming what is there.

The file is written to a temporary file beside the target, synced, and
renamed over it, so a reader (or a run killed mid-write) never sees half a
file.  Renaming over a path replaces whatever is there, so only a new name or
an existing regular file is accepted: a device, FIFO, socket, directory or
symbolic link is refused (``-`` is the way to say stdout).

Two commands never write the same file: while a command runs
(:func:`output_claims`, entered by the command line), every output it checks
or writes is claimed with a lock on ``.NAME.lock`` beside it, held until the
command ends; another command that checks or writes the same name is refused
in one line, naming the process that holds it.  Outside a command (a library
call) the lock lasts one write.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import os
import stat
import sys
import tempfile
from collections.abc import Iterable, Iterator

from zodbshootout.errors import UsageError
from zodbshootout.inputs import kind_of

#: The outputs the running command holds: each target's absolute path and its lock
#: file's descriptor; None outside a command.  Owned by the process that entered
#: :func:`output_claims` (a forked worker does not inherit the ownership).
_claims: dict[str, int] | None = None
_claims_owner = 0


@contextlib.contextmanager
def output_claims() -> Iterator[None]:
    """Hold every output claimed inside until the end; then release them, removing their locks."""
    global _claims, _claims_owner
    if _owns_claims():
        yield  # nested: the outer command releases
        return
    _claims, _claims_owner = {}, os.getpid()
    try:
        yield
    finally:
        held, _claims = _claims, None
        for target, handle in held.items():
            _release(target, handle)


def _owns_claims() -> bool:
    return _claims is not None and _claims_owner == os.getpid()


def _lock_path(target: str) -> str:
    return os.path.join(os.path.dirname(target), f".{os.path.basename(target)}.lock")


def claim_output(path: str) -> None:
    """Claim *path* for the running command, or refuse (UsageError) if another holds it.

    A no-op for ``-`` and outside :func:`output_claims`, and for a path the
    command holds already.
    """
    if path == "-" or not _owns_claims():
        return
    assert _claims is not None
    target = os.path.abspath(path)
    if target not in _claims:
        _claims[target] = _lock(path, target)


def _lock(path: str, target: str) -> int:
    """The descriptor of *target*'s lock file, locked by this process (see :func:`claim_output`).

    The lock file is removed by whoever releases it, so after taking the lock
    the file must still be the one at its name; else another command released
    it meanwhile, and the lock is taken again on the new file.
    """
    lock = _lock_path(target)
    umask = os.umask(0)
    os.umask(umask)
    for _attempt in range(100):
        try:
            handle = os.open(
                lock,
                os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK,
                0o666 & ~umask,
            )
        except OSError as e:
            raise UsageError(f"cannot write {path}: {lock}: {e.strerror or e}") from None
        _refuse_foreign_lock(path, lock, handle)
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            holder = _holder(handle)
            os.close(handle)
            if e.errno not in (errno.EAGAIN, errno.EACCES):
                raise UsageError(f"cannot write {path}: {lock}: {e.strerror or e}") from None
            raise UsageError(
                f"refusing to write {path}: another zodbshootout{holder} is writing it "
                f"(it holds {lock}); wait for it to end, or give another name"
            ) from None
        try:
            current = os.stat(lock, follow_symlinks=False).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(handle).st_ino:
            os.ftruncate(handle, 0)
            os.write(handle, f"{os.getpid()}\n".encode())
            return handle
        os.close(handle)  # released and removed meanwhile: lock the new one
    raise UsageError(f"cannot write {path}: its lock {lock} keeps changing")


def _refuse_foreign_lock(path: str, lock: str, handle: int) -> None:
    """Close *handle* and refuse if *lock* is not a lock file of ours: a FIFO, a device,
    a file with other names (a hard link) or other content, which we would empty."""
    found = os.fstat(handle)
    text = os.pread(handle, 64, 0) if stat.S_ISREG(found.st_mode) else b""
    ours = not text or text.strip().isdigit()
    if stat.S_ISREG(found.st_mode) and found.st_nlink <= 1 and ours:
        return
    os.close(handle)
    raise UsageError(
        f"refusing to write {path}: {lock} is there and is not a lock of zodbshootout's; "
        "remove it if it is nobody's, or give another name"
    )


def _holder(handle: int) -> str:
    """`` (process N)``: who holds a lock, as its file says; empty if it does not say."""
    try:
        text = os.pread(handle, 32, 0).decode("ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""
    return f" (process {text})" if text.isdigit() else ""


def _release(target: str, handle: int) -> None:
    """Remove *target*'s lock file while still holding it, then let go."""
    try:
        if os.stat(_lock_path(target), follow_symlinks=False).st_ino == os.fstat(handle).st_ino:
            os.unlink(_lock_path(target))
    except OSError:
        pass
    os.close(handle)


@contextlib.contextmanager
def _claimed(path: str) -> Iterator[None]:
    """*path* claimed while writing it: for the command if one runs, else for this write."""
    if _owns_claims():
        claim_output(path)
        yield
        return
    target = os.path.abspath(path)
    handle = _lock(path, target)
    try:
        yield
    finally:
        _release(target, handle)


def written_name(text: str) -> str:
    """An argparse type for the name of a file or directory to write: not empty.

    An empty value (``-o ""``, a variable that was not set) would otherwise
    read as "not given" and the run would save nothing, without a word.
    """
    if not text:
        raise argparse.ArgumentTypeError("an empty name; name a file or directory")
    return text


def check_output_target(path: str) -> None:
    """Refuse, as a UsageError, a *path* that writing a result to would harm.

    Results are written to a temporary file and renamed over the target,
    which would turn a device, FIFO or socket into a regular file and
    replace a symbolic link instead of what it points at.  So only a new
    name or an existing regular file is accepted (``-`` means stdout): a
    user who meant a stream says ``-``.  Checked before the run and again
    at every save, since the path may change while the run goes on.
    """
    if path == "-":
        return
    if path.endswith(os.sep):
        raise UsageError(
            f"refusing to write {path}: a name ending in {os.sep} names a directory; "
            "give a new or regular file's path, or - for stdout"
        )
    directory = os.path.dirname(os.path.abspath(path))
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        mode = None  # a new name; its directory is checked below
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None
    if mode is not None and not stat.S_ISREG(mode):
        kind = kind_of(mode)
        raise UsageError(
            f"refusing to write {path}: it is {kind}, which saving would replace; "
            "give a new or regular file's path, or - for stdout"
        )
    if not os.path.isdir(directory):
        reason = "is not a directory" if os.path.lexists(directory) else "does not exist"
        raise UsageError(f"cannot write {path}: the directory {directory} {reason}")
    claim_output(path)


def write_atomically(path: str, content: str | bytes | Iterable[str]) -> None:
    """Write *content* to a temporary file beside *path*, fsync it, and rename it over *path*.

    *content* may also be text in pieces (a JSON encoder's chunks), written as
    they come: a long run's result is then never held whole in memory, which
    a saved checkpoint a minute would otherwise cost as a step of resident
    memory.  ``-`` writes to stdout.  A failure leaves the previous file untouched and
    no temporary file behind.  A *path* that is not a regular file is refused
    (see :func:`check_output_target`).
    """
    if path == "-":
        if isinstance(content, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(content)
        else:
            sys.stdout.writelines([content] if isinstance(content, str) else content)
        sys.stdout.flush()
        return
    check_output_target(path)
    with _claimed(path):
        _replace(path, content)


def _replace(path: str, content: str | bytes | Iterable[str]) -> None:
    """Write *content* to a temporary file beside *path* and rename it over *path*."""
    directory = os.path.dirname(os.path.abspath(path))
    handle, temporary = tempfile.mkstemp(
        dir=directory, prefix=f".{os.path.basename(path)}.", suffix=".tmp"
    )
    try:
        # mkstemp makes the file private (0600); give it the mode a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(handle, 0o666 & ~umask)
        if isinstance(content, (str, bytes)):
            pieces: Iterable[bytes] = [content.encode() if isinstance(content, str) else content]
        else:
            pieces = _batched(content)
        with os.fdopen(handle, "wb") as out:
            out.writelines(pieces)
            out.flush()
            os.fsync(out.fileno())
        check_output_target(path)  # again: it may have become a link meanwhile
        os.replace(temporary, path)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _batched(pieces: Iterable[str], size: int = 1 << 16) -> Iterator[bytes]:
    """*pieces* joined into blocks of about *size* characters, encoded: a write per
    JSON token would cost twice as long as the encoding itself."""
    batch: list[str] = []
    length = 0
    for piece in pieces:
        batch.append(piece)
        length += len(piece)
        if length >= size:
            yield "".join(batch).encode()
            batch, length = [], 0
    yield "".join(batch).encode()


#: The file that marks a directory as a report this tool wrote: the names of the
#: files it wrote there, one a line.  Only a directory holding it (or an empty
#: or new one) is written into; a web root's own index.html is not a mark.
REPORT_MARKER = ".zodbshootout-report"


def check_report_directory(path: str) -> None:
    """Refuse, as a UsageError, a *path* that writing a report directory into would harm.

    A report is a directory of files (``index.html`` and its charts), so the
    rules of :func:`check_output_target` apply to it as a directory: a new
    name (in an existing directory), an empty directory, or the directory of
    an earlier report (it holds :data:`REPORT_MARKER`, which the tool
    writes) is accepted; a symbolic link, a file of any kind, ``-``, or a
    directory of other files (a web root with its own index.html, a home
    directory, a checkout) is refused, since the report would replace or be
    mixed into them.
    """
    if path == "-":
        raise UsageError("a report is a directory of files: give its path, not - (stdout)")
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        parent = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(parent):
            reason = "is not a directory" if os.path.lexists(parent) else "does not exist"
            raise UsageError(f"cannot write {path}: the directory {parent} {reason}") from None
        claim_output(path)
        return
    except OSError as e:
        raise UsageError(f"cannot write {path}: {e.strerror or e}") from None
    if not stat.S_ISDIR(mode):
        kind = kind_of(mode, "a regular file")
        raise UsageError(
            f"refusing to write a report into {path}: it is {kind}; give a new or empty "
            "directory, or an earlier report's"
        )
    entries = os.listdir(path)
    if entries and not _is_regular(os.path.join(path, REPORT_MARKER)):
        raise UsageError(
            f"refusing to write a report into {path}: it holds files and no {REPORT_MARKER} "
            "(the mark of a report zodbshootout wrote); give a new or empty directory, "
            "or an earlier report's"
        )
    claim_output(path)


def _is_regular(path: str) -> bool:
    """*path* is a regular file itself (not a link to one)."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def report_files(directory: str) -> set[str]:
    """The names the report marker of *directory* says the tool wrote there (none: empty)."""
    try:
        with open(os.path.join(directory, REPORT_MARKER), encoding="utf-8") as marker:
            text = marker.read(1 << 16)
    except (OSError, UnicodeDecodeError):
        return set()
    return {line for line in text.splitlines()[1:] if line and os.sep not in line}


def mark_report_directory(directory: str, names: list[str]) -> None:
    """Write the marker of *directory*: it is a report, holding the files *names*."""
    lines = ["zodbshootout report: files written by zodbshootout report", *names]
    write_atomically(os.path.join(directory, REPORT_MARKER), "\n".join(lines) + "\n")
