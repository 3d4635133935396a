"""Peak memory of a process, from Linux's own accounting (/proc/PID/status, clear_refs).

``VmHWM`` is the most resident memory a process ever had; writing ``5`` to
``/proc/PID/clear_refs`` resets it to the process's present RSS, so that
after an operation it holds the peak of that operation alone (on top of
what the process held before).  Where /proc can't be read or reset (another
system, another user's process), the reading is None with the reason.
"""

from __future__ import annotations

import re

_HWM = re.compile(r"^VmHWM:\s+(\d+) kB", re.MULTILINE)
_RSS = re.compile(r"^VmRSS:\s+(\d+) kB", re.MULTILINE)


def _status_bytes(field: re.Pattern[str], pid: int | str) -> int | None:
    """*field* of /proc/PID/status (in kB there), in bytes; None where it can't be read."""
    try:
        with open(f"/proc/{pid}/status") as file:
            found = field.search(file.read())
    except OSError:
        return None
    return int(found.group(1)) * 1024 if found else None


def reset_peak(pid: int | str = "self") -> str | None:
    """Start a new peak for *pid*; None, or why it could not be reset."""
    try:
        with open(f"/proc/{pid}/clear_refs", "w") as file:
            file.write("5")
    except OSError as e:
        return f"its peak memory could not be reset: {e.strerror}"
    return None


def peak_rss_bytes(pid: int | str = "self") -> int | None:
    """The most resident memory *pid* had since its start or the last reset (None: unknown)."""
    return _status_bytes(_HWM, pid)


def rss_bytes(pid: int | str = "self") -> int | None:
    """The resident memory *pid* has now (None: unknown)."""
    return _status_bytes(_RSS, pid)
