"""``zodbshootout mix``: real workers on the embedded databases, their tables and files."""

from __future__ import annotations

import csv
import io
import json

import pytest

from zodbshootout.results import file as resultfile

from conftest import run_cli
from support import configs

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

pytestmark = [pytest.mark.slow, pytest.mark.zeo]

#: Short runs: the tests check behaviour, not speed.
SHORT = ("--duration", "1.5", "--warmup", "0.3", "--seed", "5")


def _records(path):
    """The typed record of each database of the saved mix run at *path*."""
    from zodbshootout.results.mix import MixRun

    return {record.database: record for record in MixRun.of(resultfile.load(str(path))).records}


def test_a_saved_mix_run_is_shown_and_plotted_again(tmp_path):
    # etc/local.conf itself runs as docs/mix.rst shows it (test_doc_commands).
    out = tmp_path / "mix.json"
    config = str(_sqlite_only(tmp_path))
    env = {"ZODBSHOOTOUT_DATA": str(tmp_path / "data")}
    done = run_cli("mix", config, "-n", "300", *SHORT, "-o", str(out), env=env)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "sqlite: ycsb-b, 2 workers" in done.stdout
    header = next(line for line in done.stdout.splitlines() if "operation" in line)
    for column in ("tx/s", "p50 ms", "p99 ms", "p99.9 ms", "max ms", "conflicts", "failures"):
        assert column in header
    assert "  read " in done.stdout
    # Live progress: one line per second on stderr.
    assert "sqlite:     1 s:" in done.stderr
    (record,) = _records(out).values()
    assert record.operations["read"].count > 0
    assert len(record.intervals) >= 1
    assert json.loads(out.read_text())["version"] == resultfile.FORMAT_VERSION
    shown = run_cli("show", str(out))
    assert shown.returncode == 0, f"{shown.stdout}\n{shown.stderr}"
    assert shown.stdout == done.stdout
    chart = tmp_path / "mix.png"
    plotted = run_cli("plot", str(out), "-o", str(chart))
    assert plotted.returncode == 0, f"{plotted.stdout}\n{plotted.stderr}"
    assert chart.read_bytes()[:4] == b"\x89PNG"


def test_a_mix_run_prints_csv_and_show_and_compare_take_formats_too(tmp_path):
    out = tmp_path / "mix.json"
    env = {"ZODBSHOOTOUT_DATA": str(tmp_path / "data")}
    config = str(_sqlite_only(tmp_path))
    quick = ("-n", "200", "-d", "1", "--warmup", "0", "--seed", "5")
    done = run_cli("mix", config, *quick, "--format", "csv", "-o", str(out), env=env)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    rows = list(csv.DictReader(io.StringIO(done.stdout.split("\n\n")[0])))
    read = next(row for row in rows if row["operation"] == "read")
    assert read["database"] == "sqlite"
    assert float(read["tx_per_second"]) > 0
    assert float(read["p99_ms"]) >= float(read["p50_ms"]) > 0
    # show prints what the run printed; --format another.
    assert run_cli("show", str(out)).stdout == done.stdout
    shown = json.loads(run_cli("show", str(out), "--format", "json").stdout)
    assert shown["databases"][0]["operations"][0]["p99_ms"] == pytest.approx(
        float(rows[0]["p99_ms"])
    )
    compared = run_cli("compare", str(out), str(out), "--format", "markdown")
    assert compared.returncode == 0, f"{compared.stdout}\n{compared.stderr}"
    assert compared.stdout.startswith("| Database | Operation | Metric |")


def _conflict_config(tmp_path):
    path = tmp_path / "conflicts.conf"
    path.write_text(
        "%import zodbshootout\n%import relstorage\n"
        + configs.sqlite("sqlite")
        + configs.embedded_zeo("zeo")
    )
    return path


