"""--blobs: every object is a ZODB blob, written as a file and read back from one.

The read phases must really open each blob and read its bytes (counted by
wrapping Blob.open in this process, where thread workers run), the check
after each read must compare those bytes, and cold reads must empty the
client blob caches first.
"""

from __future__ import annotations

import io

import pytest
from ZODB.blob import Blob

from zodbshootout.config.loader import load_config
from zodbshootout.options.run import RunOptions
from zodbshootout.phases.classic import READ_PHASES
from zodbshootout.run.runner import Runner
from zodbshootout.workload import blobs

from conftest import ETC, run_cli
from support import configs

N = 12
C = 2


def run_blobs(data_dir: str, mode: str = "threads", sharing: str = "unique", **config):
    loaded = load_config(config.get("path", str(ETC / "blobs.conf")), data_dir)
    options = RunOptions(
        object_counts=(N,),
        concurrencies=(C,),
        repetitions=1,
        blobs=True,
        mode=mode,
        sharing=sharing,
        timeout_seconds=120,
    )
    return Runner(loaded, options).run()


@pytest.mark.zeo
def test_read_phases_open_every_blob_and_read_its_bytes(data_dir, monkeypatch):
    """Thread workers run here: every read phase opens N blobs per worker for reading."""
    opened_for_reading: list[int] = []
    original_open = Blob.open

    def counting_open(self, mode="r"):
        file = original_open(self, mode)
        if mode == "r":
            opened_for_reading.append(1)
        return file

    monkeypatch.setattr(Blob, "open", counting_open)
    result = run_blobs(data_dir)
    assert not result.failures, result.failures
    databases = result.databases
    measured = {(m.database, m.phase) for m in result.measurements}
    assert measured == {(db, phase) for db in databases for phase in result.phases}
    # Every read of every sample (warm-up included; hot and steamin read once
    # per loop; open reads nothing) opens each of the worker's N blobs once.
    reads = [m for m in result.measurements if m.phase in READ_PHASES and m.phase != "open"]
    assert {m.phase for m in reads} == set(READ_PHASES) - {"open"}
    assert len(opened_for_reading) == sum(m.timing.loops * N for m in reads)
    assert result.metadata["blobs"] is True


@pytest.mark.zeo
def test_a_blob_that_reads_back_wrong_bytes_fails_its_cells(data_dir, monkeypatch):
    """The check after a read compares the bytes the blob file gave back."""
    original_open = Blob.open

    def lying_open(self, mode="r"):
        file = original_open(self, mode)
        if mode != "r":
            return file
        file.close()
        return io.BytesIO(b"not what update wrote")

    monkeypatch.setattr(Blob, "open", lying_open)
    result = run_blobs(data_dir)
    assert {m.phase for m in result.measurements} == {"add", "update"}
    reasons = {f.database: f.reason for f in result.failures}
    assert set(reasons) == set(result.databases)
    assert all("wrong data" in reason for reason in reasons.values()), reasons


@pytest.mark.zeo
def test_cold_reads_empty_the_client_blob_caches(data_dir, monkeypatch):
    """ZEO's and RelStorage's blob caches lose every cached file before a cold read."""
    removed: dict[str, int] = {}
    original_clear = blobs.clear_blob_cache

    def recording_clear(storage):
        count = original_clear(storage)
        kind = type(storage).__module__.split(".")[0]
        removed[kind] = removed.get(kind, 0) + count
        return count

    monkeypatch.setattr(blobs, "clear_blob_cache", recording_clear)
    result = run_blobs(data_dir, sharing="shared")
    assert not result.failures, result.failures
    # Cold and prefetch each find (at least) the C × N blobs the phase
    # before cached, in both cached storages (zeo_fs_blobs, sqlite_blobs);
    # the shared blob directory is never emptied.
    assert removed["ZEO"] >= 2 * C * N
    assert removed["relstorage"] >= 2 * C * N


def test_blobs_in_processes_from_the_cli():
    done = run_cli(str(ETC / "blobs.conf"), "--blobs", "-n", "10", "-c", "2", "-r", "1", "-q")
    assert done.returncode == 0, done.stdout + done.stderr
    rows = done.stdout.splitlines()[1:8]
    assert len(rows) == 7
    for row in rows:
        assert all(int(cell) > 0 for cell in row.split(",")[1:]), row


def test_a_storage_without_blob_dir_fails_with_the_reason(write_config, data_dir):
    path = write_config(configs.filestorage("plain"))
    result = run_blobs(data_dir, path=path)
    assert not result.measurements
    (failure,) = result.failures
    assert "--blobs needs a storage with blob support" in failure.reason
    assert "give the storage section a blob-dir" in failure.reason
