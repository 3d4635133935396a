"""Values a run could never finish with are refused at once, naming the limit.

Each case goes through cli.main as a user's command line would; none may
start anything, so each is refused in well under a second.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import time

import pytest

from zodbshootout.cli import entry as cli
from zodbshootout.config.hosts import LOCALHOST, HostSpec
from zodbshootout.options import run as options

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
        (["-n", HUGE], f"at most {options.MAX_OBJECT_COUNT:,} objects per worker"),
        (["-n", f"100,{options.MAX_OBJECT_COUNT + 1}"], "at most"),
        (["-c", HUGE], f"at most {options.MAX_CONCURRENCY} workers"),
        (["-c", "1000"], f"at most {options.MAX_CONCURRENCY} workers"),
        (["-r", HUGE], f"at most {options.MAX_REPETITIONS} repetitions"),
        (["--min-objects", HUGE], f"at most {options.MAX_MIN_OBJECTS:,}"),
        (["-s", HUGE], f"at most {options.MAX_OBJECT_SIZE_BYTES:,} bytes"),
        (["-n", "1000000", "-s", "100000"], "objects per worker times the object size"),
        (["--timeout", "1e300"], f"at most {options.MAX_TIMEOUT_SECONDS:,.0f} seconds"),
        (["--timeout", "inf"], "at most"),
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
        options.RunOptions(object_counts=(options.MAX_OBJECT_COUNT,), concurrencies=(1,)),
        options.RunOptions(concurrencies=(options.MAX_CONCURRENCY,)),
        options.RunOptions(
            repetitions=options.MAX_REPETITIONS,
            min_objects=options.MAX_MIN_OBJECTS,
            timeout_seconds=options.MAX_TIMEOUT_SECONDS,
        ),
        options.RunOptions(object_counts=(10,), index_entries=options.MAX_INDEX_ENTRIES),
    ):
        assert accepted.problems() == []


MACHINE_BYTES = 24 << 30


@pytest.fixture
def machine_of_24_gib(monkeypatch):
    monkeypatch.setattr(options, "physical_memory_bytes", lambda: MACHINE_BYTES)


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--index-entries", "1000000"], "--index-entries takes at most 1,000 entries per object"),
        (["--index-entries", str(10**9)], "--index-entries takes at most 1,000 entries per object"),
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
    assert one == 2 * (options.WORKER_BASE_BYTES + 1000 * (200 + options.OBJECT_OVERHEAD_BYTES))
    more = dataclasses.replace(base, index_entries=3)
    assert estimate(more) - one == 2 * 1000 * 3 * options.INDEX_ENTRY_BYTES
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
