"""Series on a mix run's time axis, sampled from real servers and checked against them.

PostgreSQL's commit counter is read by the test itself while the run goes
on, on a connection of its own: every sample the run saved must lie between
the test's readings just before and just after it (the counter only grows).
"""

from __future__ import annotations

import re
import threading
import time

import pytest

from zodbshootout.results import file as resultfile

from conftest import ETC, postgresql_admin, run_cli
from support.local import free_port

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

pytestmark = [pytest.mark.slow]

DURATION = 2.0
INTERVAL = 0.2
RUN = ("-n", "300", "--duration", str(DURATION), "--warmup", "0.5", "--seed", "3")
RUN = (*RUN, "--interval", str(INTERVAL), "-c", "2")


def _record(path):
    from zodbshootout.results.mix import MixRun

    (record,) = MixRun.of(resultfile.load(str(path))).records
    return record


def _postgresql_config(tmp_path, dsn, extra=""):
    config = tmp_path / "pg.conf"
    config.write_text(
        f"""
%import relstorage
<zodb pg>
  <relstorage>
    keep-history false{extra}
    <postgresql>
      driver psycopg2
      dsn {dsn}
    </postgresql>
  </relstorage>
</zodb>
""",
        encoding="utf-8",
    )
    return config


class _CommitReader:
    """pg_stat_database's xact_commit of *database*, read every 50 ms with the wall clock
    before and after each reading, from the postgres database (not the measured one)."""

    def __init__(self, database):
        self.database = database
        self.readings = []  # (started, value, finished), epoch seconds
        self._stop = threading.Event()
        self._admin = postgresql_admin()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self):
        with self._admin.cursor() as cursor:
            while not self._stop.is_set():
                started = time.time()
                cursor.execute(
                    "SELECT xact_commit FROM pg_stat_database WHERE datname = %s",
                    (self.database,),
                )
                value = int(cursor.fetchone()[0])
                self.readings.append((started, value, time.time()))
                self._stop.wait(0.05)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)
        self._admin.close()


def test_a_postgresql_mix_run_saves_series_that_postgresql_confirms(tmp_path, postgresql_dsn):
    out = tmp_path / "pg.json"
    database = re.search(r"dbname=(\S+)", postgresql_dsn)[1]
    config = _postgresql_config(tmp_path, postgresql_dsn)
    with _CommitReader(database) as reader:
        done = run_cli("mix", str(config), *RUN, "-o", str(out))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    # The table names the series in one line; the file has them.
    assert "series sampled every 0.2 s: client of 2 workers" in done.stdout
    assert "postgresql (" in done.stdout
    record = _record(out)
    assert record.series_notes == ()
    least = DURATION / INTERVAL - 1
    for name in (
        "postgresql.commits",
        "postgresql.rollbacks",
        "postgresql.blocks_hit",
        "postgresql.connections",
        "postgresql.locks",
        "postgresql.object_state.live_rows",
        "client.0.pickle_cache_objects",
        "client.1.client_cache_hits",
        "client.1.rss",
    ):
        series = record.series[name]
        measured = [t for t in series.t if 0 <= t <= DURATION + INTERVAL]
        assert len(measured) >= least, (name, series.t)
        assert series.t == tuple(sorted(series.t))
    commits = record.series["postgresql.commits"]
    assert commits.delta() > 0
    assert list(commits.values) == sorted(commits.values)
    # Each sample lies between the test's own readings around it: the sampler
    # stamps a sample after its query returned, so a reading that ended
    # 50 ms before the stamp came first, and one started after it came after.
    origin = record.series_origin
    checked = 0
    for t, value in zip(commits.t, commits.values, strict=True):
        at = origin + t
        before = [v for _s, v, finished in reader.readings if finished < at - 0.05]
        after = [v for started, v, _f in reader.readings if started > at + 0.001]
        if before and after:
            assert max(before) <= value <= min(after), (t, max(before), value, min(after))
            checked += 1
    assert checked >= least
    # The whole series' growth, bounded by the test's readings around the run.
    first = min(v for s, v, _f in reader.readings)
    last = max(v for s, v, _f in reader.readings)
    assert 0 < commits.delta() <= last - first


def _local_conf_section(name):
    text = (ETC / "local.conf").read_text(encoding="utf-8")
    return re.search(rf"<zodb {name}>.*?</zodb>", text, re.DOTALL)[0]


