"""--hosts across network namespaces: two client "hosts" and a database "host".

Namespaces made by the test stand in for machines, joined by a bridge;
a fake ``ssh`` first on PATH runs execnet's command in the namespace
named as host (``ip netns exec``).  Two ZEO servers run in the database's
namespace, the second behind a userspace proxy that delays each direction
by DELAY_MS (this kernel has no netem).  The command runs in host a, the
coordinator; its workers run in a and b.  Skips with the reason when not
root.

etc/remote-sample.conf runs against the database host's address too: its
ZEO runs there, and proxies listening there forward PostgreSQL, MariaDB
and memcached to the machine's own provisioned servers on the root
namespace's loopback (etc/provision.sh), which the test leaves as they are.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import ETC, table_rows
from support import netns, servers
from support.processes import session_processes, wait_until_session_empty

pytestmark = [pytest.mark.netns, pytest.mark.slow, pytest.mark.zeo]

DELAY_MS = 5.0
SUPPORT = Path(__file__).parent.parent / "support"
#: How far an RTT the proxy added may miss the one asked for: 15 %, or a
#: scheduling delay, which is the same whatever the delay. On a 2-core VM
#: with two hosts' proxies and workers running, 3 ms came out 3.51 ms.
RTT_ALLOWANCE_SECONDS = 0.6e-3


def _config(database: str) -> str:
    def zeo(name: str, port: int) -> str:
        return (
            f"<zodb {name}>\n  <clientstorage>\n    server {database}:{port}\n"
            "    wait-timeout 5\n  </clientstorage>\n</zodb>\n"
        )

    return "%import ZEO\n" + zeo("direct", 8100) + zeo("delayed", 8101)


@pytest.fixture(scope="module")
def network():
    reason = netns.can_create_namespaces()
    if reason:
        pytest.skip(reason)
    directory = Path(tempfile.mkdtemp(prefix="zodbshootout-hosts-"))
    with netns.Network("a", "b", "db") as network:
        database = network["db"]
        for port in (8100, 8200):
            (directory / str(port)).mkdir()
            servers.start_zeo(database, directory / str(port), port)
        proxy = SUPPORT / "delay_proxy.py"
        address = database.address
        delay = str(DELAY_MS)
        database.spawn([sys.executable, str(proxy), address, "8101", address, "8200", delay])
        database.wait_for_port(8101)
        yield network
    subprocess.run(["rm", "-rf", str(directory)], check=False)


def _start(
    network, tmp_path: Path, *args: str, fault: str | None = None, config: Path | None = None
):
    """The command in host a, workers on a and b, in a session of its own.

    *config* defaults to the module's two ZEO servers.
    """
    if config is None:
        config = tmp_path / "hosts.conf"
        config.write_text(_config(network["db"].address))
    env = dict(os.environ, PATH=f"{netns.fake_ssh(str(tmp_path))}:{os.environ['PATH']}")
    if fault:
        env["ZODBSHOOTOUT_FAULT"] = fault
    hosts = f"{network['a'].name},{network['b'].name}"
    command = [sys.executable, "-m", "zodbshootout", str(config), "--hosts", hosts, *args]
    return subprocess.Popen(
        network["a"].command(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
    )


def _finish(process: subprocess.Popen, head: str = ""):
    """Its outcome (*head*: stderr read already) and the processes left in its session."""
    try:
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    left = wait_until_session_empty(process.pid)
    outcome = subprocess.CompletedProcess(process.args, process.returncode, stdout, head + stderr)
    return outcome, left


def _run(network, tmp_path: Path, *args: str, fault: str | None = None, config: Path | None = None):
    return _finish(_start(network, tmp_path, *args, fault=fault, config=config))


def _gateway_in(session: int, namespace: str, timeout: float = 60) -> int:
    """The PID of an execnet gateway of *session* that runs in *namespace*."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in session_processes(session):
            pid, _, cmdline = line.partition(" ")
            try:
                here = os.readlink(f"/proc/{pid}/ns/net")
            except OSError:
                continue
            if "exec(eval(sys.stdin" in cmdline and here == netns.namespace_id(namespace):
                return int(pid)
        time.sleep(0.2)
    raise AssertionError(f"no gateway of the run in {namespace}")


