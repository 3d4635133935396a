"""``--hosts``: the client hosts a run's workers are spread over, as plain data.

Three ways to write them::

    --hosts localhost                 one host, this machine (no ssh)
    --hosts app1,app2                 two hosts, one share each
    --hosts app1=2,app2=3             shares: app2 takes 3 of every 5 workers
    --hosts hosts.txt                 a file: one host a line

A line of the file is ``HOST [SHARE] [python=PATH]``; ``#`` starts a comment.
PATH is the Python interpreter on that host that has zodbshootout installed
(a venv's ``bin/python``); without it, the same path as the interpreter that
runs the command (hosts set up alike).  ``localhost`` runs its workers on
this machine without ssh; any other name is given to ``ssh`` as it is
(``user@app1`` and names from ``~/.ssh/config`` work).

The c workers of a stage are dealt to the hosts in proportion to their
shares (see :func:`assign_hosts`), so ``-c 1 2 4`` all use the same list.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass

from zodbshootout.inputs import read_text

LOCALHOST = "localhost"
#: The largest hosts file read, in bytes: thousands of hosts, a line each.
MAX_HOSTS_FILE_BYTES = 64 << 10
#: A host name as ssh takes it: letters, digits, and . - _ @ : (user@host, IPv6).
_NAME = re.compile(r"^[A-Za-z0-9_.@:\-\[\]]+$")
MAX_SHARE = 256


@dataclass(frozen=True)
class HostSpec:
    """One client host: its name for ssh, its share of the workers, its Python."""

    name: str
    share: int = 1
    python: str | None = None  # None: the same path as this process's interpreter

    @property
    def is_local(self) -> bool:
        return self.name == LOCALHOST

    def gateway_spec(self) -> str:
        """The execnet gateway specification that starts one fresh interpreter there."""
        python = self.python or sys.executable
        if self.is_local:
            return f"popen//python={python}"
        return f"ssh={self.name}//python={python}"


def parse_hosts(value: str) -> tuple[HostSpec, ...]:
    """The hosts a ``--hosts`` value names; a malformed value is a ValueError.

    A hosts file that is no regular file, too large or not UTF-8 is a UsageError.

    A value that names an existing file is read as a hosts file; anything
    else is a comma-separated list of ``HOST`` or ``HOST=SHARE``.
    """
    if os.path.isdir(value):  # never a host name for ssh
        raise ValueError(
            f"--hosts {value!r} is a directory, not a hosts file (to mean the host of that "
            f"name, write {value}=1)"
        )
    # A path that is no regular file (a FIFO, a device) is refused as one.
    if os.path.isfile(value) or (os.sep in value and os.path.lexists(value)):
        return _parse_file(value, read_text(value, "the hosts file", MAX_HOSTS_FILE_BYTES))
    hosts = []
    for item in value.split(","):
        name, _, share = item.strip().partition("=")
        hosts.append(_host(name, share or "1", None, f"--hosts {value!r}"))
    return _checked(hosts, f"--hosts {value!r}")


def _parse_file(path: str, text: str) -> tuple[HostSpec, ...]:
    hosts = []
    for number, line in enumerate(text.splitlines(), 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"{path}, line {number}"
        pythons = [w.removeprefix("python=") for w in words[1:] if w.startswith("python=")]
        shares = [w for w in words[1:] if not w.startswith("python=")]
        if len(pythons) > 1 or len(shares) > 1:
            raise ValueError(
                f"{where}: {line.strip()[:80]!r} has more than HOST [SHARE] [python=PATH]"
            )
        share = shares[0] if shares else "1"
        hosts.append(_host(words[0], share, pythons[0] if pythons else None, where))
    return _checked(hosts, path)


def _host(name: str, share: str, python: str | None, where: str) -> HostSpec:
    if not _NAME.match(name):
        raise ValueError(f"{where}: {name!r} is not a host name")
    if not share.isdigit() or not 1 <= int(share) <= MAX_SHARE:
        raise ValueError(
            f"{where}: the share of {name} must be a whole number from 1 to {MAX_SHARE}"
        )
    if python is not None and not python:
        raise ValueError(f"{where}: python= needs the path of an interpreter")
    return HostSpec(name, int(share), python)


def _checked(hosts: list[HostSpec], where: str) -> tuple[HostSpec, ...]:
    if not hosts:
        raise ValueError(f"{where}: names no host")
    names = [host.name for host in hosts]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"{where}: {repeated[0]} is listed twice (give it a share instead)")
    return tuple(hosts)


def assign_hosts(hosts: tuple[HostSpec, ...], workers: int) -> list[HostSpec]:
    """The host of each of *workers* workers, dealt in proportion to the shares.

    Each next worker goes to the host furthest below its share, the first
    listed on a tie: ``a=1,b=1`` alternates a, b, a, b; ``a=2,b=3`` with
    five workers gives a two and b three, and with one worker b gets it.
    """
    counts = dict.fromkeys(range(len(hosts)), 0)
    assigned = []
    for _ in range(workers):
        chosen = min(counts, key=lambda i: ((counts[i] + 1) / hosts[i].share, i))
        counts[chosen] += 1
        assigned.append(hosts[chosen])
    return assigned