def test_a_zeo_mix_run_saves_the_server_s_own_status(tmp_path):
    config = tmp_path / "zeo.conf"
    config.write_text(_local_conf_section("zeo_fs"), encoding="utf-8")
    out = tmp_path / "zeo.json"
    env = {"ZODBSHOOTOUT_DATA": str(tmp_path / "data")}
    done = run_cli("mix", str(config), *RUN, "-o", str(out), env=env)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "zeo (" in done.stdout
    record = _record(out)
    least = DURATION / INTERVAL - 1
    for name in ("zeo.commits", "zeo.loads", "zeo.connections", "client.0.client_cache_objects"):
        assert len(record.series[name].t) >= least, name
    # Two workers and the sampler's own client.
    assert max(record.series["zeo.connections"].values) == 3
    # The server's commits from just before the start to just after the end:
    # every measured update, and no more than all the run's object changes.
    updates = record.operations["update"].count
    commits = record.series["zeo.commits"].delta()
    assert updates <= commits <= record.increments + record.warmup_increments


def test_a_sampler_that_cannot_read_is_one_note_and_the_run_goes_on(tmp_path, postgresql_dsn):
    pytest.importorskip("pylibmc", reason="pylibmc is not installed")
    port = free_port()  # nothing listens there: memcached's sampler can't connect
    extra = (
        f"\n    cache-servers 127.0.0.1:{port}\n    cache-module-name relstorage.pylibmc_wrapper"
    )
    config = _postgresql_config(tmp_path, postgresql_dsn, extra)
    out = tmp_path / "mc.json"
    quick = ("-n", "100", "--duration", "1", "--warmup", "0.2", "--interval", "0.2")
    done = run_cli("mix", str(config), *quick, "-o", str(out))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    said = [line for line in done.stdout.splitlines() if "series not sampled" in line]
    assert len(said) == 1, done.stdout
    assert f"memcached 127.0.0.1:{port} series not sampled: ConnectionRefusedError" in said[0]
    assert "Traceback" not in done.stderr
    record = _record(out)
    assert len(record.series_notes) == 1
    # The database's own series are there all the same.
    assert record.series["postgresql.commits"].delta() > 0


def test_the_cost_benchmark_reads_what_the_run_recorded(tmp_path, postgresql_dsn):
    import subprocess
    import sys

    from conftest import ROOT

    config = _postgresql_config(tmp_path, postgresql_dsn)
    done = subprocess.run(
        [
            *(sys.executable, str(ROOT / "benchmarks" / "sampler_cost.py"), str(config), "pg"),
            *("--seconds", "1", "--intervals", "0.5,0.25"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rows = [line.split() for line in done.stdout.splitlines() if line.lstrip()[:1].isdigit()]
    assert [row[0] for row in rows] == ["0.5s", "0.25s"]
    for row in rows:
        assert int(row[1]) >= 2  # samples the thread took
        assert row[4].endswith("%")  # the thread's share of a core


def test_a_mariadb_mix_run_saves_its_global_status_within_the_test_s_readings(
    tmp_path, mysql_database
):
    import pymysql

    from conftest import MYSQL_HOST, MYSQL_PORT

    config = tmp_path / "my.conf"
    config.write_text(
        f"""
%import relstorage
<zodb my>
  <relstorage>
    keep-history false
    <mysql>
      driver PyMySQL
      host {MYSQL_HOST}
      port {MYSQL_PORT}
      user root
      db {mysql_database}
    </mysql>
  </relstorage>
</zodb>
""",
        encoding="utf-8",
    )

    def com_commit():
        admin = pymysql.connect(host=MYSQL_HOST, port=MYSQL_PORT, user="root", password="")
        try:
            with admin.cursor() as cursor:
                cursor.execute("SHOW GLOBAL STATUS LIKE 'Com_commit'")
                return int(cursor.fetchone()[1])
        finally:
            admin.close()

    out = tmp_path / "my.json"
    before = com_commit()
    done = run_cli(
        "mix", str(config), "-n", "200", "--duration", "1", "--warmup", "0.2", "--interval", "0.2",
        "-o", str(out),
    )  # fmt: skip
    after = com_commit()
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    record = _record(out)
    commits = record.series["mysql.commits"]
    # Server-wide counts: the run's commits and anyone else's, within the test's readings.
    assert before <= commits.values[0] <= commits.values[-1] <= after
    assert commits.delta() >= record.operations["update"].count
    assert len(record.series["innodb.history_list_length"].t) >= 1 / 0.2 - 1
