"""The embedded ZEO servers: launched side by side, and stopped cleanly (SIGTERM, closed pipe)."""

from __future__ import annotations

import pathlib
import time

import pytest
import transaction
import ZEO
from ZODB.FileStorage import FileStorage

from zodbshootout.config.loader import load_config
from zodbshootout.errors import CellError
from zodbshootout.storages.servers import embedded_servers
from zodbshootout.storages.zeo.server import ServerRequest, ZEOServerProcess

from support import configs


def _served_server(write_config, data_dir) -> ZEOServerProcess:
    """A started server for one embedded ZEO section, which a client has written to."""
    config = load_config(write_config(configs.embedded_zeo("db")), str(data_dir))
    server = ZEOServerProcess(ServerRequest(config.source, "db", 0))
    db = ZEO.DB(server.address)
    try:
        with db.transaction() as conn:
            conn.root()["written"] = 1
    finally:
        db.close()
    transaction.abort()
    return server


def test_stop_ends_the_server_with_exit_code_0(write_config, data_dir):
    server = _served_server(write_config, data_dir)
    server.stop()
    # Before, the exit waited on the stdin lock held by the pipe-watching
    # thread and aborted (SIGABRT, "Fatal Python error").
    assert server.exit_code == 0


def test_a_closed_pipe_stops_the_server_by_itself(write_config, data_dir):
    server = _served_server(write_config, data_dir)
    try:
        server.close_input()
        deadline = time.monotonic() + 30
        while server.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not server.alive()
        assert server.exit_code == 0
    finally:
        server.stop()


def _threads_of(pid: int) -> int:
    status = pathlib.Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("Threads:")))


def test_a_server_has_one_thread_as_runzeo_does(write_config, data_dir):
    # It watches its input by a signal: a second thread, even one blocked on
    # the pipe, made every system call of the server dearer.
    server = _served_server(write_config, data_dir)
    try:
        assert _threads_of(server.pid) == 1
    finally:
        server.stop()
    assert server.exit_code == 0


def test_servers_of_several_databases_start_side_by_side(write_config, data_dir):
    text = "".join(configs.embedded_zeo(name) for name in ("first", "locked", "last"))
    config = load_config(write_config(text), str(data_dir))
    # Holding its FileStorage's lock here makes the middle server fail to start.
    holder = FileStorage(str(pathlib.Path(data_dir) / "locked.fs"))
    try:
        with embedded_servers(config, ["first", "locked", "last"]) as servers:
            # Every server was launched before anyone asked for an address.
            launched = servers.launched()
            assert len(launched) == 3
            with pytest.raises(CellError, match="did not start: LockError"):
                servers.addresses("locked")
            for name in ("first", "last"):
                [address] = servers.addresses(name)
                ZEO.DB(address).close()
    finally:
        holder.close()
    assert [server.exit_code == 0 for server in launched] == [True, False, True]
