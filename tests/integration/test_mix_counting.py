"""mix --work: each operation's work per transaction, counted in an untimed pass after the run.

A read of K objects loads K when cold (its objects from the server, the
tree above them in memory) and nothing when hot, on every database of
etc/local.conf; the counts equal a ZEO server's own (``server_status``)
transaction by transaction; the measured workers count nothing; the
pass's commits are in the check after the run.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from zodbshootout.results import file as resultfile
from zodbshootout.results.mix import MixRun
from zodbshootout.results.mix_stats import integrity
from zodbshootout.results.work import mix_work

from conftest import ETC, run_cli
from support import configs
from support.inprocess import run_main
from support.local import runzeo

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

pytestmark = [pytest.mark.slow, pytest.mark.zeo]

K = 5
SUPPORT = pathlib.Path(__file__).parent.parent / "support"


def test_a_read_of_k_objects_loads_k_cold_and_none_hot_on_local_conf(tmp_path):
    out = tmp_path / "work.json"
    env = {"ZODBSHOOTOUT_DATA": str(tmp_path / "data")}
    done = run_cli(
        "mix", str(ETC / "local.conf"), "-n", "2000", "-c", "2", "-d", "0.5", "--warmup", "0.3",
        "--seed", "5", "--mix", "read=3,update=1", "--keys", "uniform", "-k", str(K), "--work",
        "-o", str(out), env=env,
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    run = MixRun.of(resultfile.load(str(out)))
    assert {r.database for r in run.records} == {"zeo_fs", "sqlite", "zeo_pcache"}
    for record in run.records:
        counted = mix_work(record.work)
        read, update = counted["read"], counted["update"]
        assert read["cold"].transactions == 10, record.database
        assert read["cold"].per_transaction("loads") == K, record.database
        assert read["cold"].per_transaction("server_loads") == K, record.database
        assert read["hot"].per_transaction("loads") == 0, record.database
        assert read["hot"].per_transaction("server_loads") == 0, record.database
        assert read["cold"].per_transaction("stores") == 0
        # An update loads its K objects cold, stores them both times.
        assert update["cold"].per_transaction("loads") == K
        assert (
            update["cold"].per_transaction("stores") == update["hot"].per_transaction("stores") == K
        )
        # Every change is accounted for: the workers', their warm-up's and the pass's.
        assert record.work_increments == 2 * 10 * K
        found = integrity(record)
        assert (found.stray, found.lost) == (0, 0), record.database
        # The measured workers counted no request: nothing was installed in them.
        assert record.counters.get("storage_loads") is None, record.counters
    assert "work per transaction (--work: untimed" in done.stdout
    rows = [line.split() for line in done.stdout.splitlines()]
    row = next(row for row in rows if row[:2] == ["read", "cold"])
    assert row[2:4] == [str(K), str(K)], row


def test_the_counts_equal_the_zeo_servers_own(tmp_path, write_config, data_dir):
    with runzeo(tmp_path / "served.fs") as (_process, port):
        config = write_config(configs.zeo_client("zeo", port))
        command = [sys.executable, str(SUPPORT / "mix_work_child.py"), config, data_dir]
        command += [str(port), "500", str(K)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    transactions = found["transactions"]
    for operation, states in found["server"].items():
        for state, server in states.items():
            counted = found["work"]["operations"][operation][state]
            assert counted["server_loads"] == server["loads"], (operation, state, found)
            assert counted["stores"] == server["stores"], (operation, state, found)
    read = found["server"]["read"]
    assert read["cold"]["loads"] == K * transactions
    assert read["hot"]["loads"] == 0
    assert found["server"]["update"]["cold"]["stores"] == K * transactions


def test_work_with_threads_is_refused_in_one_line():
    code, stdout, stderr = run_main("mix", str(ETC / "local.conf"), "--threads", "--work")
    assert (code, stdout) == (2, "")
    assert stderr.splitlines() == [
        "zodbshootout mix: error: --work counts in a worker process of its own, which "
        "--threads doesn't start; run it without --threads"
    ]
