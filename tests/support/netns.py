"""Two test hosts on one machine: Linux network namespaces joined by a veth pair.

Both ends live in namespaces this module creates, so every address it uses
exists only inside them; nothing is routed anywhere else.  Servers started
in a host are ordinary processes whose PIDs we keep and stop ourselves.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence

SUBNET_PREFIX = "10.231.77"  # inside the test's own namespaces only


def can_create_namespaces() -> str | None:
    """None when this process can create network namespaces, else why not."""
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    if shutil.which("ip") is None:
        return "the 'ip' command (iproute2) is not installed"
    probe = f"zsprobe{os.getpid()}"
    done = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if done.returncode != 0:
        return f"cannot create a network namespace: {done.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


class Host:
    """A network namespace with one veth end and an address."""

    def __init__(self, name: str, address: str) -> None:
        self.name = name
        self.address = address
        self.processes: list[subprocess.Popen] = []

    def command(self, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.name, *argv]

    def run(self, argv: Sequence[str], **kwargs) -> subprocess.CompletedProcess:
        kwargs.setdefault("capture_output", True)
        kwargs.setdefault("text", True)
        return subprocess.run(self.command(argv), **kwargs)

    def spawn(self, argv: Sequence[str], **kwargs) -> subprocess.Popen:
        kwargs.setdefault("stdout", subprocess.DEVNULL)
        kwargs.setdefault("stderr", subprocess.DEVNULL)
        process = subprocess.Popen(self.command(argv), **kwargs)
        self.processes.append(process)
        return process

    def wait_for_port(
        self, port: int, timeout_seconds: float = 60, address: str | None = None
    ) -> None:
        """Wait until something accepts connections on *port* of this host's address
        (or of *address* inside this host: its own loopback, say)."""
        deadline = time.monotonic() + timeout_seconds
        address = address or self.address
        probe = (
            "import socket,sys\n"
            f"socket.create_connection(('{address}', {port}), timeout=1).close()\n"
        )
        while time.monotonic() < deadline:
            if self.run(["python3", "-c", probe]).returncode == 0:
                return
            time.sleep(0.3)
        raise TimeoutError(f"nothing listens on {address}:{port} in {self.name}")

    def stop_processes(self, since: int = 0) -> None:
        """Stop the processes spawned here, or those from the *since*-th on (the later ones)."""
        for process in reversed(self.processes[since:]):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(20)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        del self.processes[since:]


class TwoHosts:
    """A client host and a server host joined by a veth pair (optionally delayed)."""

    def __init__(self, delay_ms: float = 0.0) -> None:
        tag = f"{os.getpid() % 100000}"
        self.client = Host(f"zs-client-{tag}", f"{SUBNET_PREFIX}.1")
        self.server = Host(f"zs-server-{tag}", f"{SUBNET_PREFIX}.2")
        self._veth = (f"zsc{tag}", f"zss{tag}")
        self.delay_ms = delay_ms
        self.delay_unavailable: str | None = None

    def __enter__(self) -> TwoHosts:
        client_end, server_end = self._veth
        try:
            for host in (self.client, self.server):
                _ip("netns", "add", host.name)
                host.run(["ip", "link", "set", "lo", "up"], check=True)
            _ip("link", "add", client_end, "type", "veth", "peer", "name", server_end)
            _ip("link", "set", client_end, "netns", self.client.name)
            _ip("link", "set", server_end, "netns", self.server.name)
            for host, end in ((self.client, client_end), (self.server, server_end)):
                host.run(["ip", "addr", "add", f"{host.address}/30", "dev", end], check=True)
                host.run(["ip", "link", "set", end, "up"], check=True)
            if self.delay_ms:
                added = self.server.run(
                    [
                        "tc",
                        "qdisc",
                        "add",
                        "dev",
                        server_end,
                        "root",
                        "netem",
                        "delay",
                        f"{self.delay_ms}ms",
                    ],
                )
                if added.returncode != 0:
                    # The netem qdisc is a kernel module some sandboxes lack.
                    self.delay_unavailable = added.stderr.strip()
                    self.delay_ms = 0.0
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        for host in (self.client, self.server):
            host.stop_processes()
            subprocess.run(["ip", "netns", "del", host.name], capture_output=True)


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True, text=True)


class Network:
    """Several test hosts on one switch: a namespace each, joined by a bridge.

    The bridge lives in a namespace of its own; each host has a veth pair
    whose other end is a port of the bridge.  Addresses are
    ``NETWORK_PREFIX.1``, ``.2``, ... in the order of *names*, and exist only
    inside these namespaces.
    """

    def __init__(self, *names: str) -> None:
        tag = f"{os.getpid() % 100000}"
        self.hosts = {
            name: Host(f"zs-{name}-{tag}", f"{NETWORK_PREFIX}.{index}")
            for index, name in enumerate(names, 1)
        }
        self.switch = f"zs-switch-{tag}"
        self._tag = tag

    def __getitem__(self, name: str) -> Host:
        return self.hosts[name]

    def __enter__(self) -> Network:
        try:
            _ip("netns", "add", self.switch)
            _in(self.switch, "ip", "link", "add", "br0", "type", "bridge")
            _in(self.switch, "ip", "link", "set", "br0", "up")
            for index, host in enumerate(self.hosts.values(), 1):
                _ip("netns", "add", host.name)
                host.run(["ip", "link", "set", "lo", "up"], check=True)
                inner, port = f"zsh{index}-{self._tag}", f"zsp{index}-{self._tag}"
                _ip("link", "add", inner, "type", "veth", "peer", "name", port)
                _ip("link", "set", inner, "netns", host.name)
                _ip("link", "set", port, "netns", self.switch)
                _in(self.switch, "ip", "link", "set", port, "master", "br0")
                _in(self.switch, "ip", "link", "set", port, "up")
                host.run(["ip", "addr", "add", f"{host.address}/24", "dev", inner], check=True)
                host.run(["ip", "link", "set", inner, "up"], check=True)
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc_info: object) -> None:
        for host in self.hosts.values():
            host.stop_processes()
            subprocess.run(["ip", "netns", "del", host.name], capture_output=True)
        subprocess.run(["ip", "netns", "del", self.switch], capture_output=True)


NETWORK_PREFIX = "10.231.78"  # inside the test's own namespaces only


def namespace_id(name: str) -> str:
    """How a process in namespace *name* sees it: ``readlink /proc/self/ns/net``."""
    return f"net:[{os.stat(f'/run/netns/{name}').st_ino}]"


def fake_ssh(directory: str) -> str:
    """A directory holding an ``ssh`` that runs its command in the namespace named as host.

    execnet's ssh gateway runs ``ssh [options] HOST COMMAND``; put the
    directory first on PATH and HOST is a namespace of this machine.
    """
    path = os.path.join(directory, "ssh")
    with open(path, "w") as script:
        script.write(
            "#!/bin/sh\n"
            "# Test stand-in for ssh: the host is a network namespace of this machine.\n"
            'while [ "$#" -gt 2 ]; do shift; done\n'
            'exec ip netns exec "$1" sh -c "exec $2"\n'
        )
    os.chmod(path, 0o755)
    return directory


def _in(namespace: str, *argv: str) -> None:
    _ip("netns", "exec", namespace, *argv)
