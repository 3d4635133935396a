"""The embedded ZEO server stops cleanly: on SIGTERM and when the runner's pipe closes."""

from __future__ import annotations

import time

import transaction
import ZEO

from zodbshootout.config import load_config
from zodbshootout.zeo_server import ServerRequest, ZEOServerProcess

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
        server.close_pipe()
        deadline = time.monotonic() + 30
        while server.alive() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not server.alive()
        assert server.exit_code == 0
    finally:
        server.stop()
