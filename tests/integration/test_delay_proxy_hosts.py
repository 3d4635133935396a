"""--hosts: the delaying proxy runs on the worker host, started there over ssh.

A network namespace made by the test stands in for the worker host, and a
fake ``ssh`` first on PATH runs the command there (support.netns).  The
proxy must listen on that host's loopback, reach the server as that host
does, delay as asked, and stop when its owner stops it.  Skips with the
reason when not root.
"""

from __future__ import annotations

import os
import sys
import textwrap

import pytest

from zodbshootout.config.hosts import HostSpec
from zodbshootout.network.delays import RttStep
from zodbshootout.network.process import ProxyProcess, proxy_command

from support import netns

pytestmark = [pytest.mark.netns, pytest.mark.slow]

ECHO_PORT = 7000
ECHO = textwrap.dedent(
    f"""
    import socket, threading
    listener = socket.create_server(("0.0.0.0", {ECHO_PORT}))
    def echo(connection):
        while data := connection.recv(65536):
            connection.sendall(data)
    while True:
        connection, _ = listener.accept()
        threading.Thread(target=echo, args=(connection,), daemon=True).start()
    """
)
PING = textwrap.dedent(
    """
    import socket, statistics, sys, time
    def median(port):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        durations = []
        for _ in range(23):
            start = time.perf_counter()
            sock.sendall(b"x" * 32)
            received = 0
            while received < 32:
                received += len(sock.recv(64))
            durations.append(time.perf_counter() - start)
        return statistics.median(durations[3:])
    through, direct = (int(port) for port in sys.argv[1:])
    print(min(median(through) for _ in range(3)) - min(median(direct) for _ in range(3)))
    """
)


@pytest.mark.alone  # the delay within 0.2 ms: a loaded run added 1.8 ms
def test_a_proxy_on_a_worker_host_listens_and_delays_there(tmp_path, monkeypatch):
    reason = netns.can_create_namespaces()
    if reason:
        pytest.skip(reason)
    monkeypatch.setenv("PATH", f"{netns.fake_ssh(str(tmp_path))}:{os.environ['PATH']}")
    with netns.Network("worker") as network:
        worker = network["worker"]
        worker.spawn([sys.executable, "-c", ECHO])
        worker.wait_for_port(ECHO_PORT)
        host = HostSpec(worker.name, python=sys.executable)
        command = proxy_command(host)
        assert command[0] == "ssh"
        proxy = ProxyProcess([("127.0.0.1", ECHO_PORT)], RttStep(2e-3), command=command)
        try:
            ((listen_host, port),) = proxy.listening
            assert listen_host == "127.0.0.1"
            # It runs in the worker host's network, not in this one.
            assert os.readlink(f"/proc/{proxy.pid}/ns/net") == netns.namespace_id(worker.name)
            pinged = worker.run([sys.executable, "-c", PING, str(port), str(ECHO_PORT)])
            assert pinged.returncode == 0, f"{pinged.stdout}\n{pinged.stderr}"
            added = float(pinged.stdout)
            assert abs(added - 2e-3) <= 0.2e-3, added
        finally:
            proxy.stop()
        assert proxy.exit_code == 0
