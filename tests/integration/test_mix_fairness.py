"""mix --hosts: one host behind a delayed link gets a smaller share of the commits.

Network namespaces made by the test stand in for two client hosts and a
database host, joined by a bridge (support.netns, as test_hosts_netns);
a fake ``ssh`` first on PATH runs execnet's command in the namespace named
as host.  One ZEO server runs in the database's namespace.  Each client
host reaches it at its own loopback address, 127.0.0.1:PORT, through a
userspace proxy there (this kernel has no netem): host a's forwards at
once, host b's delays each direction by DELAY_MS.  The same configuration
then means a fast link from a and a slow one from b.  The workers
alternate a, b; an update transaction waits on the server at least twice
(vote, finish), so b's workers commit far fewer.  Skips with the reason
when not root.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from support import netns, servers
from support.processes import wait_until_session_empty

pytestmark = [pytest.mark.netns, pytest.mark.slow, pytest.mark.zeo]

DELAY_MS = 5.0
PORT = 8100
SUPPORT = Path(__file__).parent.parent / "support"


@pytest.fixture(scope="module")
def network():
    reason = netns.can_create_namespaces()
    if reason:
        pytest.skip(reason)
    directory = Path(tempfile.mkdtemp(prefix="zodbshootout-fairness-"))
    with netns.Network("a", "b", "db") as network:
        database = network["db"]
        servers.start_zeo(database, directory, PORT)
        proxy = [sys.executable, str(SUPPORT / "delay_proxy.py"), "127.0.0.1", str(PORT)]
        for name, delay in (("a", 0.0), ("b", DELAY_MS)):
            network[name].spawn([*proxy, database.address, str(PORT), str(delay)])
            network[name].wait_for_port(PORT, address="127.0.0.1")
        yield network
    subprocess.run(["rm", "-rf", str(directory)], check=False)


def test_the_host_behind_the_delayed_link_gets_fewer_commits_and_is_named(network, tmp_path):
    config = tmp_path / "fairness.conf"
    config.write_text(
        "%import ZEO\n<zodb zeo>\n  <clientstorage>\n"
        f"    server 127.0.0.1:{PORT}\n    wait-timeout 5\n  </clientstorage>\n</zodb>\n"
    )
    result_path = tmp_path / "fairness.json"
    a, b = network["a"].name, network["b"].name
    env = dict(os.environ, PATH=f"{netns.fake_ssh(str(tmp_path))}:{os.environ['PATH']}")
    command = [
        sys.executable, "-m", "zodbshootout", "mix", str(config), "--hosts", f"{a},{b}",
        "--mix", "update=1", "--keys", "uniform", "-n", "2000", "-k", "2", "-c", "4",
        "-d", "2.5", "--warmup", "0.5", "--seed", "7", "--per-worker",
        "-o", str(result_path),
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
    try:
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert wait_until_session_empty(process.pid) == []
    assert process.returncode == 0, f"{stdout}\n{stderr}"
    (record,) = json.loads(result_path.read_text())["mix"]
    workers = record["workers"]
    assert [w["host"] for w in workers] == [a, b, a, b]
    # The independent check: every worker's changes add up to the database's own.
    assert record["uncertain_increments"] == 0
    assert (
        sum(w["increments"] + w["warmup_increments"] for w in workers) == (record["changes_found"])
    )
    on = {host: sum(w["transactions"] for w in workers if w["host"] == host) for host in (a, b)}
    assert on[b] < 0.6 * on[a], on
    # The table: the fairness figure below 1, host b's share, the starved workers of b.
    fairness = next(line for line in stdout.splitlines() if "fairness: Jain's index" in line)
    jain = float(fairness.split("Jain's index ")[1].split()[0])
    assert jain < 0.95, stdout
    share_b = next(line for line in stdout.splitlines() if line.strip().startswith(f"host {b}:"))
    assert "2 workers" in share_b, share_b
    assert "(fair 50%)" in share_b, share_b
    starved = [line for line in stderr.splitlines() if "is starved" in line]
    assert starved, f"{stdout}\n{stderr}"
    named = {re.search(r"zeo: (worker \d+) on host (\S+) is starved", line) for line in starved}
    assert {(found[1], found[2]) for found in named if found} <= {
        ("worker 1", b),
        ("worker 3", b),
    }, starved
    assert len(named) == len(starved), starved
    # The table says it too, as a note.
    assert any("warning: zeo: worker" in line and b in line for line in stdout.splitlines())
