"""Whether a SQL driver's error says the server is gone, not that a statement failed.

A mix worker stops at once on such an error (see mix.worker): RelStorage
reconnects at the next transaction, which fails again as long as the server
is down, so retrying only turns every remaining second into failures.  The
drivers are recognised by their module, without importing them:

- PostgreSQL (psycopg2, psycopg2cffi): an ``OperationalError`` or
  ``InterfaceError`` without a SQLSTATE (libpq's own: "server closed the
  connection unexpectedly", "connection refused", "connection already
  closed"), or with one of class 08 (connection exception) or the
  shutdowns 57P01-57P03 (the server going down or starting up).  A failed
  statement (a serialization failure, a lock or statement timeout) has
  another SQLSTATE and is not a lost server.
- pg8000: an ``InterfaceError`` (its network errors; the server's errors
  are ``DatabaseError``\\ s), or the socket's own ``ConnectionError``
  (reset, refused, broken pipe), which it lets through.
- MySQL and MariaDB (MySQLdb, PyMySQL, mysql.connector): an
  ``InterfaceError``, or an ``OperationalError`` whose code says the
  connection is gone (2002, 2003, 2006, 2013, 2055) or the server is
  shutting down or killed it (1053, 1927).  A lock wait or deadlock (1205,
  1213) is not.
"""

from __future__ import annotations

_POSTGRESQL = frozenset({"psycopg2", "psycopg2cffi"})
_MYSQL = frozenset({"MySQLdb", "pymysql", "mysql"})
_POSTGRESQL_SHUTDOWN = frozenset({"57P01", "57P02", "57P03"})
_MYSQL_LOST = frozenset({2002, 2003, 2006, 2013, 2055, 1053, 1927})


def connection_lost(error: BaseException) -> bool:
    """Whether *error*, from a PostgreSQL or MySQL driver, says its server is gone."""
    if isinstance(error, ConnectionError):
        return True  # a socket's reset, refusal or broken pipe (pg8000 lets them through)
    names = {(cls.__module__.split(".")[0], cls.__name__) for cls in type(error).__mro__}
    drivers = {module for module, _name in names}
    classes = {name for _module, name in names}
    if drivers & _POSTGRESQL:
        if not classes & {"OperationalError", "InterfaceError"}:
            return False
        code = getattr(error, "pgcode", None)
        if code is None:
            # libpq's own errors are the plain classes; the server's have a
            # SQLSTATE, and a class of psycopg2.errors when it is known.
            return not type(error).__module__.endswith(".errors")
        return code.startswith("08") or code in _POSTGRESQL_SHUTDOWN
    if "pg8000" in drivers:
        return "InterfaceError" in classes
    if drivers & _MYSQL:
        if "InterfaceError" in classes:
            return True
        if "OperationalError" not in classes:
            return False
        code = error.args[0] if error.args else None
        return code in _MYSQL_LOST
    return False
