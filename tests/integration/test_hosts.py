"""--hosts localhost: workers started through execnet on this machine, no root, no ssh.

The same stages as a plain run (fresh processes per stage, a barrier across
all workers), so the numbers must agree with a plain run's within noise;
the result records the host's environment, round trips and barrier skew.
A worker that dies fails its cells with one line naming its host, and
leaves no process behind.  ``zodbshootout mix --hosts`` runs its workers
through the same coordinator.
"""

from __future__ import annotations

import json
import os
import re
import signal

import pytest

from zodbshootout.results.file import from_document
from zodbshootout.results.record import CellKey
from zodbshootout.results.stats import cell_stats

from conftest import table_rows
from support import configs
from support.processes import (
    run_cli_in_session,
    session_processes,
    start_cli,
    wait_until_session_empty,
)

pytestmark = pytest.mark.slow

TWO_SQLITE = configs.sqlite("victim") + configs.sqlite("bystander")
N = "200"
PHASES = ("add", "cold", "steamin")


def _measured(cell: str) -> bool:
    """A rate, with or without a footnote (a small -n's barrier skew gets one)."""
    return re.match(r"^\d+(\[\d+\])?$", cell) is not None


def _rates(path) -> dict[str, float]:
    """The best repetition's rate per phase of the one database (n=N, c=2) in a saved result.

    The best, not the mean: a burst of load elsewhere slows some repetitions
    of one run and not the other's, while the fastest repetition of each is
    what the machine can do.
    """
    result = from_document(json.loads(path.read_text()))
    return {
        phase: max(cell_stats(result, CellKey("sqlite", 2, int(N), phase)).rates)
        for phase in PHASES
    }


def test_localhost_gives_the_numbers_of_a_plain_run(tmp_path):
    config = tmp_path / "one.conf"
    config.write_text(configs.sqlite("sqlite"))
    common = [str(config), "-n", N, "-c", "2", "-r", "2", "-q", *PHASES]
    plain, left = run_cli_in_session(*common, "-o", str(tmp_path / "plain.json"))
    assert plain.returncode == 0, f"{plain.stdout}\n{plain.stderr}"
    hosted, left_hosted = run_cli_in_session(
        *common, "--hosts", "localhost", "-v", "-o", str(tmp_path / "hosts.json")
    )
    assert hosted.returncode == 0, f"{hosted.stdout}\n{hosted.stderr}"
    assert left == left_hosted == []
    assert list(table_rows(hosted.stdout)) == list(table_rows(plain.stdout))
    plain_rates, hosted_rates = _rates(tmp_path / "plain.json"), _rates(tmp_path / "hosts.json")
    for phase in PHASES:
        ratio = hosted_rates[phase] / plain_rates[phase]
        # Same work, same machine: within the noise of a loaded 2-core machine.
        assert 1 / 3 < ratio < 3, (phase, ratio, plain_rates, hosted_rates)
    metadata = json.loads((tmp_path / "hosts.json").read_text())["metadata"]
    host = metadata["hosts"]["localhost"]
    assert host["environment"]["python"]["version"]
    assert host["environment"]["cpu_count"] >= 1
    assert host["latency_seconds"]["sqlite"] > 0
    skews = [s for s in metadata["barrier_skew"] if s["repetition"] > 0]
    assert {s["phase"] for s in skews} == set(PHASES)
    assert all(0 <= s["skew_seconds"] < 60 for s in skews)
    assert "host localhost → sqlite: round trip" in hosted.stderr


def test_a_dead_worker_fails_its_cells_naming_its_host(tmp_path):
    config = tmp_path / "two.conf"
    config.write_text(TWO_SQLITE)
    done, left = run_cli_in_session(
        str(config), "-n", "20", "-c", "2", "-r", "1", "-q", "--hosts", "localhost",
        env={"ZODBSHOOTOUT_FAULT": "victim:cold:1:kill"},
    )  # fmt: skip
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    assert left == []
    table = table_rows(done.stdout)
    assert _measured(table["Add 20 Objects"][0])
    assert not _measured(table["Read 20 Cold Objects"][0])
    assert all(_measured(cells[1]) for cells in table.values())
    footnotes = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert any("worker 1 on host localhost died (killed by SIGKILL)" in f for f in footnotes)


def test_an_unreachable_host_is_one_line_and_exit_code_2(tmp_path):
    config = tmp_path / "one.conf"
    config.write_text(configs.sqlite("sqlite"))
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(f"localhost 1 python={tmp_path / 'no-such-python'}\n")
    done, left = run_cli_in_session(str(config), "-n", "5", "-r", "1", "--hosts", str(hosts))
    assert done.returncode == 2, f"{done.stdout}\n{done.stderr}"
    assert left == []
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert errors, done.stderr
    assert "host localhost" in errors[0], done.stderr
    assert "Traceback" not in done.stderr


#: A short mix (as test_mix_cli's): the tests check behaviour, not speed.
MIX_SHORT = ("-n", "300", "--duration", "1.5", "--warmup", "0.3", "--seed", "5")


