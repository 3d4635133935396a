"""What -v tells about each database: measured before the run, kept in the result."""

import importlib.metadata

from zodbshootout.config.loader import load_config
from zodbshootout.options.run import RunOptions
from zodbshootout.run.runner import Runner

from conftest import ETC, run_cli, without_busy_warning


def test_runner_records_database_facts(data_dir):
    config = load_config(str(ETC / "local.conf"), data_dir)
    options = RunOptions(object_counts=(10,), concurrencies=(1,), repetitions=1, phases=("add",))
    result = Runner(config, options).run()
    described = result.metadata["databases"]
    assert set(described) == {"zeo_fs", "sqlite", "zeo_pcache"}
    sqlite = described["sqlite"]
    assert sqlite["database"] == "sqlite"
    assert sqlite["driver"] == "sqlite3"
    assert sqlite["server_version"].startswith("SQLite 3.")
    assert sqlite["history"] == "preserving"
    assert described["zeo_fs"]["persistent_cache"] is False
    assert described["zeo_pcache"]["persistent_cache"] is True
    # A loopback round trip to a real ZEO server takes real, positive time,
    # and much longer than a call into SQLite in the same process.
    assert described["zeo_fs"]["latency_seconds"] > sqlite["latency_seconds"] > 0


def test_verbose_prints_one_line_per_database_on_stderr():
    done = run_cli(str(ETC / "local.conf"), "-n", "10", "-c", "1", "-r", "1", "-q", "-v", "add")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    lines = without_busy_warning(done.stderr).splitlines()
    assert [line.split(":")[0] for line in lines] == ["zeo_fs", "sqlite", "zeo_pcache"]
    assert "latency" in lines[0]
    # ZEO's version (the client's; the server sends only its protocol) and RelStorage's.
    assert f"ZEO {importlib.metadata.version('ZEO')} (protocol Z" in lines[0]
    assert f"RelStorage {importlib.metadata.version('RelStorage')}" in lines[1]
    assert "persistent client cache" in lines[2]
    assert "latency" not in done.stdout
