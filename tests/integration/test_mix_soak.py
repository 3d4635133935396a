"""Long mix runs (docs/soak.rst): checkpoints a SIGKILL leaves readable, the drift verdict,
--restart-clients.

The commands run in a session of their own (support.processes), so that a
process the tool left behind is found.
"""

from __future__ import annotations

import contextlib
import json
import os
import pathlib
import shlex
import shutil
import signal
import statistics
import subprocess
import tempfile
import time

import pytest

from conftest import run_cli
from support import configs
from support.processes import start_cli, wait_until_session_empty

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

pytestmark = [pytest.mark.slow]

CONFIG = "%import zodbshootout\n%import relstorage\n" + configs.sqlite("sqlite")


def _temporary(request) -> pathlib.Path:
    # Short: the fork server's socket lives there too (AF_UNIX paths are short).
    temporary = pathlib.Path(tempfile.mkdtemp(prefix="zs-"))
    request.addfinalizer(lambda: shutil.rmtree(temporary, ignore_errors=True))
    return temporary


def _show(path: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    return run_cli("show", str(path), *args, timeout=60)


def test_sigkill_of_the_coordinator_leaves_the_last_checkpoint_readable_and_partial(
    request, tmp_path
):
    config = tmp_path / "one.conf"
    config.write_text(CONFIG)
    result_file = tmp_path / "soak.json"
    cli = start_cli(
        "mix", str(config), "-n", "200", "-c", "2", "-d", "20", "--warmup", "0",
        "--checkpoint", "1", "--seed", "5", "-o", str(result_file),
        env={"TMPDIR": str(_temporary(request))},
    )  # fmt: skip
    assert cli.stderr is not None
    seen = []
    for line in cli.stderr:  # the measurement's fourth second closed
        seen.append(line)
        if "    4 s:" in line:
            break
    else:
        cli.kill()
        pytest.fail("the run ended before its fourth second: " + "".join(seen))
    time.sleep(1.2)  # a checkpoint after the fourth second's
    cli.send_signal(signal.SIGKILL)
    cli.communicate(timeout=60)
    # The workers and the fork server notice by themselves.
    assert wait_until_session_empty(cli.pid) == []

    saved = json.loads(result_file.read_text())
    assert saved["metadata"]["partial"]["database"] == "sqlite"
    (record,) = saved["mix"]
    assert record["partial"] is True
    assert len(record["intervals"]) >= 4
    assert record["seconds"] == len(record["intervals"]) * 1.0
    # The running total is the intervals' sum: nothing counted twice or lost.
    assert record["operations"]["all"]["count"] == sum(
        interval["transactions"] for interval in record["intervals"]
    )
    shown = _show(result_file)
    assert shown.returncode == 0, shown.stderr
    assert "partial: a checkpoint saved while the run went on" in shown.stdout
    as_json = json.loads(_show(result_file, "--format", "json").stdout)
    assert as_json["databases"][0]["partial"] is True
    pytest.importorskip("matplotlib")
    chart = tmp_path / "partial.png"
    drawn = run_cli("plot", str(result_file), "-o", str(chart), timeout=120)
    assert drawn.returncode == 0, drawn.stderr
    assert chart.read_bytes().startswith(b"\x89PNG")


def test_a_finished_run_replaces_its_checkpoints(request, tmp_path):
    config = tmp_path / "one.conf"
    config.write_text(CONFIG)
    result_file = tmp_path / "soak.json"
    cli = start_cli(
        "mix", str(config), "-n", "200", "-c", "2", "-d", "4", "--warmup", "0",
        "--checkpoint", "1", "--seed", "5", "-o", str(result_file),
        env={"TMPDIR": str(_temporary(request))},
    )  # fmt: skip
    _stdout, stderr = cli.communicate(timeout=120)
    assert cli.returncode == 0, stderr
    saved = json.loads(result_file.read_text())
    assert "partial" not in saved["metadata"]
    (record,) = saved["mix"]
    assert "partial" not in record
    assert set(record["operations"]) == {"read", "update"}
    assert record["drift"]["verdict"] == "too short"  # 4 intervals: no verdict


ROOT = pathlib.Path(__file__).parents[2]


def _page_commands() -> list[list[str]]:
    """The ``$ zodbshootout ...`` lines of docs/soak.rst that run on etc/, as words.

    The two real decays' (on ``pg.conf``, a private cluster, and on
    ``idle.conf`` with RelStorage's index cap raised) are shown as
    benchmarks/soak_decays.py printed them; test_mix_decays.py runs them.
    """
    text = (ROOT / "docs" / "soak.rst").read_text(encoding="utf-8")
    lines = [
        line.strip()[2:]
        for line in text.splitlines()
        if line.strip().startswith("$ zodbshootout ") and "pg.conf" not in line
    ]
    return [shlex.split(line) for line in lines]


def _run_page_command(request, tmp_path, words: list[str]):
    """One command of the page, in *tmp_path* (its files land there), etc/ from the checkout."""
    assert words[0] == "zodbshootout"
    args = [str(ROOT / word) if word.startswith("etc/") else word for word in words[1:]]
    cli = start_cli(*args, env={"TMPDIR": str(_temporary(request))}, cwd=tmp_path)
    stdout, stderr = cli.communicate(timeout=600)
    assert wait_until_session_empty(cli.pid) == []
    return cli.returncode, stdout, stderr


@pytest.mark.alone
@pytest.mark.zeo
def test_the_pages_steady_run_says_steady_and_names_no_cause(request, tmp_path):
    """No false alarm: ycsb-c on etc/local.conf has nothing that grows, at a steady load.

    Not beside the suite's other tests (marked alone): their processes come
    and go during the 20 s, and a p99 that rises as the machine gets busier
    is a decay the verdict rightly sees.
    """
    commands = _page_commands()
    assert len(commands) == 4  # the steady run, show, the restart, the warm-up curve
    code, stdout, stderr = _run_page_command(request, tmp_path, commands[0])
    assert code == 0, stderr
    saved = json.loads((tmp_path / "soak.json").read_text())
    assert len(saved["mix"]) == 3
    for record in saved["mix"]:
        found = record["drift"]
        assert found["verdict"] == "steady", (record["database"], found)
        assert found["moved_with"] == []
        assert found["throughput"]["intervals"] == len(record["intervals"])
    assert stdout.count("drift: steady over 20 s, no decay") == 3, stdout
    code, shown, stderr = _run_page_command(request, tmp_path, commands[1])
    assert code == 0, stderr
    assert shown.count("drift: steady over 20 s, no decay") == 3, shown


@pytest.mark.alone
@pytest.mark.zeo
def test_the_pages_restart_run_gives_a_verdict_with_its_evidence(request, tmp_path):
    code, stdout, stderr = _run_page_command(request, tmp_path, _page_commands()[2])
    assert code == 0, stderr
    saved = json.loads((tmp_path / "restart.json").read_text())
    for record in saved["mix"]:
        assert record["restart"]["verdict"] in ("no decay", "client", "server")
        assert record["restart"]["after_interval"] == 10
    # A line of its own per database (a drift line may say "before the restart: ").
    said = [line for line in stdout.splitlines() if line.strip().startswith("restart: ")]
    assert len(said) == 3, stdout


def test_restarting_the_clients_keeps_the_intervals_going_and_judges_the_windows(request, tmp_path):
    config = tmp_path / "one.conf"
    config.write_text(CONFIG)
    result_file = tmp_path / "restart.json"
    interval = 0.5  # twelve intervals in 6 s
    cli = start_cli(
        "mix", str(config), "--workload", "ycsb-d", "-n", "200", "-c", "2", "-d", "6",
        "--interval", str(interval), "--warmup", "0", "--restart-clients", "0.5", "--seed", "5",
        "-o", str(result_file),
        env={"TMPDIR": str(_temporary(request))},
    )  # fmt: skip
    stdout, stderr = cli.communicate(timeout=300)
    assert cli.returncode == 0, stderr
    assert "sqlite: restarting the workers" in stderr
    # The progress lines count on across the restart (twelve intervals of 0.5 s).
    assert "  6.0 s:" in stderr
    assert "  3.5 s:" in stderr
    (record,) = json.loads(result_file.read_text())["mix"]
    restart = record["restart"]
    assert restart["after_interval"] == 6
    assert restart["gap_seconds"] > 0  # new processes took some time to start
    assert len(record["intervals"]) == 12
    assert record["seconds"] == pytest.approx(6, abs=0.5)
    # The verdict compares 3 intervals each side (a quarter of 6, at least 3).
    assert restart["window_intervals"] == 3
    before = [i["transactions"] for i in record["intervals"][3:6]]
    after = [i["transactions"] for i in record["intervals"][7:10]]
    assert restart["before"]["per_second"] == pytest.approx(sum(before) / (3 * interval))
    assert restart["after"]["per_second"] == pytest.approx(sum(after) / (3 * interval))
    assert restart["verdict"] in ("no decay", "client", "server")
    assert "restart: " in stdout
    # The inserts of the new workers used fresh keys: the read-back found every change.
    assert record["changes_found"] == record["increments"] + record["warmup_increments"]


def test_ctrl_c_after_a_checkpoint_keeps_the_intervals_closed_so_far(request, tmp_path):
    config = tmp_path / "one.conf"
    config.write_text(CONFIG)
    result_file = tmp_path / "soak.json"
    cli = start_cli(
        "mix", str(config), "-n", "200", "-c", "2", "-d", "30", "--warmup", "0",
        "--checkpoint", "1", "--seed", "5", "-o", str(result_file),
        env={"TMPDIR": str(_temporary(request))},
    )  # fmt: skip
    assert cli.stderr is not None
    for line in cli.stderr:
        if "    3 s:" in line:
            break
    time.sleep(1.2)
    cli.send_signal(signal.SIGINT)
    stdout, stderr = cli.communicate(timeout=60)
    assert cli.returncode == 130, stderr
    assert wait_until_session_empty(cli.pid) == []
    saved = json.loads(result_file.read_text())
    assert saved["interrupted"] is True
    (record,) = saved["mix"]
    assert record["partial"] is True
    assert len(record["intervals"]) >= 3
    assert saved["metadata"]["partial"]["database"] == "sqlite"
    assert "partial: a checkpoint saved while the run went on" in stdout


@pytest.mark.alone
def test_until_steady_stops_a_steady_run_before_its_maximum(request, tmp_path):
    """ycsb-c on SQLite, nothing grows: steady well before the 60 s maximum.

    The drifting run that goes on to its maximum is test_mix_decays's.
    """
    config = tmp_path / "one.conf"
    config.write_text(CONFIG)
    result_file = tmp_path / "steady.json"
    cli = start_cli(
        "mix", str(config), "--workload", "ycsb-c", "-n", "200", "-c", "1", "-d", "60",
        "--warmup", "2", "--until-steady", "1%", "--min-duration", "16",
        "--seed", "5", "-o", str(result_file), env={"TMPDIR": str(_temporary(request))},
    )  # fmt: skip
    stdout, stderr = cli.communicate(timeout=300)
    assert cli.returncode == 0, stderr
    (record,) = json.loads(result_file.read_text())["mix"]
    steady = record["steady"]
    assert steady["max_seconds"] == 60
    assert steady["min_seconds"] == 16
    stopped = steady["stopped_at_seconds"]
    assert stopped is not None, steady
    assert 16 <= stopped < 60, steady
    assert abs(steady["slope_per_second"]) <= 0.01
    # The workers stopped at the next interval they closed: the measurement ends there.
    assert stopped <= record["seconds"] <= stopped + 2 + 1, (record["seconds"], stopped)
    assert len(record["intervals"]) <= record["seconds"] + 0.5
    assert f"sqlite: steady after {stopped:g} s" in stderr
    assert f"until-steady: steady after {stopped:g} s of at most 60 s" in stdout


def _burn() -> None:
    # A busier machine for the workers, on their one core.  With autogroup
    # scheduling a session shares the CPU with other sessions as one: the
    # burner's own, niced below 0 (root), weighs as much as a few busy users.
    os.setsid()
    with contextlib.suppress(OSError), open("/proc/self/autogroup", "w") as group:
        group.write("-5")
    os.nice(-5)
    while True:
        pass


@pytest.mark.alone
def test_a_steady_run_on_a_machine_that_gets_busier_is_no_database_decay(request, tmp_path):
    """No false alarm when the machine, not the database, slows down (issue 30).

    ycsb-c on SQLite, nothing grows, the run on one core of the machine; at
    8 s and at 16 s the test starts a CPU burner of its own on that core
    (killed by PID at the end; the other core is left to the machine's other
    users).  The throughput falls in steps, as a decay does, and the workers
    wait longer for a CPU per millisecond they run (/proc/thread-self/schedstat):
    the verdict says the machine got busier, not that the database decays.
    """
    import multiprocessing

    config = tmp_path / "one.conf"
    config.write_text(CONFIG)
    result_file = tmp_path / "busier.json"
    cores = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(cores)})  # inherited by the run and the burners
    try:
        cli = start_cli(
            "mix", str(config), "--workload", "ycsb-c", "-n", "200", "-c", "2", "-d", "24",
            "--warmup", "2", "--seed", "5", "-o", str(result_file),
            env={"TMPDIR": str(_temporary(request))},
        )  # fmt: skip
    finally:
        os.sched_setaffinity(0, cores)
    assert cli.stderr is not None
    burners: list[multiprocessing.Process] = []
    try:
        for line in cli.stderr:  # a burner at 8 s, another at 16 s: a staircase
            if "    8 s:" in line or "   16 s:" in line:
                burner = multiprocessing.get_context("fork").Process(target=_burn, daemon=True)
                burner.start()
                os.sched_setaffinity(burner.pid, {min(cores)})
                burners.append(burner)
                if len(burners) == 2:
                    break
        stdout, stderr = cli.communicate(timeout=300)
    finally:
        for burner in burners:
            if burner.pid is not None:
                os.kill(burner.pid, signal.SIGKILL)
            burner.join(10)
    assert cli.returncode == 0, stderr
    (record,) = json.loads(result_file.read_text())["mix"]
    # The burners were felt: the workers waited longer for a CPU in the second half.
    waits = [
        statistics.fmean(series["values"][len(series["values"]) // 2 :])
        / max(1e-9, statistics.fmean(series["values"][1 : len(series["values"]) // 2]))
        for name, series in record["series"].items()
        if name.endswith(".cpu_wait_ratio")
    ]
    assert len(waits) == 2
    assert all(wait > 1.2 for wait in waits), waits
    assert "machine.load_1min" in record["series"]
    found = record["drift"]
    assert found["steps"]["throughput"]["change_ci95"][1] <= -0.10, found  # a decay by its thirds
    assert found["verdict"] == "busier machine", found
    assert found["machine"]["series"] == "cpu_wait_ratio"
    assert found["machine"]["r"] <= -0.5
    assert "drift: the machine got busier, not the database" in stdout


def _warmup_config(dsn: str) -> str:
    """ZEO and RelStorage, each cold and with a persistent client cache.

    RelStorage on SQLite ignores ``cache-local-dir`` (its log: "Ignoring
    cache-local-dir setting": a local database needs no persistent cache),
    so RelStorage's pair runs on PostgreSQL, one database for both.
    """
    relstorage = """
<zodb {name}>
  <relstorage>{extra}
    <postgresql>
      dsn {dsn}
    </postgresql>
  </relstorage>
</zodb>
"""
    return (
        "%import zodbshootout\n%import relstorage\n"
        + configs.embedded_zeo("zeo_cold")
        + configs.embedded_zeo("zeo_pcache", client="pcache")
        + relstorage.format(name="pg_cold", extra="", dsn=dsn)
        + relstorage.format(
            name="pg_pcache",
            extra="\n    cache-local-dir $(ZODBSHOOTOUT_DATA)/pg-cache",
            dsn=dsn,
        )
    )


@pytest.mark.alone
@pytest.mark.zeo
@pytest.mark.postgresql
def test_the_warmup_curve_shows_a_persistent_cache_at_the_first_second(
    request, tmp_path, postgresql_dsn
):
    """relstorage#513's question: what does a persistent client cache buy at start-up?

    The first processes fill the caches; the new ones after --restart-clients
    start cold (zeo_cold, pg_cold) or with the cache their predecessors left
    on disk (ZEO's ``client``, RelStorage's ``cache-local-dir``).
    """
    config = tmp_path / "warm.conf"
    config.write_text(_warmup_config(postgresql_dsn))
    (tmp_path / "data" / "pg-cache").mkdir(parents=True)
    result_file = tmp_path / "warm.json"
    cli = start_cli(
        "mix", str(config), "--workload", "ycsb-c", "-n", "500", "-c", "1", "-d", "8",
        "--warmup", "0", "--restart-clients", "4", "--seed", "5", "-o", str(result_file),
        env={"TMPDIR": str(_temporary(request)), "ZODBSHOOTOUT_DATA": str(tmp_path / "data")},
    )  # fmt: skip
    stdout, stderr = cli.communicate(timeout=300)
    assert cli.returncode == 0, stderr
    records = {r["database"]: r for r in json.loads(result_file.read_text())["mix"]}
    first_second = {}
    for name, record in records.items():
        curves = {curve["stage"]: curve for curve in record["warmup"]}
        assert set(curves) == {0, 1}, name  # --warmup 0: the run's start, and the restart's
        after = curves[1]
        assert after["open_seconds"] > 0
        assert 0 < after["first_transaction_seconds"] < 4
        point = after["points"][0]
        assert point["seconds"] == 1
        first_second[name] = point["hit_rate"]
        # Against the worker's own count at the end: the curve's first second
        # saw no more loads than the whole record.
        assert record["counters"]["loads"] >= 1
    assert first_second["zeo_pcache"] > first_second["zeo_cold"], first_second
    assert first_second["pg_pcache"] > first_second["pg_cold"], first_second
    assert "warm-up from the restart (new processes), side by side" in stdout
