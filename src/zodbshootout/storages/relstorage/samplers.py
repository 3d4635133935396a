"""RelStorage's servers sampled on the run's time axis: PostgreSQL, MariaDB/MySQL, memcached.

Each sampler has a connection of its own (the adapter's connection
manager opens it as RelStorage would; memcached's a plain socket) and
reads the server's own statistics.  The SQL samplers read their views in
one transaction and roll it back, so a sample costs the database one
rollback and no commit (PostgreSQL's statistics are a snapshot per
transaction: a new transaction sees new figures).
"""

from __future__ import annotations

import socket
from typing import Any

from zodbshootout.storages.relstorage.network import memcached_address

Reading = dict[str, tuple[str, float]]

#: RelStorage's tables whose live and dead rows are sampled, where they exist.
TABLES = ("object_state", "current_object", "transaction", "blob_chunk", "object_ref")

_PG_DATABASE = (
    "SELECT xact_commit, xact_rollback, blks_hit, blks_read, deadlocks, temp_bytes "
    "FROM pg_stat_database WHERE datname = current_database()"
)
_PG_DATABASE_UNITS = (
    ("commits", "transactions"),
    ("rollbacks", "transactions"),
    ("blocks_hit", "blocks"),
    ("blocks_read", "blocks"),
    ("deadlocks", "deadlocks"),
    ("temp_bytes", "bytes"),
)
_PG_TABLES = (
    "SELECT relname, n_live_tup, n_dead_tup FROM pg_stat_user_tables "
    "WHERE schemaname = current_schema() AND relname = ANY(%s)"
)
_PG_ACTIVITY = (
    "SELECT count(*), count(*) FILTER (WHERE wait_event_type = 'Lock') "
    "FROM pg_stat_activity WHERE datname = current_database()"
)
_PG_LOCKS = "SELECT count(*) FROM pg_locks"


class _SQLSampler:
    """A connection of the adapter's own, its statements run and rolled back per sample."""

    name = "sql"

    def __init__(self, adapter: Any) -> None:
        self.connmanager = adapter.connmanager
        self.conn, self.cursor = self.connmanager.open()

    def read(self) -> Reading:
        try:
            return self._read(self.cursor)
        finally:
            self.conn.rollback()

    def _read(self, cursor: Any) -> Reading:
        raise NotImplementedError

    def close(self) -> None:
        self.connmanager.close(self.conn, self.cursor)


class PostgreSQLSampler(_SQLSampler):
    """pg_stat_database, pg_stat_user_tables (RelStorage's tables), pg_stat_activity, pg_locks."""

    name = "postgresql"

    def _read(self, cursor: Any) -> Reading:
        reading: Reading = {}
        cursor.execute(_PG_DATABASE)
        row = cursor.fetchone()
        if row is None:
            raise LookupError("pg_stat_database has no row for this database")
        for (name, unit), value in zip(_PG_DATABASE_UNITS, row, strict=True):
            if value is None:
                raise PermissionError(f"pg_stat_database's {name} is not readable")
            reading[name] = (unit, int(value))
        cursor.execute(_PG_TABLES, (list(TABLES),))
        for table, live, dead in cursor.fetchall():
            reading[f"{table}.live_rows"] = ("rows", int(live))
            reading[f"{table}.dead_rows"] = ("rows", int(dead))
        cursor.execute(_PG_ACTIVITY)
        connections, waiting = cursor.fetchone()
        reading["connections"] = ("connections", int(connections))
        reading["waiting_on_locks"] = ("connections", int(waiting))
        cursor.execute(_PG_LOCKS)
        reading["locks"] = ("locks", int(cursor.fetchone()[0]))
        return reading


#: SHOW GLOBAL STATUS variables sampled, with their series names and units.
_MYSQL_STATUS = {
    "Innodb_buffer_pool_reads": ("buffer_pool_reads", "reads"),
    "Innodb_buffer_pool_read_requests": ("buffer_pool_read_requests", "reads"),
    "Innodb_row_lock_waits": ("row_lock_waits", "waits"),
    "Threads_connected": ("threads_connected", "threads"),
    "Threads_running": ("threads_running", "threads"),
    "Com_commit": ("commits", "statements"),
    "Com_rollback": ("rollbacks", "statements"),
}


class MySQLSampler(_SQLSampler):
    """SHOW GLOBAL STATUS: InnoDB's reads and row lock waits, threads, commits."""

    name = "mysql"

    def _read(self, cursor: Any) -> Reading:
        names = ", ".join(f"'{name}'" for name in _MYSQL_STATUS)
        cursor.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({names})")
        reading: Reading = {}
        for variable, value in cursor.fetchall():
            variable = _text(variable)
            series, unit = _MYSQL_STATUS[variable]
            reading[series] = (unit, int(_text(value)))
        if not reading:
            raise PermissionError("SHOW GLOBAL STATUS returned none of InnoDB's counters")
        return reading


class MySQLHistorySampler(_SQLSampler):
    """InnoDB's history list length (information_schema.INNODB_METRICS), where readable."""

    name = "innodb"

    def _read(self, cursor: Any) -> Reading:
        cursor.execute(
            "SELECT `COUNT` FROM information_schema.INNODB_METRICS "
            "WHERE NAME = 'trx_rseg_history_len'"
        )
        row = cursor.fetchone()
        if row is None:
            raise LookupError("INNODB_METRICS has no trx_rseg_history_len")
        return {"history_list_length": ("undo logs", int(row[0]))}


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


#: memcached's ``stats`` fields sampled, with their units.
_MEMCACHED_STATS = {
    "get_hits": "gets",
    "get_misses": "gets",
    "cmd_set": "sets",
    "evictions": "items",
    "curr_items": "items",
    "bytes": "bytes",
    "curr_connections": "connections",
}


class MemcachedSampler:
    """A memcached server's ``stats``, on a socket of the sampler's own (text protocol)."""

    def __init__(self, server: str, timeout_seconds: float = 5.0) -> None:
        address = memcached_address(server)
        if address is None:
            raise ValueError(f"{server} is not a TCP host:port")
        self.name = f"memcached {server}"
        self.server = server
        self.sock = socket.create_connection(address, timeout=timeout_seconds)
        self.answers = self.sock.makefile("rb")

    def read(self) -> Reading:
        self.sock.sendall(b"stats\r\n")
        reading: Reading = {}
        while True:
            line = self.answers.readline()
            if not line:
                raise ConnectionError(f"memcached at {self.server} closed the connection")
            line = line.strip()
            if line == b"END":
                return reading
            parts = line.split()
            if len(parts) != 3 or parts[0] != b"STAT":
                raise ConnectionError(f"memcached at {self.server} answered {line[:40]!r}")
            field = parts[1].decode("ascii", "replace")
            if field in _MEMCACHED_STATS:
                reading[field] = (_MEMCACHED_STATS[field], int(parts[2]))

    def close(self) -> None:
        self.answers.close()
        self.sock.close()


def sql_samplers(adapter: Any, family: str) -> list[Any]:
    """The samplers of a RelStorage adapter's database (none for SQLite: no server)."""
    if family == "postgresql":
        return [PostgreSQLSampler(adapter)]
    if family == "mysql":
        return [MySQLSampler(adapter), MySQLHistorySampler(adapter)]
    return []
