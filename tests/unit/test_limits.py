"""Values a run could never finish with are refused at once, naming the limit.

Each case goes through cli.main as a user's command line would; none may
start anything, so each is refused in well under a second.
"""

from __future__ import annotations

import contextlib
import io
import time

import pytest

from zodbshootout import cli, options

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
    accepted = options.RunOptions(
        object_counts=(options.MAX_OBJECT_COUNT,),
        concurrencies=(options.MAX_CONCURRENCY,),
        repetitions=options.MAX_REPETITIONS,
        min_objects=options.MAX_MIN_OBJECTS,
        timeout_seconds=options.MAX_TIMEOUT_SECONDS,
    )
    assert accepted.problems() == []
