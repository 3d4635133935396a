"""Let RelStorage's MySQL adapter run against MariaDB.

RelStorage 4.3.0 treats MariaDB as MySQL and breaks on it in two places:

* Its version check reads "10.11.6-MariaDB" as MySQL 10.11, which is >= 8.0.19, so it
  writes MySQL-8-only upserts (``INSERT ... AS excluded ON DUPLICATE KEY UPDATE``).
  MariaDB rejects them with error 1064 on the first commit.
* The history-preserving ``object_state`` table declares column-level
  ``REFERENCES "transaction"``.  MySQL parses and ignores those clauses; MariaDB
  >= 10.5 turns them into foreign keys, which fail with errno 150 because the signed
  BIGINT columns cannot reference the unsigned ``transaction.tid``.

:func:`install` patches exactly those two code paths.  The patched code asks
RelStorage's own version detector (the ``SELECT version()`` of the storage's first
connection) whether the server is MariaDB, so against MySQL RelStorage runs unchanged.
Each patch is installed only if a probe shows that the installed RelStorage still has
the problem, so a fixed release is left alone.  Patches are per process: call
:func:`install` in every process before it opens a RelStorage MySQL storage.
"""

from __future__ import annotations

import functools
import re
import threading
from collections.abc import Callable
from typing import Any

#: Note the benchmark prints under its results when :func:`adjustments_applied` is not empty.
NOTE = "RelStorage MySQL adapter adjusted for MariaDB"

#: Name of the patch that makes upserts use ``VALUES(col)`` instead of ``AS excluded``.
UPSERT_ALIAS = "upsert-alias"
#: Name of the patch that drops the column-level ``REFERENCES`` from ``object_state``.
INLINE_REFERENCES = "inline-references"

# A column-level REFERENCES has no column list and ends its column definition;
# table-level FOREIGN KEY ... REFERENCES t (cols) clauses must stay.
_COLUMN_REFERENCES = re.compile(r'\s+REFERENCES\s+"?\w+"?(?=\s*,)')

_lock = threading.Lock()
# patch name -> (owner class, attribute name, what owner.__dict__ held before, if anything)
_installed: dict[str, tuple[type, str, Any]] = {}
# What the patches actually changed in this process, in the order first seen.
_applied: dict[str, None] = {}


def is_mariadb(server_version: str) -> bool:
    """Tell MariaDB from MySQL by ``SELECT version()``, which only MariaDB tags."""
    return "mariadb" in server_version.lower()


def install() -> list[str]:
    """Install the patches the installed RelStorage needs; return their names.

    Idempotent.  Returns an empty list when RelStorage's MySQL adapter cannot be
    imported or no longer has either problem.
    """
    try:
        from relstorage.adapters.mysql.schema import MySQLSchemaInstaller, MySQLVersionDetector
    except ImportError:
        return []
    with _lock:
        if UPSERT_ALIAS not in _installed and _upsert_alias_misdetected(MySQLVersionDetector):
            _patch(
                UPSERT_ALIAS,
                MySQLVersionDetector,
                "requires_values_upsert_alias",
                _make_upsert_alias_check,
            )
        if INLINE_REFERENCES not in _installed and _has_inline_references(MySQLSchemaInstaller):
            _patch(
                INLINE_REFERENCES,
                MySQLSchemaInstaller,
                "_create_object_state",
                _make_create_object_state,
            )
        return list(_installed)


def uninstall() -> None:
    """Restore RelStorage's original methods (for tests that need the unpatched adapter)."""
    with _lock:
        for owner, attribute, own in _installed.values():
            if own is None:
                delattr(owner, attribute)  # the method was inherited; inherit it again
            else:
                setattr(owner, attribute, own)
        _installed.clear()


def installed() -> list[str]:
    """Names of the patches currently installed in this process."""
    return list(_installed)


def adjustments_applied() -> list[str]:
    """Describe what the patches changed in this process (empty unless a MariaDB was seen).

    The benchmark records this in its result metadata; an unpatched run, or a run
    against MySQL, returns an empty list.
    """
    return list(_applied)


def _patch(
    name: str,
    owner: type,
    attribute: str,
    make: Callable[[Callable[..., Any]], Callable[..., Any]],
) -> None:
    own = owner.__dict__.get(attribute)
    setattr(owner, attribute, make(getattr(owner, attribute)))
    _installed[name] = (owner, attribute, own)


def _record(what: str, server_version: str) -> None:
    _applied.setdefault(f"{what} (server {server_version})")


def _server_is_mariadb(version_detector: Any, cursor: Any) -> bool:
    return is_mariadb(version_detector.get_version(cursor))


class _FakeServer:
    """Version detector input for probing RelStorage without a server."""

    version = "10.11.6-MariaDB"

    def _fetch_version_from_server(self, _cursor: Any) -> str:
        return self.version


# --- Patch 1: upsert syntax (MySQLVersionDetector; verified broken in RelStorage 4.3.0) ---


def _upsert_alias_misdetected(detector_class: type) -> bool:
    """Does RelStorage still ask MariaDB for MySQL 8's ``AS excluded`` upsert?"""
    probe_class = type("_Probe", (_FakeServer, detector_class), {})
    try:
        return bool(probe_class().requires_values_upsert_alias(None))
    except Exception:
        # A changed detector API means this patch no longer fits that RelStorage.
        return False


def _make_upsert_alias_check(original: Callable[..., Any]) -> Callable[..., Any]:
    # Both the SQL compiler and ObjectMover.restore() ask this method, so one patch
    # covers every upsert.  MariaDB understands the pre-8.0.19 ``VALUES(col)`` form.
    @functools.wraps(original)
    def requires_values_upsert_alias(self: Any, cursor: Any) -> bool:
        alias = original(self, cursor)
        if alias and _server_is_mariadb(self, cursor):
            _record("upserts use VALUES() instead of 'AS excluded'", self.get_version(cursor))
            return False
        return alias

    return requires_values_upsert_alias


# --- Patch 2: history-preserving object_state (schema.py; broken in RelStorage 4.3.0) ---


def _has_inline_references(installer_class: type) -> bool:
    """Does the history-preserving ``object_state`` template still declare column REFERENCES?"""
    templates = getattr(installer_class, "CREATE_OBJECT_STATE_TMPLS", None)
    if not templates or not isinstance(templates[0], str):
        return False
    return bool(_COLUMN_REFERENCES.search(templates[0]))


def _make_create_object_state(original: Callable[..., Any]) -> Callable[..., Any]:
    # Dropping the clauses gives MariaDB the same table MySQL builds, since MySQL
    # ignores column-level REFERENCES.
    @functools.wraps(original)
    def _create_object_state(self: Any, cursor: Any) -> None:
        if self.keep_history and _server_is_mariadb(self.version_detector, cursor):
            script = _COLUMN_REFERENCES.sub("", self.CREATE_OBJECT_STATE_TMPL)
            self.runner.run_script(cursor, script)
            _record(
                "object_state created without column-level REFERENCES",
                self.version_detector.get_version(cursor),
            )
            return
        original(self, cursor)

    return _create_object_state