def test_a_mix_runs_its_workers_on_the_hosts(tmp_path):
    config = tmp_path / "one.conf"
    config.write_text(configs.sqlite("sqlite"))
    out = tmp_path / "mix.json"
    done, left = run_cli_in_session(
        "mix", str(config), *MIX_SHORT, "--hosts", "localhost", "-o", str(out),
        env={"ZODBSHOOTOUT_DATA": str(tmp_path / "data")},
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert left == []
    assert "sqlite: ycsb-b, 2 workers" in done.stdout
    assert "  read " in done.stdout
    assert "  workers on hosts: localhost 2" in done.stdout
    assert "missing from the database" not in done.stdout
    assert "sqlite:     1 s:" in done.stderr  # live progress, from the hosts' workers
    document = json.loads(out.read_text())
    (record,) = document["mix"]
    assert record["operations"]["read"]["count"] > 0
    assert len(record["intervals"]) >= 1
    assert record["changes_found"] == record["increments"] + record["warmup_increments"]
    metadata = document["metadata"]
    assert metadata["mix"]["hosts"] == {"localhost": 1}
    assert metadata["hosts"]["localhost"]["environment"]["python"]["version"]
    workers = metadata["mix_workers"]["sqlite"]
    assert sorted(workers) == ["0", "1"]
    assert {place["host"] for place in workers.values()} == {"localhost"}
    # Fresh interpreters, one per worker, none of them the command's own.
    pids = {place["pid"] for place in workers.values()}
    assert len(pids) == 2
    assert done.args[0] not in pids
    (skew,) = metadata["barrier_skew"]
    assert skew["phase"] == "mix"
    assert 0 <= skew["skew_seconds"] < 60
    shown, _left = run_cli_in_session("show", str(out))
    assert shown.stdout == done.stdout


@pytest.mark.parametrize(
    ("options", "says"),
    [
        (["--threads"], "--hosts starts worker processes; run it without --threads"),
        (["--hosts", "app1,app1"], "app1 is listed twice"),
        (["--hosts", "FILE"], "host localhost: could not start"),
    ],
    ids=["threads", "bad-list", "unreachable"],
)
def test_a_mix_on_hosts_it_cannot_use_is_one_line_and_exit_code_2(tmp_path, options, says):
    config = tmp_path / "one.conf"
    config.write_text(configs.sqlite("sqlite"))
    hosts = tmp_path / "hosts.txt"
    hosts.write_text(f"localhost 1 python={tmp_path / 'no-such-python'}\n")
    options = [str(hosts) if word == "FILE" else word for word in options]
    if "--hosts" not in options:
        options += ["--hosts", "localhost"]
    done, left = run_cli_in_session(
        "mix", str(config), *options, env={"ZODBSHOOTOUT_DATA": str(tmp_path / "data")}
    )
    assert done.returncode == 2, f"{done.stdout}\n{done.stderr}"
    assert left == []
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("zodbshootout mix: error: ")
    assert says in line


def test_a_dead_mix_worker_fails_its_database_naming_its_host(tmp_path):
    config = tmp_path / "two.conf"
    config.write_text(TWO_SQLITE)
    process = start_cli(
        "mix", str(config), "-n", "200", "--duration", "2", "--warmup", "0.2", "--seed", "5",
        "--interval", "0.5", "--hosts", "localhost",
        env={"ZODBSHOOTOUT_DATA": str(tmp_path / "data")},
    )  # fmt: skip
    try:
        for line in process.stderr:
            if line.startswith("zodbshootout mix: victim:   0.5 s:"):
                break  # the victim's workers are half a second into their measurement
        else:
            pytest.fail("the victim's mix never showed progress")
        gateways = [  # (the fork server that populates, and its resource tracker, aside)
            int(entry.split()[0])
            for entry in session_processes(process.pid)
            if int(entry.split()[0]) != process.pid and "multiprocessing" not in entry
        ]
        assert len(gateways) == 2, gateways
        os.kill(gateways[-1], signal.SIGKILL)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert wait_until_session_empty(process.pid) == []
    assert process.returncode == 1, stderr
    assert "bystander: ycsb-b, 2 workers" in stdout
    (failed,) = [line for line in stdout.splitlines() if line.startswith("victim:")]
    assert "on host localhost died (killed by SIGKILL)" in failed, stdout


def test_ctrl_c_stops_a_hosts_mix_quietly_and_leaves_nothing(tmp_path):
    config = tmp_path / "one.conf"
    config.write_text(configs.sqlite("sqlite"))
    process = start_cli(
        "mix", str(config), "-n", "200", "--duration", "30", "--warmup", "0.2",
        "--hosts", "localhost", env={"ZODBSHOOTOUT_DATA": str(tmp_path / "data")},
    )  # fmt: skip
    try:
        for line in process.stderr:
            if "sqlite:     1 s:" in line:
                break
        # As a terminal does: the whole process group, the localhost workers too.
        os.killpg(process.pid, signal.SIGINT)
        _stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert wait_until_session_empty(process.pid) == []
    assert process.returncode == 130, stderr
    # No traceback, and no worker's log of a load it interrupted (seen when a
    # worker took the SIGINT itself; now it leaves it to the coordinator).
    assert "KeyboardInterrupt" not in stderr
    assert "Traceback" not in stderr
