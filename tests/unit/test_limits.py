"""Values a run could never finish with are refused at once, naming the limit.

Each case goes through cli.main as a user's command line would; none may
start anything, so each is refused in well under a second.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import time

import pytest

from zodbshootout.cli import entry as cli
from zodbshootout.config.hosts import LOCALHOST, HostSpec
from zodbshootout.options import run as options
from zodbshootout.workload import limits

IN_MEMORY = """
<zodb mem>
  <mappingstorage/>
</zodb>
"""

HUGE = str(10**20)


def run_main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(argv))
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["-n", HUGE], f"from 1 to {limits.MAX_OBJECT_COUNT:,}"),
        (["-n", f"100,{limits.MAX_OBJECT_COUNT + 1}"], "from 1 to 1,000,000"),
        (["-c", HUGE], f"from 1 to {limits.MAX_CONCURRENCY}"),
        (["-c", "1000"], f"from 1 to {limits.MAX_CONCURRENCY}"),
        (["-r", HUGE], f"from 1 to {limits.MAX_REPETITIONS:,}"),
        (["--min-objects", HUGE], f"from 0 to {limits.MAX_MIN_OBJECTS:,}"),
        (["-s", HUGE], f"to {limits.MAX_OBJECT_SIZE_BYTES:,}"),
        (["-n", "1000000", "-s", "100000"], "objects per worker times the object size"),
        (["--timeout", "1e300"], f"from 1 to {limits.MAX_TIMEOUT_SECONDS:,.0f}"),
        (["--timeout", "inf"], "from 1 to"),
    ],
)
def test_values_that_cannot_finish_or_fit_are_refused_at_once(write_config, argv, says):
    config = write_config(IN_MEMORY)
    started = time.monotonic()
    code, stdout, stderr = run_main(config, *argv, "--threads")
    assert time.monotonic() - started < 1.0
    assert code == cli.EXIT_USAGE, stderr
    assert stdout == ""
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith("zodbshootout: error: ")
    assert says in stderr


def test_the_limits_themselves_are_accepted():
    """Each limit on its own; together they would need more memory than any machine has."""
    for accepted in (
        options.RunOptions(object_counts=(limits.MAX_OBJECT_COUNT,), concurrencies=(1,)),
        options.RunOptions(concurrencies=(limits.MAX_CONCURRENCY,)),
        options.RunOptions(
            repetitions=limits.MAX_REPETITIONS,
            min_objects=limits.MAX_MIN_OBJECTS,
            timeout_seconds=limits.MAX_TIMEOUT_SECONDS,
        ),
        options.RunOptions(object_counts=(10,), index_entries=limits.MAX_INDEX_ENTRIES),
    ):
        assert accepted.problems() == []


MACHINE_BYTES = 24 << 30


@pytest.fixture
def machine_of_24_gib(monkeypatch):
    monkeypatch.setattr(options, "physical_memory_bytes", lambda: MACHINE_BYTES)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--index-entries", "1000000"], "--index-entries: '1000000' is not a whole number from 0"),
        (["--index-entries", str(10**9)], "is not a whole number from 0 to 1,000"),
        (["-n", "100000", "--index-entries", "1000"], "-n × K) may be at most 10,000,000"),
        (
            ["-n", "1000000", "-s", "1000", "-c", "256"],
            "the run would need at least 535 GiB of memory (-c workers, each holding -n "
            "objects of -s bytes twice), more than this machine's 24 GiB: lower -c, -n or -s",
        ),
        (["-n", "1000000", "-c", "1,64"], "of memory"),
    ],
)
def test_a_run_the_machine_cannot_hold_is_refused(write_config, machine_of_24_gib, argv, says):
    config = write_config(IN_MEMORY)
    started = time.monotonic()
    code, stdout, stderr = run_main(config, *argv, "--threads")
    assert time.monotonic() - started < 1.0
    assert (code, stdout) == (cli.EXIT_USAGE, ""), stderr
    assert stderr.count("\n") == 1, stderr
    assert says in stderr


def test_the_memory_estimate_grows_with_workers_objects_size_and_entries():
    base = options.RunOptions(object_counts=(1000,), concurrencies=(2,), object_size_bytes=100)
    estimate = options.estimated_memory_bytes
    one = estimate(base)
    assert one == 2 * (limits.WORKER_BASE_BYTES + 1000 * (200 + limits.OBJECT_OVERHEAD_BYTES))
    more = dataclasses.replace(base, index_entries=3)
    assert estimate(more) - one == 2 * 1000 * 3 * limits.INDEX_ENTRY_BYTES
    assert estimate(dataclasses.replace(base, concurrencies=(1, 4))) == 2 * one


def test_workers_on_other_hosts_are_not_counted_against_this_machine(monkeypatch):
    monkeypatch.setattr(options, "physical_memory_bytes", lambda: None)  # to build them
    huge = options.RunOptions(
        object_counts=(1_000_000,), concurrencies=(256,), object_size_bytes=1000
    )
    assert options._memory_problems(huge, MACHINE_BYTES)
    remote = dataclasses.replace(huge, hosts=(HostSpec("db-client-1"), HostSpec("db-client-2")))
    assert options._memory_problems(remote, MACHINE_BYTES) == []
    mixed = dataclasses.replace(huge, hosts=(HostSpec(LOCALHOST), HostSpec("db-client-1", 3)))
    assert options._memory_problems(mixed, MACHINE_BYTES)
    assert options._memory_problems(mixed, 8 * MACHINE_BYTES) == []


# --- mix shares the limits (workload.limits.footprint_problems) ---------------------------


def run_mix(config: str, *argv: str) -> tuple[int, str, str]:
    return run_main("mix", config, "--threads", "-d", "0.2", "--warmup", "0", *argv)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["-c", "300"], f"is not a whole number from 1 to {limits.MAX_CONCURRENCY}"),
        (
            ["-s", "100000000", "-n", "100"],
            f"may be at most {limits.MAX_TRANSACTION_BYTES:,} bytes",
        ),
        (["-s", str(limits.MAX_OBJECT_SIZE_BYTES + 1)], "is not a whole number of bytes"),
        (["-n", str(limits.MAX_MIN_OBJECTS + 1)], f"from 1 to {limits.MAX_MIN_OBJECTS:,}"),
        (["-k", str(limits.MAX_OBJECT_COUNT + 1)], "from 1 to 1,000,000"),
        (["-w", "ycsb-e", "--scan-length", "100000", "-s", "100000"], "may be at most"),
        (["-n", "100000", "-s", "100000", "-c", "256"], "of memory"),
    ],
)
def test_mix_refuses_what_the_classic_run_refuses(write_config, machine_of_24_gib, argv, says):
    started = time.monotonic()
    code, stdout, stderr = run_mix(write_config(IN_MEMORY), *argv)
    assert time.monotonic() - started < 5.0  # nothing was started
    assert (code, stdout) == (cli.EXIT_USAGE, ""), stderr
    assert stderr.count("\n") == 1, stderr
    assert stderr.startswith("zodbshootout mix: error: ")
    assert says in stderr


def test_a_scan_counts_only_when_the_workload_scans(write_config, machine_of_24_gib):
    """L objects of 100 kB are 5 GB a transaction in ycsb-e, nothing in ycsb-b."""
    from zodbshootout.cli.commands import mix
    from zodbshootout.mix.workloads import BUILTIN

    args = argparse.Namespace(
        concurrency=2, objects_per_transaction=5, scan_length=50_000, objects=10,
        object_size=100_000,
    )  # fmt: skip
    reads = mix.mix_footprint(args, BUILTIN["ycsb-b"], ())
    scans = mix.mix_footprint(args, BUILTIN["ycsb-e"], ())
    assert (reads.transaction_objects, scans.transaction_objects) == (5, 50_000)
    assert limits.footprint_problems(reads, MACHINE_BYTES) == []
    assert limits.footprint_problems(scans, MACHINE_BYTES)


def test_the_same_footprint_is_judged_alike_in_both_modes():
    """One judge: the classic run's footprint is what footprint_problems sees."""
    run = options.RunOptions(object_counts=(1000,), concurrencies=(4,), object_size_bytes=500)
    footprint = options.footprint(run)
    assert (footprint.workers, footprint.transaction_objects) == (4, 1000)
    assert options.estimated_memory_bytes(run) == limits.estimated_memory_bytes(footprint)


def test_large_objects_are_written_in_smaller_commits():
    assert limits.objects_per_commit(128, 10_000) == 10_000
    assert limits.objects_per_commit(100_000_000, 10_000) == 1
    assert limits.objects_per_commit(1_000_000, 10_000) * 1_000_000 <= limits.MAX_BATCH_BYTES