def test_conflicts_are_counted_by_class_and_the_table_says_what_the_database_holds(tmp_path):
    data = tmp_path / "data"
    out = tmp_path / "conflicts.json"
    done = run_cli(
        "mix", str(_conflict_config(tmp_path)), "-w", "conflicts", "-c", "4", "-n", "200",
        *SHORT, "-o", str(out), env={"ZODBSHOOTOUT_DATA": str(data)},
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "conflicts" in done.stdout
    assert "sqlite: reading every object's version back (untimed)" in done.stderr
    for name, record in _records(out).items():
        operations = record.operations
        conflicts = sum(sum(op.conflicts.values()) for op in operations.values())
        retries = sum(op.retries for op in operations.values())
        assert conflicts > 0, name
        assert retries > 0, name
        classes = {cls for op in operations.values() for cls in op.conflicts}
        assert classes, name
        assert any("Conflict" in cls or "Tid" in cls for cls in classes), classes
        versions, objects = _final_state(tmp_path / "conflicts.conf", data, name)
        # Every committed change (warm-up's too) raised one object's version, and
        # the check after the run found exactly what the database holds.
        assert objects >= 200
        assert versions == record.changes_found, name
        committed = record.increments + record.warmup_increments
        if name == "zeo":
            assert versions == committed  # nothing lost, nothing stray
            continue
        # RelStorage 4 on SQLite commits the changes of a transaction refused at
        # vote with the client's next commit (see test_relstorage_facts); such a
        # stale write may also overwrite newer committed versions.  Whatever the
        # database holds, the table must say it.
        stray = versions - committed - record.uncertain_increments
        if stray > 0:
            assert f"{stray} object changes in the database were made by transactions" in (
                done.stdout
            )
        if versions < committed:
            missing = committed - versions
            assert f"{missing} committed object changes are missing" in done.stdout


def _final_state(config_path, data, name):
    """(sum of the dataset's object versions, its object count), read after the run."""
    import ZODB
    from ZODB.FileStorage import FileStorage

    from zodbshootout.config.loader import load_config
    from zodbshootout.database.open import open_database

    if name == "zeo":  # its server is gone: read its file
        db = ZODB.DB(FileStorage(str(data / "zeo.fs"), read_only=True))
    else:
        config = load_config(str(config_path), str(data))
        db = open_database(config.source, name, [], client_label="check")
    try:
        conn = db.open()
        tree = conn.root()["zodbshootout"]["mix"]
        return sum(item.version for item in tree.values()), len(tree)
    finally:
        db.close()


def _sqlite_only(tmp_path):
    path = tmp_path / "sqlite.conf"
    # A small pickle cache: every scan loads from the storage, so a transaction
    # takes long enough for the schedule's own jitter not to matter.
    path.write_text(
        configs.sqlite("sqlite").replace("<zodb sqlite>", "<zodb sqlite>\n  cache-size 100")
    )
    return path


def _all_row(path):
    from zodbshootout.results.mix import MixRun
    from zodbshootout.results.mix_stats import total_summary

    (record,) = MixRun.of(resultfile.load(str(path))).records
    return record, total_summary(record)


def test_rate_latency_counts_from_the_intended_start(tmp_path):
    config = str(_sqlite_only(tmp_path))
    env = {"ZODBSHOOTOUT_DATA": str(tmp_path / "data")}
    work = ("--mix", "scan=1", "--scan-length", "300", "-n", "1000", "-c", "1", "-q")
    work += ("--warmup", "0.3")

    def run(name, seconds, *extra):
        out = tmp_path / f"{name}.json"
        done = run_cli("mix", config, *work, "-d", seconds, "-o", str(out), *extra, env=env)
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
        return _all_row(out)

    _closed, closed = run("closed", "1")
    capacity = closed.per_second
    # Three intervals: enough to see a queue grow.
    over_record, over = run("over", "3", "--rate", str(capacity * 5))
    _under_record, under = run("under", "1", "--rate", str(capacity / 10), "--arrival", "poisson")
    # Above capacity: every transaction waits behind the ones before it, so
    # latency from the intended start grows interval by interval and dwarfs
    # the service time, which stays that of a closed loop.
    p50s = [interval.p50_us for interval in over_record.intervals]
    assert p50s[-1] > 1.5 * p50s[0], p50s
    assert over.percentiles_ms[50.0] > 5 * over.service_ms[50.0]
    assert over.percentiles_ms[50.0] > 5 * closed.percentiles_ms[50.0]
    assert over_record.unstarted > 0
    # Well below capacity: nothing queues; what latency adds to the service
    # time is only the worker's lateness in waking (a busy machine's share),
    # a small fraction of the queue's wait above capacity.
    under_wait = under.percentiles_ms[50.0] - under.service_ms[50.0]
    over_wait = over.percentiles_ms[50.0] - over.service_ms[50.0]
    assert under_wait < over_wait / 10, (under_wait, over_wait)
    assert under.percentiles_ms[50.0] < over.percentiles_ms[50.0] / 5


def test_read_mostly_hit_rate_rises_with_the_client_cache_size(tmp_path):
    def zeo(name, size):
        section = configs.embedded_zeo(name).replace(
            "<embeddedzeo>", f"<embeddedzeo>\n    cache-size {size}"
        )
        # A tiny pickle cache, so that reads reach the ZEO client cache.
        return section.replace(f"<zodb {name}>", f"<zodb {name}>\n  cache-size 10")

    path = tmp_path / "caches.conf"
    path.write_text("%import zodbshootout\n" + zeo("small", "64KB") + zeo("large", "16MB"))
    out = tmp_path / "caches.json"
    done = run_cli(
        "mix", str(path), "-w", "ycsb-c", "-n", "2000", "-s", "1000", "-c", "1", *SHORT,
        "-o", str(out), env={"ZODBSHOOTOUT_DATA": str(tmp_path / "data")},
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    from zodbshootout.results.mix_stats import hit_rate

    records = _records(out)
    small, large = hit_rate(records["small"]), hit_rate(records["large"])
    assert small is not None
    assert large is not None
    assert large > small + 0.15, (small, large)
    assert "client cache hit rate" in done.stdout


def test_threads_share_one_db_so_a_filestorage_can_be_measured(tmp_path):
    path = tmp_path / "fs.conf"
    path.write_text(configs.filestorage("fs"))
    env = {"ZODBSHOOTOUT_DATA": str(tmp_path / "data")}
    done = run_cli("mix", str(path), "-n", "200", "-c", "2", *SHORT, env=env)
    assert done.returncode == 2
    assert "fs" in done.stderr
    threads = run_cli("mix", str(path), "-n", "200", "-c", "2", "--threads", *SHORT, env=env)
    assert threads.returncode == 0, f"{threads.stdout}\n{threads.stderr}"
    assert "fs: ycsb-b, 2 workers" in threads.stdout


def test_a_database_with_foreign_data_is_refused_untouched(tmp_path):
    import ZODB
    from ZODB.FileStorage import FileStorage

    data = tmp_path / "data"
    data.mkdir()
    db = ZODB.DB(FileStorage(str(data / "zeo.fs")))
    with db.transaction() as conn:
        conn.root()["precious"] = 42
    db.close()
    before = (data / "zeo.fs").read_bytes()
    path = tmp_path / "zeo.conf"
    path.write_text("%import zodbshootout\n" + configs.embedded_zeo("zeo"))
    done = run_cli("mix", str(path), "-n", "50", *SHORT, env={"ZODBSHOOTOUT_DATA": str(data)})
    assert done.returncode == 2
    assert "zeo: its root holds data zodbshootout did not write ('precious')" in done.stderr
    assert len(done.stderr.splitlines()) == 1, done.stderr  # said once
    assert "Traceback" not in done.stderr
    assert (data / "zeo.fs").read_bytes() == before


def test_the_shortest_interval_is_accepted_and_keeps_duration_over_interval_intervals(tmp_path):
    """Issue 35, 7: --interval 0.1 (the bound) runs; each saved interval is 0.1 s."""
    out = tmp_path / "mix.json"
    config = str(_sqlite_only(tmp_path))
    env = {"ZODBSHOOTOUT_DATA": str(tmp_path / "data")}
    argv = ("-n", "100", "-c", "1", "-d", "1", "--warmup", "0", "--interval", "0.1")
    done = run_cli("mix", config, *argv, "-o", str(out), env=env)
    assert done.returncode == 0, done.stderr
    (record,) = _records(out).values()
    assert record.interval_seconds == 0.1
    assert 9 <= len(record.intervals) <= 11
