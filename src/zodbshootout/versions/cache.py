"""Where the variants' environments are kept, under what name, and how they are cleared.

Each environment lives in ``DIRECTORY/environments/KEY/``: ``KEY`` is a hash
of everything that decides what gets installed (the variant's requirements,
the Python, the installer, the tool's own requirements, the contents of
local checkouts), so a changed spec gets a new environment and an unchanged
one is found again.  ``venv/`` is the environment; ``variant.json`` is
written last, once everything is installed: a directory without it was
never finished and is built again from scratch.  A lock file beside each
entry keeps two invocations from building the same one at once.

The directory is ``$ZODBSHOOTOUT_CACHE_DIR``, else ``$XDG_CACHE_HOME/zodbshootout``,
else ``~/.cache/zodbshootout`` (``--cache-dir`` overrides all three).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import pathlib
import re
import shutil
from collections.abc import Iterator
from typing import Any

#: The environment variable that moves the cache.
CACHE_VARIABLE = "ZODBSHOOTOUT_CACHE_DIR"
#: The file whose presence says an environment is complete (written last).
COMPLETE = "variant.json"
#: How long a key is (hex digits of SHA-256): collisions are out of reach.
KEY_LENGTH = 24
_KEY = re.compile(rf"^[0-9a-f]{{{KEY_LENGTH}}}$")
#: Bumped when the layout of an environment changes, so old ones are not reused.
LAYOUT = 1


def cache_directory(chosen: str | None = None) -> pathlib.Path:
    """The cache's top directory (see the module's docstring)."""
    if chosen:
        return pathlib.Path(chosen).expanduser().absolute()
    if os.environ.get(CACHE_VARIABLE):
        return pathlib.Path(os.environ[CACHE_VARIABLE]).expanduser().absolute()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return pathlib.Path(base).absolute() / "zodbshootout"


def environments_directory(top: pathlib.Path) -> pathlib.Path:
    return top / "environments"


def environment_key(facts: dict[str, Any]) -> str:
    """The name of the environment *facts* describe (JSON data)."""
    text = json.dumps({"layout": LAYOUT, **facts}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_LENGTH]


def is_complete(entry: pathlib.Path) -> bool:
    return (entry / COMPLETE).is_file()


def read_record(entry: pathlib.Path) -> dict[str, Any]:
    """What was recorded when *entry* was completed ({} if it can't be read)."""
    try:
        record = json.loads((entry / COMPLETE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def mark_complete(entry: pathlib.Path, record: dict[str, Any]) -> None:
    """Write *entry*'s record, the last step of building it (atomically: all or nothing)."""
    partial = entry / (COMPLETE + ".partial")
    partial.write_text(json.dumps(record, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(partial, entry / COMPLETE)


@contextlib.contextmanager
def locked(entry: pathlib.Path) -> Iterator[None]:
    """Hold *entry*'s lock: another invocation building it waits until this one is done."""
    entry.parent.mkdir(parents=True, exist_ok=True)
    with open(entry.parent / f"{entry.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def remove_entry(entry: pathlib.Path) -> None:
    """Remove an environment, complete or not (its record first: never half complete)."""
    with contextlib.suppress(FileNotFoundError):
        (entry / COMPLETE).unlink()
    shutil.rmtree(entry, ignore_errors=True)


def entries(top: pathlib.Path) -> list[pathlib.Path]:
    """The environments (complete or not) the cache at *top* holds: only names it gives."""
    directory = environments_directory(top)
    if not directory.is_dir():
        return []
    return sorted(p for p in directory.iterdir() if _KEY.match(p.name) and p.is_dir())


def clear(top: pathlib.Path) -> list[pathlib.Path]:
    """Remove every environment of the cache at *top*, and their locks; return what went.

    Only entries named as this module names them are touched, so a
    ``--cache-dir`` pointed at the wrong directory loses nothing else.
    """
    removed = []
    for entry in entries(top):
        with locked(entry):
            remove_entry(entry)
        with contextlib.suppress(FileNotFoundError):
            (entry.parent / f"{entry.name}.lock").unlink()
        removed.append(entry)
    return removed