def _rate(cell: str) -> int | None:
    found = re.match(r"^(\d+)(\[\d+\])?$", cell)
    return int(found.group(1)) if found else None


def test_two_hosts_measure_and_record_where_and_how(network, tmp_path):
    result_path = tmp_path / "two.json"
    # Three repetitions: a cell is their mean, and one sample that a loaded
    # machine stalled for tens of milliseconds (a direct add once came out
    # at 0.85 of the delayed one's time) no longer decides the ratios below.
    done, left = _run(
        network, tmp_path, "-n", "20", "-c", "2", "-r", "3", "-q", "-v",
        "-o", str(result_path), "add", "cold", "steamin",
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert left == []
    table = table_rows(done.stdout)
    assert list(table) == ["Add 20 Objects", "Read 20 Cold Objects", "Read 20 Steamin' Objects"]
    rates = {label: [_rate(cell) for cell in cells] for label, cells in table.items()}
    assert all(rate for cells in rates.values() for rate in cells), done.stdout
    metadata = json.loads(result_path.read_text())["metadata"]
    for name in ("a", "b"):
        host = metadata["hosts"][network[name].name]
        assert host["environment"]["python"]["version"], host
        # The host's probe and every worker of every stage ran in its namespace.
        assert host["net_namespace"] == netns.namespace_id(network[name].name)
        assert [p["net_namespace"] for p in host["worker_places"]] == [host["net_namespace"]]
        # The round trip to the delayed server shows the proxy's delay both ways.
        assert host["latency_seconds"]["delayed"] >= 2 * DELAY_MS / 1000, host["latency_seconds"]
    latencies = [metadata["hosts"][network[name].name]["latency_seconds"] for name in ("a", "b")]
    # A median of a few pings on a loaded machine: the faster host's tells.
    assert min(rtt["direct"] for rtt in latencies) < min(rtt["delayed"] for rtt in latencies)
    skews = [s for s in metadata["barrier_skew"] if s["repetition"] == 1]
    assert {(s["database"], s["phase"]) for s in skews} == {
        (database, phase)
        for database in ("direct", "delayed")
        for phase in ("add", "cold", "steamin")
    }
    assert all(0 <= s["skew_seconds"] < 1 for s in skews), skews
    # Per-transaction phases pay the round trips; steamin reads the pickle cache.
    add, cold, steamin = rates.values()
    assert add[1] < 0.7 * add[0], add
    assert cold[1] < 0.7 * cold[0], cold
    # Steamin does not fall.  Its one sample per column is CPU-bound and moves
    # with the machine's load: a delayed column that comes out faster says
    # nothing about the network, so there is no upper bound.
    assert steamin[1] > steamin[0] / 3, steamin
    assert re.search(r"host zs-b-\d+ → delayed: round trip \d+ µs", done.stderr)


def test_a_gateway_killed_on_one_host_fails_only_its_cells(network, tmp_path):
    # Workers alternate a, b: worker 1 runs in b, and hangs in cold until it is
    # killed from outside, as a crashed machine or a killed ssh would end it.
    process = _start(
        network, tmp_path, "-n", "20", "-c", "2", "-r", "1", "add", "cold",
        fault="delayed:cold:1:hang",
    )  # fmt: skip
    head = ""
    while "delayed: 20 objects, concurrency 2, repetition 1/1: read" not in head:
        line = process.stderr.readline()
        assert line, head
        head += line
    gateway = _gateway_in(process.pid, network["b"].name)
    time.sleep(3)  # mostly long enough to reach its hang in cold
    os.kill(gateway, signal.SIGKILL)
    done, left = _finish(process, head)
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    assert left == []
    table = table_rows(done.stdout)
    assert _rate(table["Add 20 Objects"][1]), done.stdout + done.stderr
    assert _rate(table["Read 20 Cold Objects"][1]) is None
    assert all(_rate(cells[0]) for cells in table.values())
    footnotes = [line for line in done.stdout.splitlines() if "stage failed" in line]
    assert len(footnotes) == 1, done.stdout
    # Killed while it hung, or (on a slow machine) while it was still starting.
    b = network["b"].name
    assert re.search(
        rf"read stage failed: (worker 1 on host {b} died \(killed by SIGKILL\)"
        rf"|host {b}: worker 1 did not start)",
        footnotes[0],
    ), footnotes


# etc/remote-sample.conf: the machine's own servers, reached at the database host's address.
ROOT_SERVERS = {"postgresql": 5432, "mysql": 3306, "memcached": 24004}  # etc/provision.sh's
# A write and a read from the server: each repetition (and the warm-up) of each of
# the four databases is then one write and one read stage, each with fresh workers.
SAMPLE_PHASES = ("add", "cold")


@pytest.fixture
def sample_databases(network, provisioned_databases):
    """Every database of etc/remote-sample.conf at the database host's address.

    ZEO runs in that namespace on the sample's port; the rest are zero-delay
    proxies from there to the root namespace's servers, so these connections
    arrive from 127.0.0.1, as provisioned.  Stopped (by PID) afterwards.
    """
    database = network["db"]
    proxy = [sys.executable, str(SUPPORT / "delay_proxy.py"), "--listen-netns", database.name]
    proxies = [
        subprocess.Popen(
            [*proxy, database.address, str(port), "127.0.0.1", str(port), "0"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for port in ROOT_SERVERS.values()
    ]
    directory = Path(tempfile.mkdtemp(prefix="zodbshootout-sample-"))
    before = len(database.processes)  # the module's servers there stay up
    try:
        servers.start_zeo(database, directory, 24003)
        for port in ROOT_SERVERS.values():
            database.wait_for_port(port)
        yield database
    finally:
        for process in proxies:
            process.terminate()
            process.wait(20)
        database.stop_processes(since=before)
        subprocess.run(["rm", "-rf", str(directory)], check=False)


@pytest.mark.postgresql
@pytest.mark.mysql
@pytest.mark.memcached
def test_remote_sample_on_two_hosts_measures_every_database(network, sample_databases, tmp_path):
    config = tmp_path / "remote-sample.conf"
    # As its header says: change the host line only.
    line = f"%define host {sample_databases.address}"
    sample = (ETC / "remote-sample.conf").read_text()
    config.write_text(re.sub(r"(?m)^%define host .*$", line, sample, count=1))
    result_path = tmp_path / "remote.json"
    done, left = _run(
        network, tmp_path, "-n", "50", "-c", "2", "-r", "1", "-q",
        "-o", str(result_path), *SAMPLE_PHASES, config=config,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert left == []
    header = done.stdout.splitlines()[0]
    databases = ["postgresql", "mysql", "mysql_mc", "zeo_fs"]
    assert [cell.strip() for cell in header.split(",")] == ['"Transaction"', *databases]
    table = table_rows(done.stdout)
    assert list(table) == ["Add 50 Objects", "Read 50 Cold Objects"], done.stdout
    for label, cells in table.items():
        assert len(cells) == len(databases), (label, cells)
        assert all(_rate(cell) for cell in cells), (label, cells)
    metadata = json.loads(result_path.read_text())["metadata"]
    assert set(metadata["hosts"]) == {network["a"].name, network["b"].name}
    for name in ("a", "b"):
        host = metadata["hosts"][network[name].name]
        assert host["environment"]["python"]["version"], host
        assert host["environment"]["packages"]["RelStorage"], host["environment"]
        # Every worker of every stage ran in the namespace it was assigned to.
        assert host["net_namespace"] == netns.namespace_id(network[name].name)
        assert [p["net_namespace"] for p in host["worker_places"]] == [host["net_namespace"]]
    measured = [s for s in metadata["barrier_skew"] if s["repetition"] == 1]
    assert {(s["database"], s["phase"]) for s in measured} == {
        (database, phase) for database in databases for phase in SAMPLE_PHASES
    }
    assert all(0 <= s["skew_seconds"] < 1 for s in measured), measured


@pytest.mark.alone  # a slope of round trips against the RTT: load bends it
def test_an_rtt_ladder_runs_its_proxy_on_the_worker_host(network, tmp_path):
    """--rtt with one worker host: the proxy runs there, and the RTT is measured from there."""
    config = tmp_path / "direct.conf"
    config.write_text(_config(network["db"].address).split("<zodb delayed>")[0])
    result_path = tmp_path / "rtt.json"
    env = dict(os.environ, PATH=f"{netns.fake_ssh(str(tmp_path))}:{os.environ['PATH']}")
    command = [
        sys.executable, "-m", "zodbshootout", str(config), "--hosts", network["b"].name,
        "--rtt", "0,3ms", "-n", "20", "-c", "1", "-r", "2", "-q", "--work",
        "-o", str(result_path), "cold", "steamin",
    ]  # fmt: skip
    process = subprocess.Popen(
        network["a"].command(command),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
        start_new_session=True,
    )
    done, left = _finish(process)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert left == []
    metadata = json.loads(result_path.read_text())["metadata"]
    assert metadata["rtt"]["proxy_host"] == network["b"].name
    rows = metadata["rtt"]["rows"]
    assert list(rows) == ["direct@0ms", "direct@3ms"]
    for row, asked in zip(rows.values(), (0, 3e-3), strict=True):
        added = row["proxied_seconds"]["direct"] - row["base_seconds"]["direct"]
        # One probe each from the worker host (a median of a few pings), across the bridge.
        assert abs(added - asked) <= max(0.15 * asked, RTT_ALLOWANCE_SECONDS), (asked, added)
    fits = {fit["what"]: fit for fit in metadata["rtt"]["fits"]}
    cold = fits["cold"]
    assert abs(cold["slope"] - cold["counted"]) <= 0.2 * cold["counted"], cold
    assert abs(fits["steamin"]["slope"]) < 0.05 * cold["slope"]


@pytest.mark.alone  # the same slope, with two hosts: the CI pre-check's suite load bent it 21 %
def test_an_rtt_ladder_runs_a_proxy_on_each_worker_host(network, tmp_path):
    """--rtt with two worker hosts: a proxy on each, on the same ports, each measured there."""
    config = tmp_path / "direct.conf"
    config.write_text(_config(network["db"].address).split("<zodb delayed>")[0])
    result_path = tmp_path / "rtt.json"
    # 6 ms and three repetitions: with two proxies and two workers on two
    # cores, each round trip pays a scheduling delay that the RTT probe does
    # not, and at 3 ms with two repetitions that steepened the slope 23 %
    # even with the test running alone.  A larger step and the best of three
    # keep that delay a small part of the line.
    done, left = _run(
        network, tmp_path, "--rtt", "0,6ms", "-n", "20", "-c", "2", "-r", "3", "-q", "--work",
        "-o", str(result_path), "cold", "steamin", config=config,
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert left == []
    metadata = json.loads(result_path.read_text())["metadata"]
    hosts = [network["a"].name, network["b"].name]
    assert metadata["rtt"]["proxy_hosts"] == hosts
    rows = metadata["rtt"]["rows"]
    assert list(rows) == ["direct@0ms", "direct@6ms"]
    for row, asked in zip(rows.values(), (0, 6e-3), strict=True):
        # Each host reached the server through a proxy on its own loopback, delayed as asked.
        assert sorted(row["hosts"]) == sorted(hosts)
        for seen in row["hosts"].values():
            added = seen["proxied_seconds"]["direct"] - seen["base_seconds"]["direct"]
            allowed = max(0.15 * asked, RTT_ALLOWANCE_SECONDS)
            assert abs(added - asked) <= allowed, (asked, added, row)
    # Workers ran on both hosts, each in its own namespace (where its proxy listened).
    for name in ("a", "b"):
        host = metadata["hosts"][network[name].name]
        assert [p["net_namespace"] for p in host["worker_places"]] == [host["net_namespace"]]
    fits = {fit["what"]: fit for fit in metadata["rtt"]["fits"]}
    cold = fits["cold"]
    assert abs(cold["slope"] - cold["counted"]) <= 0.2 * cold["counted"], cold
    assert abs(fits["steamin"]["slope"]) < 0.05 * cold["slope"]
