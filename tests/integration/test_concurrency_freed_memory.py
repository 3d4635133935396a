"""The coordinator hands freed pages back after a load (concurrency.processes.return_freed_memory).

In a process of its own (the unit tests start none): many small blocks
allocated, one in a hundred kept so that malloc can't give the rest back
by shrinking its heap, the others freed; its resident memory, read from
/proc, must fall once the function has run.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import sys
from zodbshootout.concurrency.processes import return_freed_memory

def rss_kb():
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

blocks = [bytearray(1000) for _ in range(100_000)]  # about 100 MB, outside pymalloc
kept = blocks[::100]
del blocks
before = rss_kb()
return_freed_memory()
print(before, rss_kb())
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_freed_pages_go_back_to_the_system():
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=True, timeout=60
    )
    before, after = (int(word) for word in done.stdout.split())
    # Most of the 100 MB freed was still resident before; it no longer is.
    assert before - after > 40_000, (before, after)
