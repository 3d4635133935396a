"""The extra benchmarks in real worker processes on the embedded storages."""

from __future__ import annotations

import re

from zodbshootout.phases.benchmarks import BENCHMARKS
from zodbshootout.phases.classic import PHASES
from zodbshootout.render.labels import phase_label

from conftest import ETC, run_cli
from support import configs

ROW = re.compile(r'^"(?P<label>[^"]+)",\s+(?P<cells>.*)$')
CONFLICT_NOTE = re.compile(
    r"^Note: (?P<phase>\w+): (?P<database>\w+) \(n=\d+, c=\d+\): (?P<count>\d+) conflicts?"
)


def rows_of(stdout: str) -> dict[str, list[str]]:
    rows = {}
    for line in stdout.splitlines():
        match = ROW.match(line)
        if match and match["label"] != "Transaction":
            rows[match["label"]] = [c.strip() for c in match["cells"].split(",")]
    return rows


def conflict_counts(stdout: str) -> dict[tuple[str, str], int]:
    return {
        (m["phase"], m["database"]): int(m["count"])
        for m in map(CONFLICT_NOTE.match, stdout.splitlines())
        if m
    }


def test_every_benchmark_yields_a_positive_rate_on_each_embedded_storage():
    done = run_cli(str(ETC / "local.conf"), "-n", "20", "-c", "2", "-r", "1", "-q", *BENCHMARKS)
    assert done.returncode == 0, done.stderr + done.stdout
    rows = rows_of(done.stdout)
    assert list(rows) == [phase_label(phase, 20) for phase in BENCHMARKS]
    for label, cells in rows.items():
        assert len(cells) == 3, label
        assert all(cell.isdigit() and int(cell) > 0 for cell in cells), (label, cells)
    # Each conflict-counting benchmark reports its count for every database.
    assert set(conflict_counts(done.stdout)) == {
        (phase, database)
        for phase in ("conflicts", "readcurrent_conflicts")
        for database in ("zeo_fs", "sqlite", "zeo_pcache")
    }


def test_two_workers_updating_one_shared_map_conflict_on_sqlite_and_zeo(write_config):
    config = write_config(configs.embedded_zeo("zeo") + configs.sqlite("sqlite"))
    done = run_cli(config, "-n", "100", "-c", "2", "-r", "2", "-q", "conflicts")
    assert done.returncode == 0, done.stderr + done.stdout
    counts = conflict_counts(done.stdout)
    assert counts[("conflicts", "zeo")] > 0, done.stdout
    assert counts[("conflicts", "sqlite")] > 0, done.stdout
    rates = rows_of(done.stdout)["Update 100 Shared Objects"]
    assert all(int(rate) > 0 for rate in rates)


def test_all_selects_the_classic_phases_and_every_benchmark(write_config):
    config = write_config(configs.sqlite("sqlite"))
    done = run_cli(config, "-n", "10", "-c", "1", "-r", "1", "-q", "all")
    assert done.returncode == 0, done.stderr + done.stdout
    assert len(rows_of(done.stdout)) == len(PHASES) + len(BENCHMARKS)
